// Converts a TF.js graph (NHWC) into an ONNX graph (NCHW) that OpenCV 4.6's importer loads.
//
// Every 4-D activation is kept in NCHW; values whose meaning depends on layout (Reshape,
// non-4-D ops, graph outputs) get an explicit Transpose back to TF's NHWC order. Constant
// sub-graphs are folded with the fixed input size, so the ONNX graph has static shapes only (open-input-size.ts
// can then open a YOLO graph's input size for onnxruntime).
import { evalConst, normalizeAxis, shapeTensor, stridedSliceSpec } from './const-eval.js';
import {
  encodeOnnxModel,
  OnnxDataType,
  type OnnxAttributeValue,
  type OnnxModel,
  type OnnxNode,
  type OnnxTensor,
} from './onnx-writer.js';
import {
  attrBool,
  attrFloat,
  attrInt,
  attrInts,
  attrString,
  attrStrings,
  sizeOf,
  tensorName,
  type DType,
  type Tensor,
  type TfGraph,
  type TfNode,
} from './tfjs-graph.js';

/** Which importer the file is for: OpenCV 4.6 needs Clip's bounds as attributes, which only opset < 11 allows. */
export type OnnxTarget = 'opencv' | 'ort';

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

type Value =
  | { kind: 'const'; tensor: Tensor }
  | { kind: 'dyn'; name: string; shape: number[]; dtype: DType; nchw: boolean };
type DynValue = Extract<Value, { kind: 'dyn' }>;

const NHWC_TO_NCHW = [0, 3, 1, 2];
const FLOAT_MAX = 3.4028234663852886e38;
const NCHW_TO_NHWC = [0, 2, 3, 1];
const ELEMENTWISE: Record<string, string> = {
  Add: 'Add',
  AddV2: 'Add',
  Sub: 'Sub',
  Mul: 'Mul',
  RealDiv: 'Div',
  Maximum: 'Max',
  Minimum: 'Min',
};
const UNARY: Record<string, string> = {
  Relu: 'Relu',
  Sigmoid: 'Sigmoid',
  Tanh: 'Tanh',
  Exp: 'Exp',
  Abs: 'Abs',
  Elu: 'Elu',
  Sqrt: 'Sqrt',
};

function onnxType(dtype: DType): OnnxDataType {
  return dtype === 'float32' ? OnnxDataType.FLOAT : dtype === 'int32' ? OnnxDataType.INT32 : OnnxDataType.BOOL;
}

function transposeTensor(t: Tensor, perm: number[]): Tensor {
  const outShape = perm.map((p) => t.shape[p]);
  const inStrides = t.shape.map((_, i) => sizeOf(t.shape.slice(i + 1)));
  const outStrides = outShape.map((_, i) => sizeOf(outShape.slice(i + 1)));
  const n = sizeOf(outShape);
  const data = t.dtype === 'float32' ? new Float32Array(n) : new Int32Array(n);
  for (let i = 0; i < n; i++) {
    let src = 0;
    for (let d = 0; d < outShape.length; d++) src += (Math.floor(i / outStrides[d]) % outShape[d]) * inStrides[perm[d]];
    data[i] = t.data[src];
  }
  return { dtype: t.dtype, shape: outShape, data };
}

/** `t` repeated to `shape` by numpy broadcasting rules. */
function broadcastTensor(t: Tensor, shape: number[]): Tensor {
  const src = [...new Array<number>(shape.length - t.shape.length).fill(1), ...t.shape];
  const srcStrides = src.map((_, i) => sizeOf(src.slice(i + 1)));
  const outStrides = shape.map((_, i) => sizeOf(shape.slice(i + 1)));
  const n = sizeOf(shape);
  const data = t.dtype === 'float32' ? new Float32Array(n) : new Int32Array(n);
  for (let i = 0; i < n; i++) {
    let from = 0;
    for (let d = 0; d < shape.length; d++) if (src[d] !== 1) from += (Math.floor(i / outStrides[d]) % shape[d]) * srcStrides[d];
    data[i] = t.data[from];
  }
  return { dtype: t.dtype, shape: [...shape], data };
}

