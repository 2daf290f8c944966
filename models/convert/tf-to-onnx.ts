// Converts a TF.js graph (NHWC) into an ONNX graph (NCHW) that OpenCV 4.6's importer loads.
//
// Every 4-D activation is kept in NCHW; values whose meaning depends on layout (Reshape,
// non-4-D ops, graph outputs) get an explicit Transpose back to TF's NHWC order. Constant
// sub-graphs are folded with the fixed input size, so the ONNX graph has static shapes only (open-input-size.ts
// can then open a YOLO graph's input size for onnxruntime). Each op's conversion: tf-ops.ts.
import { evalConst, shapeTensor } from './const-eval.js';
import { OnnxGraphBuilder, type OnnxTarget } from './onnx-graph-builder.js';
import { encodeOnnxModel, OnnxDataType, type OnnxModel } from './onnx-writer.js';
import type { Tensor, TfGraph, TfNode } from './tfjs-graph.js';
import type { OpContext } from './tf-op-context.js';
import { convertOp } from './tf-ops.js';
import { NHWC_TO_NCHW, shapeOf, type Value } from './tf-values.js';

export type { OnnxTarget } from './onnx-graph-builder.js';

export interface ConvertInput {
  /** TF node whose output becomes the ONNX graph input (a Placeholder, or a node cut off above). */
  node: string;
  /** ONNX input name. */
  name: string;
  /** TF (NHWC) shape, fixed. */
  shape: number[];
}

export interface ConvertOutput {
  /** TF node to cut at. */
  node: string;
  /** ONNX output name (also the name of the OpenCV layer that produces it). */
  name: string;
}

export interface ConvertOptions {
  input: ConvertInput;
  outputs: ConvertOutput[];
  target: OnnxTarget;
  graphName: string;
}

export interface ConvertedModel {
  bytes: Uint8Array;
  /** ONNX (NCHW) input shape. */
  inputShape: number[];
  outputs: { name: string; shape: number[] }[];
  /** The graph that `bytes` encodes (the quantizer starts from it). */
  model: OnnxModel;
  /** Each Resize node's input height and width at this input size (what openInputSize turns into scales). */
  resizeInputs: Map<string, [number, number]>;
}

class Converter {
  private values = new Map<string, Value>();
  private ctx: OpContext;

  constructor(
    private graph: TfGraph,
    private options: ConvertOptions,
  ) {
    this.ctx = { b: new OnnxGraphBuilder(options.target), graph, input: options.input, resizeInputs: new Map() };
  }

  run(): ConvertedModel {
    const { input } = this.options;
    if (input.shape.length !== 4) throw new Error('only 4-D image inputs are supported');
    const onnxInputShape = NHWC_TO_NCHW.map((p) => input.shape[p]);
    this.ctx.b.unique(input.name);
    this.values.set(input.node, { kind: 'dyn', name: input.name, shape: input.shape, dtype: 'float32', nchw: true });
    const outputInfo = this.markOutputs();
    const model: OnnxModel = {
      producer: 'edgecv tfjs-to-onnx',
      opset: 11,
      graphName: this.options.graphName,
      nodes: this.ctx.b.nodes,
      initializers: this.ctx.b.initializers,
      inputs: [{ name: input.name, dataType: OnnxDataType.FLOAT, shape: onnxInputShape }],
      outputs: outputInfo.map((o) => ({ name: o.name, dataType: OnnxDataType.FLOAT, shape: o.shape })),
    };
    return { bytes: encodeOnnxModel(model), inputShape: onnxInputShape, outputs: outputInfo, model, resizeInputs: this.ctx.resizeInputs };
  }

  /** Converts each output's node and gives the tensor it produces the output's name; their names and shapes. */
  private markOutputs(): { name: string; shape: number[] }[] {
    const b = this.ctx.b;
    const outputInfo: { name: string; shape: number[] }[] = [];
    const renames = new Map<string, string>();
    for (const out of this.options.outputs) {
      const v = this.value(out.node);
      if (v.kind === 'const') throw new Error(`output ${out.node} is constant`);
      const produced = b.tfLayout(v, out.node);
      if (renames.has(produced) || produced === this.options.input.name) {
        // Already an output (or the input): give this one its own node.
        b.node('Identity', [produced], out.name);
      } else {
        renames.set(produced, out.name);
      }
      outputInfo.push({ name: out.name, shape: v.shape });
    }
    for (const n of b.nodes) {
      n.inputs = n.inputs.map((i) => renames.get(i) ?? i);
      n.outputs = n.outputs.map((o) => renames.get(o) ?? o);
      n.name = n.outputs[0];
    }
    return outputInfo;
  }

  /** Converts (once) the node producing `name` and everything it depends on. Iterative: graphs are deep. */
  private value(name: string): Value {
    const stack = [name];
    while (stack.length) {
      const top = stack[stack.length - 1];
      if (this.values.has(top)) {
        stack.pop();
        continue;
      }
      const node = this.graph.nodes.get(top);
      if (!node) throw new Error(`unknown node ${top}`);
      const missing = node.inputs.filter((i) => !this.values.has(i));
      if (missing.length) {
        stack.push(...missing);
        continue;
      }
      stack.pop();
      this.values.set(top, this.convertNode(node));
    }
    const v = this.values.get(name);
    if (!v) throw new Error(`no value for ${name}`);
    return v;
  }

  private convertNode(node: TfNode): Value {
    if (node.op === 'Const') {
      const t = this.graph.weights.get(node.name);
      if (!t) throw new Error(`constant ${node.name} has no weights`);
      return { kind: 'const', tensor: t };
    }
    if (node.op === 'Placeholder') throw new Error(`placeholder ${node.name} is not the configured input`);
    const inputs = node.inputs.map((i) => this.values.get(i) as Value);
    if (node.op === 'Shape') {
      return { kind: 'const', tensor: shapeTensor(shapeOf(inputs[0])) };
    }
    if (inputs.every((v) => v.kind === 'const')) {
      const folded = evalConst(
        node,
        inputs.map((v) => (v as { tensor: Tensor }).tensor),
      );
      if (folded) return { kind: 'const', tensor: folded };
    }
    return convertOp(this.ctx, node, inputs);
  }
}

export function convertTfjsToOnnx(graph: TfGraph, options: ConvertOptions): ConvertedModel {
  return new Converter(graph, options).run();
}