function samePads(inSize: number, kernel: number, stride: number, dilation: number): [number, number] {
  const effective = (kernel - 1) * dilation + 1;
  const out = Math.ceil(inSize / stride);
  const total = Math.max((out - 1) * stride + effective - inSize, 0);
  // TF puts the odd pixel after, unlike ONNX's auto_pad=SAME_UPPER symmetric guess; explicit pads are exact.
  return [Math.floor(total / 2), total - Math.floor(total / 2)];
}

function tensorBytes(t: Tensor, asInt64 = false): { raw: Uint8Array; dataType: OnnxDataType } {
  if (asInt64) {
    const raw = new Uint8Array(t.data.length * 8);
    const dv = new DataView(raw.buffer);
    t.data.forEach((v, i) => dv.setBigInt64(i * 8, BigInt(Math.trunc(v)), true));
    return { raw, dataType: OnnxDataType.INT64 };
  }
  if (t.dtype === 'bool') return { raw: Uint8Array.from(t.data), dataType: OnnxDataType.BOOL };
  const copy = t.dtype === 'float32' ? Float32Array.from(t.data) : Int32Array.from(t.data);
  return { raw: new Uint8Array(copy.buffer), dataType: onnxType(t.dtype) };
}

class OnnxGraphBuilder {
  readonly nodes: OnnxNode[] = [];
  readonly initializers: OnnxTensor[] = [];
  private used = new Set<string>();
  private transposed = new Map<string, string>();

  constructor(readonly target: OnnxTarget) {}

  unique(hint: string): string {
    let name = hint;
    for (let i = 1; this.used.has(name); i++) name = `${hint}_${i}`;
    this.used.add(name);
    return name;
  }

  constant(t: Tensor, hint: string, asInt64 = false): string {
    const name = this.unique(hint);
    const { raw, dataType } = tensorBytes(t, asInt64);
    this.initializers.push({ name, dataType, dims: t.shape, raw });
    return name;
  }

  ints64(values: number[], hint: string): string {
    return this.constant(shapeTensor(values), hint, true);
  }

  node(opType: string, inputs: string[], output: string, attributes: Record<string, OnnxAttributeValue> = {}): string {
    // Node name == output name: OpenCV names its layers after the node, and forward() looks them up by it.
    this.nodes.push({ name: output, opType, inputs, outputs: [output], attributes });
    return output;
  }

  /** The value in TF's own (NHWC) layout. */
  tfLayout(v: Value, hint: string): string {
    if (v.kind === 'const') return this.constant(v.tensor, `${hint}/const`);
    if (!v.nchw) return v.name;
    const cached = this.transposed.get(`${v.name}>nhwc`);
    if (cached) return cached;
    const out = this.node('Transpose', [v.name], this.unique(`${v.name}/to_nhwc`), { perm: ints(NCHW_TO_NHWC) });
    this.transposed.set(`${v.name}>nhwc`, out);
    return out;
  }

  /** A 4-D value in NCHW layout. */
  nchw(v: DynValue): string {
    if (v.nchw) return v.name;
    const cached = this.transposed.get(`${v.name}>nchw`);
    if (cached) return cached;
    const out = this.node('Transpose', [v.name], this.unique(`${v.name}/to_nchw`), { perm: ints(NHWC_TO_NCHW) });
    this.transposed.set(`${v.name}>nchw`, out);
    return out;
  }

  clip(input: string, min: number, max: number, output: string): string {
    if (this.target === 'opencv') return this.node('Clip', [input], output, { min: float(min), max: float(max) });
    const lo = this.constant({ dtype: 'float32', shape: [], data: Float32Array.of(min) }, `${output}/min`);
    const hi = this.constant({ dtype: 'float32', shape: [], data: Float32Array.of(max) }, `${output}/max`);
    return this.node('Clip', [input, lo, hi], output);
  }
}

function ints(value: number[]): OnnxAttributeValue {
  return { kind: 'ints', value };
}
function int(value: number): OnnxAttributeValue {
  return { kind: 'int', value };
}
function float(value: number): OnnxAttributeValue {
  return { kind: 'float', value };
}
function str(value: string): OnnxAttributeValue {
  return { kind: 'string', value };
}

class Converter {
  private values = new Map<string, Value>();
  private resizeInputs = new Map<string, [number, number]>();
  private b: OnnxGraphBuilder;

  constructor(
    private graph: TfGraph,
    private options: ConvertOptions,
  ) {
    this.b = new OnnxGraphBuilder(options.target);
  }

  run(): ConvertedModel {
    const { input, outputs } = this.options;
    if (input.shape.length !== 4) throw new Error('only 4-D image inputs are supported');
    const onnxInputShape = NHWC_TO_NCHW.map((p) => input.shape[p]);
    this.b.unique(input.name);
    this.values.set(input.node, { kind: 'dyn', name: input.name, shape: input.shape, dtype: 'float32', nchw: true });

    const outputInfo: { name: string; shape: number[] }[] = [];
    const renames = new Map<string, string>();
    for (const out of outputs) {
      const v = this.value(out.node);
      if (v.kind === 'const') throw new Error(`output ${out.node} is constant`);
      const produced = this.b.tfLayout(v, out.node);
      if (renames.has(produced) || produced === input.name) {
        // Already an output (or the input): give this one its own node.
        this.b.node('Identity', [produced], out.name);
      } else {
        renames.set(produced, out.name);
      }
      outputInfo.push({ name: out.name, shape: v.shape });
    }
    for (const n of this.b.nodes) {
      n.inputs = n.inputs.map((i) => renames.get(i) ?? i);
      n.outputs = n.outputs.map((o) => renames.get(o) ?? o);
      n.name = n.outputs[0];
    }
    const model: OnnxModel = {
      producer: 'edgecv tfjs-to-onnx',
      opset: 11,
      graphName: this.options.graphName,
      nodes: this.b.nodes,
      initializers: this.b.initializers,
      inputs: [{ name: input.name, dataType: OnnxDataType.FLOAT, shape: onnxInputShape }],
      outputs: outputInfo.map((o) => ({ name: o.name, dataType: OnnxDataType.FLOAT, shape: o.shape })),
    };
    return { bytes: encodeOnnxModel(model), inputShape: onnxInputShape, outputs: outputInfo, model, resizeInputs: this.resizeInputs };
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
      return { kind: 'const', tensor: shapeTensor(this.shapeOf(inputs[0])) };
    }
    if (inputs.every((v) => v.kind === 'const')) {
      const folded = evalConst(
        node,
        inputs.map((v) => (v as { tensor: Tensor }).tensor),
      );
      if (folded) return { kind: 'const', tensor: folded };
    }
    return this.emit(node, inputs);
  }

  private shapeOf(v: Value): number[] {
    return v.kind === 'const' ? v.tensor.shape : v.shape;
  }

  private dyn(node: TfNode, v: Value): DynValue {
    if (v.kind !== 'dyn') throw new Error(`${node.name} (${node.op}): expected a computed input, got a constant`);
    return v;
  }

  private constOf(node: TfNode, v: Value): Tensor {
    if (v.kind !== 'const') throw new Error(`${node.name} (${node.op}): expected a constant input (dynamic shapes must fold)`);
    return v.tensor;
  }

  private out(node: TfNode, shape: number[], nchw: boolean, name = node.name, dtype: DType = 'float32'): DynValue {
    return { kind: 'dyn', name, shape, dtype, nchw };
  }

  private emit(node: TfNode, inputs: Value[]): Value {
    const b = this.b;
    const name = b.unique(node.name);
    switch (node.op) {
      case 'Identity':
      case 'StopGradient':
        return inputs[0];
      case 'Cast': {
        const x = this.dyn(node, inputs[0]);
        if (node.attr.DstT?.type !== 'DT_FLOAT') throw new Error(`${node.name}: only casts to float are supported`);
        return x;
      }
      case 'Conv2D':
      case '_FusedConv2D':
      case 'DepthwiseConv2dNative':
      case 'FusedDepthwiseConv2dNative':
        return this.conv(node, inputs, name);
      case '_FusedMatMul':
      case 'MatMul':
        return this.matmul(node, inputs, name);
      case 'Relu6': {
        const x = this.dyn(node, inputs[0]);
        return this.out(node, x.shape, x.nchw, b.clip(x.name, 0, 6, name));
      }
      case 'LeakyRelu': {
        const x = this.dyn(node, inputs[0]);
        return this.out(node, x.shape, x.nchw, b.node('LeakyRelu', [x.name], name, { alpha: float(attrFloat(node, 'alpha', 0.2)) }));
      }
      case 'Softmax': {
        const x = this.dyn(node, inputs[0]);
        const input = b.tfLayout(x, node.name);
        return this.out(node, x.shape, false, b.node('Softmax', [input], name, { axis: int(x.shape.length - 1) }));
      }
      case 'MaxPool':
      case 'AvgPool':
        return this.pool(node, inputs, name);
      case 'Pad':
      case 'PadV2':
        return this.pad(node, inputs, name);
      case 'Reshape': {
        const x = this.dyn(node, inputs[0]);
        const target = [...this.constOf(node, inputs[1]).data];
        const known = target.filter((d) => d !== -1).reduce((p, q) => p * q, 1);
        const shape = target.map((d) => (d === -1 ? sizeOf(x.shape) / known : d));
        const out = b.node('Reshape', [b.tfLayout(x, node.name), b.ints64(shape, `${name}/shape`)], name);
        return this.out(node, shape, false, out);
      }
      case 'Squeeze': {
        const x = this.dyn(node, inputs[0]);
        const dims = attrInts(node, 'squeeze_dims');
        const drop = new Set(dims.map((d) => normalizeAxis(d, x.shape.length)));
        const shape = x.shape.filter((d, i) => (drop.size ? !drop.has(i) : d !== 1));
        const out = b.node('Reshape', [b.tfLayout(x, node.name), b.ints64(shape, `${name}/shape`)], name);
        return this.out(node, shape, false, out);
      }
      case 'ConcatV2':
        return this.concat(node, inputs, name);
      case 'ResizeBilinear':
      case 'ResizeNearestNeighbor':
        return this.resize(node, inputs, name);
      case 'DepthToSpace': {
        const x = this.dyn(node, inputs[0]);
        const bs = attrInt(node, 'block_size');
        const [n, h, w, c] = x.shape;
        const out = b.node('DepthToSpace', [b.nchw(x)], name, { blocksize: int(bs), mode: str('DCR') });
        return this.out(node, [n, h * bs, w * bs, c / (bs * bs)], true, out);
      }
      case 'Mean':
        return this.mean(node, inputs, name);
      case 'StridedSlice':
        return this.slice(node, inputs, name);
      case 'Transpose': {
        // In TF's own layout: YOLO heads permute 5-D [n, anchors, outputs, h, w] tensors.
        const x = this.dyn(node, inputs[0]);
        const perm = [...this.constOf(node, inputs[1]).data];
        const out = b.node('Transpose', [b.tfLayout(x, node.name)], name, { perm: ints(perm) });
        return this.out(node, perm.map((p) => x.shape[p]), false, out);
      }
      case 'Square': {
        const x = this.dyn(node, inputs[0]);
        return this.out(node, x.shape, x.nchw, b.node('Mul', [x.name, x.name], name));
      }
      default:
        if (ELEMENTWISE[node.op]) return this.elementwise(node, inputs, name);
        if (UNARY[node.op]) {
          const x = this.dyn(node, inputs[0]);
          return this.out(node, x.shape, x.nchw, b.node(UNARY[node.op], [x.name], name));
        }
        throw new Error(`${node.name}: op ${node.op} is not supported by the converter`);
    }
  }

  private activation(node: TfNode, ops: string[], input: string, name: string): string {
    const rest = ops.filter((o) => o !== 'BiasAdd');
    if (rest.length === 0) return input;
    if (rest.length > 1) throw new Error(`${node.name}: fused ops ${ops.join(',')} are not supported`);
    switch (rest[0]) {
      case 'Relu':
        return this.b.node('Relu', [input], name);
      case 'Relu6':
        return this.b.clip(input, 0, 6, name);
      case 'Elu':
        return this.b.node('Elu', [input], name);
      case 'LeakyRelu':
        return this.b.node('LeakyRelu', [input], name, { alpha: float(attrFloat(node, 'leakyrelu_alpha', 0.2)) });
      case 'Sigmoid':
        return this.b.node('Sigmoid', [input], name);
      default:
        throw new Error(`${node.name}: fused activation ${rest[0]} is not supported`);
    }
  }

  private conv(node: TfNode, inputs: Value[], name: string): Value {
    const b = this.b;
    const x = this.dyn(node, inputs[0]);
    const filter = this.constOf(node, inputs[1]);
    const depthwise = node.op.includes('Depthwise');
    const fused = attrStrings(node, 'fused_ops');
    if (attrString(node, 'data_format') && attrString(node, 'data_format') !== 'NHWC') throw new Error(`${node.name}: only NHWC`);
    const [kh, kw, cin, cm] = filter.shape;
    const strides = attrInts(node, 'strides');
    const dil = attrInts(node, 'dilations');
    const [sh, sw] = strides.length ? [strides[1], strides[2]] : [1, 1];
    const [dh, dw] = dil.length ? [dil[1], dil[2]] : [1, 1];
    const padding = attrString(node, 'padding');
    const [, ih, iw] = x.shape;
    let pads = [0, 0, 0, 0];
    if (padding === 'SAME') {
      const [pt, pb] = samePads(ih, kh, sh, dh);
      const [pl, pr] = samePads(iw, kw, sw, dw);
      pads = [pt, pl, pb, pr];
    } else if (padding === 'EXPLICIT') {
      const e = attrInts(node, 'explicit_paddings');
      pads = [e[2], e[4], e[3], e[5]];
    }
    // TF HWIO (or HW C M for depthwise) -> ONNX OIHW; depthwise becomes a grouped conv.
    const weight = depthwise
      ? { ...transposeTensor(filter, [2, 3, 0, 1]), shape: [cin * cm, 1, kh, kw] }
      : transposeTensor(filter, [3, 2, 0, 1]);
    const cout = depthwise ? cin * cm : cm;
    const convInputs = [b.nchw(x), b.constant(weight, `${node.name}/weights`)];
    if (fused.includes('BiasAdd')) convInputs.push(b.constant(this.constOf(node, inputs[2]), `${node.name}/bias`));
    const oh = Math.floor((ih + pads[0] + pads[2] - ((kh - 1) * dh + 1)) / sh) + 1;
    const ow = Math.floor((iw + pads[1] + pads[3] - ((kw - 1) * dw + 1)) / sw) + 1;
    const hasActivation = fused.some((o) => o !== 'BiasAdd');
    const convName = hasActivation ? b.unique(`${node.name}/conv`) : name;
    b.node('Conv', convInputs, convName, {
      kernel_shape: ints([kh, kw]),
      strides: ints([sh, sw]),
      dilations: ints([dh, dw]),
      pads: ints(pads),
      group: int(depthwise ? cin : 1),
    });
    const out = this.activation(node, fused, convName, name);
    return this.out(node, [x.shape[0], oh, ow, cout], true, out);
  }

  private matmul(node: TfNode, inputs: Value[], name: string): Value {
    const b = this.b;
    const x = this.dyn(node, inputs[0]);
    const w = this.constOf(node, inputs[1]);
    if (x.shape.length !== 2) throw new Error(`${node.name}: MatMul input must be 2-D`);
    if (attrBool(node, 'transpose_a')) throw new Error(`${node.name}: transpose_a is not supported`);
    // OpenCV 4.6 takes Gemm weights only as [N, K] with transB = 1.
    const weight = attrBool(node, 'transpose_b') ? w : transposeTensor(w, [1, 0]);
    const fused = attrStrings(node, 'fused_ops');
    const gemmInputs = [b.tfLayout(x, node.name), b.constant(weight, `${node.name}/weights`)];
    if (fused.includes('BiasAdd')) gemmInputs.push(b.constant(this.constOf(node, inputs[2]), `${node.name}/bias`));
    const hasActivation = fused.some((o) => o !== 'BiasAdd');
    const gemmName = hasActivation ? b.unique(`${node.name}/gemm`) : name;
    b.node('Gemm', gemmInputs, gemmName, { transB: int(1), alpha: float(1), beta: float(1) });
    const out = this.activation(node, fused, gemmName, name);
    return this.out(node, [x.shape[0], weight.shape[0]], false, out);
  }

  private pool(node: TfNode, inputs: Value[], name: string): Value {
    const x = this.dyn(node, inputs[0]);
    const k = attrInts(node, 'ksize');
    const s = attrInts(node, 'strides');
    const [, ih, iw, c] = x.shape;
    let pads = [0, 0, 0, 0];
    if (attrString(node, 'padding') === 'SAME') {
      const [pt, pb] = samePads(ih, k[1], s[1], 1);
      const [pl, pr] = samePads(iw, k[2], s[2], 1);
      pads = [pt, pl, pb, pr];
    }
    const oh = Math.floor((ih + pads[0] + pads[2] - k[1]) / s[1]) + 1;
    const ow = Math.floor((iw + pads[1] + pads[3] - k[2]) / s[2]) + 1;
    const op = node.op === 'MaxPool' ? 'MaxPool' : 'AveragePool';
    const out = this.b.node(op, [this.b.nchw(x)], name, {
      kernel_shape: ints([k[1], k[2]]),
      strides: ints([s[1], s[2]]),
      pads: ints(pads),
    });
    return this.out(node, [x.shape[0], oh, ow, c], true, out);
  }

  private pad(node: TfNode, inputs: Value[], name: string): Value {
    const b = this.b;
    const x = this.dyn(node, inputs[0]);
    const p = [...this.constOf(node, inputs[1]).data];
    const rank = x.shape.length;
    const before = Array.from({ length: rank }, (_, i) => p[2 * i]);
    const after = Array.from({ length: rank }, (_, i) => p[2 * i + 1]);
    const value = inputs[2] ? this.constOf(node, inputs[2]).data[0] : 0;
    const shape = x.shape.map((d, i) => d + before[i] + after[i]);
    const useNchw = rank === 4;
    const order = useNchw ? NHWC_TO_NCHW : before.map((_, i) => i);
    const pads = [...order.map((i) => before[i]), ...order.map((i) => after[i])];
    const input = useNchw ? b.nchw(x) : b.tfLayout(x, node.name);
    const padInputs = [input, b.ints64(pads, `${name}/pads`)];
    if (value !== 0) padInputs.push(b.constant({ dtype: 'float32', shape: [], data: Float32Array.of(value) }, `${name}/value`));
    return this.out(node, shape, useNchw, b.node('Pad', padInputs, name, { mode: str('constant') }));
  }

  private concat(node: TfNode, inputs: Value[], name: string): Value {
    const b = this.b;
    const parts = inputs.slice(0, -1);
    const rank = this.shapeOf(parts[0]).length;
    const axis = normalizeAxis(this.constOf(node, inputs[inputs.length - 1]).data[0], rank);
    const shape = [...this.shapeOf(parts[0])];
    shape[axis] = parts.reduce((s, v) => s + this.shapeOf(v)[axis], 0);
    if (rank === 4) {
      const names = parts.map((v, i) =>
        v.kind === 'const' ? b.constant(transposeTensor(v.tensor, NHWC_TO_NCHW), `${name}/part${i}`) : b.nchw(v),
      );
      return this.out(node, shape, true, b.node('Concat', names, name, { axis: int(NHWC_TO_NCHW.indexOf(axis)) }));
    }
    const names = parts.map((v, i) => b.tfLayout(v, `${name}/part${i}`));
    return this.out(node, shape, false, b.node('Concat', names, name, { axis: int(axis) }));
  }

  private resize(node: TfNode, inputs: Value[], name: string): Value {
    const b = this.b;
    const x = this.dyn(node, inputs[0]);
    const [n, , , c] = x.shape;
    const [oh, ow] = this.resizeTarget(node, [...this.constOf(node, inputs[1]).data]);
    const alignCorners = attrBool(node, 'align_corners');
    const halfPixel = attrBool(node, 'half_pixel_centers');
    const empty = { dtype: 'float32' as const, shape: [0], data: new Float32Array(0) };
    const out = b.node(
      'Resize',
      [b.nchw(x), b.constant(empty, `${name}/roi`), b.constant(empty, `${name}/scales`), b.ints64([n, c, oh, ow], `${name}/sizes`)],
      name,
      {
        mode: str(node.op === 'ResizeBilinear' ? 'linear' : 'nearest'),
        coordinate_transformation_mode: str(alignCorners ? 'align_corners' : halfPixel ? 'half_pixel' : 'asymmetric'),
        nearest_mode: str(halfPixel ? 'round_prefer_ceil' : 'floor'),
      },
    );
    this.resizeInputs.set(out, [x.shape[1]!, x.shape[2]!]);
    return this.out(node, [n, oh, ow, c], true, out);
  }

  /**
   * Keras' UpSampling2D stores `feature size x factor` as a constant when the graph is exported. When the
   * manifest converts a graph at another input size than its input placeholder declares, such a stored
   * constant scales with the input (centernet exported at 512, converted at 384: 32x32 becomes 24x24).
   * Sizes computed from shapes were already folded at the converted size and are left alone.
   */
  private resizeTarget(node: TfNode, size: number[]): number[] {
    const sizeNode = this.graph.nodes.get(tensorName(node.inputs[1] ?? ''));
    const declared = this.declaredInputShape();
    if (sizeNode?.op !== 'Const' || !declared) return size;
    const { shape } = this.options.input;
    const scaled = [(size[0] * shape[1]) / declared[1], (size[1] * shape[2]) / declared[2]];
    if (!scaled.every(Number.isInteger)) {
      throw new Error(`${node.name}: constant resize size ${size.join('x')} does not scale to input ${shape[1]}x${shape[2]}`);
    }
    return scaled;
  }

  /** The static NHWC shape the graph's input placeholder was exported with, when it differs from the manifest's. */
  private declaredInputShape(): number[] | undefined {
    const input = this.graph.nodes.get(this.options.input.node);
    if (input?.op !== 'Placeholder') return undefined;
    const dims = input.attr['shape']?.shape?.dim?.map((d) => Number(d.size));
    if (!dims || dims.length !== 4 || dims.some((d) => !(d > 0))) return undefined;
    const { shape } = this.options.input;
    return dims[1] === shape[1] && dims[2] === shape[2] ? undefined : dims;
  }

  private mean(node: TfNode, inputs: Value[], name: string): Value {
    const x = this.dyn(node, inputs[0]);
    const rank = x.shape.length;
    const axes = [...this.constOf(node, inputs[1]).data].map((a) => normalizeAxis(a, rank));
    const keep = attrBool(node, 'keep_dims');
    const useNchw = rank === 4 && x.nchw;
    const onnxAxes = useNchw ? axes.map((a) => NHWC_TO_NCHW.indexOf(a)) : axes;
    const input = useNchw ? x.name : this.b.tfLayout(x, node.name);
    const out = this.b.node('ReduceMean', [input], name, { axes: ints(onnxAxes), keepdims: int(keep ? 1 : 0) });
    const shape = keep ? x.shape.map((d, i) => (axes.includes(i) ? 1 : d)) : x.shape.filter((_, i) => !axes.includes(i));
    // Without keepdims the remaining dims keep NCHW order only if no spatial dim survives; channels-last otherwise.
    const stillNchw = keep && useNchw;
    if (!keep && useNchw && !(axes.includes(1) && axes.includes(2))) {
      throw new Error(`${node.name}: Mean without keep_dims over ${axes} is not supported`);
    }
    return this.out(node, shape, stillNchw, out);
  }

  private slice(node: TfNode, inputs: Value[], name: string): Value {
    const b = this.b;
    const x = this.dyn(node, inputs[0]);
    const [begin, end, step] = inputs.slice(1).map((v) => [...this.constOf(node, v).data]);
    const spec = stridedSliceSpec(node, x.shape, begin, end, step);
    const axes = spec.starts.map((_, i) => i);
    // ONNX Slice ends are exclusive; a negative-step end of -1 means "through index 0".
    const ends = spec.ends.map((e, i) => (spec.steps[i] < 0 && e === -1 ? -(2 ** 31) : e));
    const sliced = b.node(
      'Slice',
      [b.tfLayout(x, node.name), b.ints64(spec.starts, `${name}/starts`), b.ints64(ends, `${name}/ends`), b.ints64(axes, `${name}/axes`), b.ints64(spec.steps, `${name}/steps`)],
      spec.outShape.length === spec.keptShape.length ? name : b.unique(`${name}/slice`),
    );
    if (spec.outShape.length === spec.keptShape.length) return this.out(node, spec.outShape, false, sliced);
    return this.out(node, spec.outShape, false, b.node('Reshape', [sliced, b.ints64(spec.outShape, `${name}/shape`)], name));
  }

  private elementwise(node: TfNode, inputs: Value[], name: string): Value {
    const b = this.b;
    const op = ELEMENTWISE[node.op];
    const scalar = inputs.find((v) => v.kind === 'const' && sizeOf(v.tensor.shape) === 1);
    const other = inputs.find((v) => v !== scalar);
    if ((op === 'Min' || op === 'Max') && scalar?.kind === 'const' && other?.kind === 'dyn') {
      // clip_by_value: OpenCV's eltwise Min/Max need two computed inputs, Clip takes a constant bound.
      const bound = scalar.tensor.data[0];
      const out = op === 'Min' ? b.clip(other.name, -FLOAT_MAX, bound, name) : b.clip(other.name, bound, FLOAT_MAX, name);
      return this.out(node, other.shape, other.nchw, out);
    }
    const dyns = inputs.filter((v): v is DynValue => v.kind === 'dyn');
    const rank = Math.max(...inputs.map((v) => this.shapeOf(v).length));
    const shape = inputs.map((v) => this.shapeOf(v)).reduce((a, s) => {
      const n = Math.max(a.length, s.length);
      return Array.from({ length: n }, (_, i) => Math.max(a[a.length - n + i] ?? 1, s[s.length - n + i] ?? 1));
    });
    const useNchw = rank === 4 && dyns.some((v) => v.nchw && v.shape.length === 4) && dyns.every((v) => v.shape.length === 4);
    const names = inputs.map((v, i) => {
      if (v.kind === 'dyn') return useNchw ? b.nchw(v) : b.tfLayout(v, node.name);
      const t = v.tensor;
      if (!useNchw && b.target === 'opencv' && sizeOf(t.shape) > 1 && t.shape.join() !== shape.join()) {
        // OpenCV 4.6 turns a constant operand into a Scale/Shift layer that only broadcasts over the batch
        // axis (YOLO grids [1,1,N,2] against [1,3,N,2]): give it the full shape.
        return b.constant(broadcastTensor(t, shape), `${name}/in${i}`);
      }
      if (!useNchw || sizeOf(t.shape) === 1) {
        // Scalars broadcast the same in either layout; keep them rank 0 so OpenCV treats them as scalars.
        const scalar = sizeOf(t.shape) === 1 && useNchw ? { ...t, shape: [] } : t;
        return b.constant(scalar, `${name}/in${i}`);
      }
      const padded = { ...t, shape: [...new Array<number>(4 - t.shape.length).fill(1), ...t.shape] };
      return b.constant(transposeTensor(padded, NHWC_TO_NCHW), `${name}/in${i}`);
    });
    return this.out(node, shape, useNchw, b.node(op, names, name));
  }
}

export function convertTfjsToOnnx(graph: TfGraph, options: ConvertOptions): ConvertedModel {
  return new Converter(graph, options).run();
}
