// The float 1x1 convolutions that end an int8 graph (the heads kept fp32 for accuracy) as matrix products in the
// channels-last layout of the outputs. onnxruntime runs a QDQ graph's integer convolutions channels-last; a float
// Conv after them, then the converter's layout Transpose to a channels-last output, costs a Transpose back to
// channels-first, a reorder into the float kernels' blocked layout, another out of it and the output Transpose.
// A 1x1 convolution is a product over channels: Transpose to channels-last, MatMul by the transposed weights, Add
// the bias (and Relu, MatMul, Add for a head of two convolutions) computes the same output, and onnxruntime cancels
// the leading Transpose against its own. Only float nodes after the last quantized one change, so the integer
// path's answers stay exact (docs/int8.md, "The same answers on every CPU"); measured in docs/int8.md, "Speed".
import { floatData, indexGraph, tensor, type GraphIndex } from './graph-index.js';
import { OnnxDataType, type OnnxAttributeValue, type OnnxModel, type OnnxNode } from './onnx-writer.js';

const TO_CHANNELS_LAST = [0, 2, 3, 1];

function ints(a: OnnxAttributeValue | undefined): number[] | undefined {
  return a?.kind === 'ints' ? a.value : undefined;
}

function same(a: number[] | undefined, b: number[]): boolean {
  return a !== undefined && a.length === b.length && a.every((v, i) => v === b[i]);
}

/** `n` is a float 1x1 convolution without stride, padding, dilation or groups, on constant weights. */
function isPointwiseFloatConv(n: OnnxNode | undefined, index: GraphIndex): n is OnnxNode {
  if (n?.opType !== 'Conv') return false;
  const a = n.attributes;
  const weight = index.inits.get(n.inputs[1]!);
  const bias = n.inputs[2] ? index.inits.get(n.inputs[2]) : undefined;
  return (
    weight?.dataType === OnnxDataType.FLOAT &&
    weight.dims.length === 4 && weight.dims[2] === 1 && weight.dims[3] === 1 &&
    (!n.inputs[2] || bias?.dataType === OnnxDataType.FLOAT) &&
    (a['group'] === undefined || (a['group'].kind === 'int' && a['group'].value === 1)) &&
    (a['strides'] === undefined || same(ints(a['strides']), [1, 1])) &&
    (a['dilations'] === undefined || same(ints(a['dilations']), [1, 1])) &&
    (a['pads'] === undefined || same(ints(a['pads']), [0, 0, 0, 0])) &&
    (a['auto_pad'] === undefined || (a['auto_pad'].kind === 'string' && a['auto_pad'].value === 'NOTSET'))
  );
}

/** The node that alone reads `t` (not itself a graph output), or undefined. */
function producerReadOnlyBy(index: GraphIndex, t: string, reader: OnnxNode): OnnxNode | undefined {
  const readers = index.readers.get(t) ?? [];
  return readers.length === 1 && readers[0] === reader && !index.outputs.has(t) ? index.producers.get(t) : undefined;
}

/**
 * The head ending in `transpose` (a channels-last Transpose that writes a graph output), from its first node: [conv]
 * or [conv, relu, conv], or null where it is not one this pass rewrites.
 */
function headBefore(transpose: OnnxNode, index: GraphIndex): OnnxNode[] | null {
  const last = producerReadOnlyBy(index, transpose.inputs[0]!, transpose);
  if (!isPointwiseFloatConv(last, index)) return null;
  const relu = producerReadOnlyBy(index, last.inputs[0]!, last);
  const first = relu?.opType === 'Relu' ? producerReadOnlyBy(index, relu.inputs[0]!, relu) : undefined;
  return relu && isPointwiseFloatConv(first, index) ? [first, relu, last] : [last];
}

/** The head's nodes as channels-last products, writing `output`; their constants go to `inits`. */
function channelsLastHead(head: OnnxNode[], output: string, index: GraphIndex, inits: OnnxModel['initializers']): OnnxNode[] {
  const nodes: OnnxNode[] = [];
  let x = `${output}/channels_last`;
  nodes.push({ name: x, opType: 'Transpose', inputs: [head[0]!.inputs[0]!], outputs: [x], attributes: { perm: { kind: 'ints', value: TO_CHANNELS_LAST } } });
  head.forEach((n, k) => {
    const step = `${output}/${k}`;
    const y = k === head.length - 1 ? output : `${step}/out`;
    if (n.opType === 'Relu') {
      nodes.push({ name: step, opType: 'Relu', inputs: [x], outputs: [y], attributes: {} });
      x = y;
      return;
    }
    const w = index.inits.get(n.inputs[1]!)!;
    const [cout, cin] = [w.dims[0]!, w.dims[1]!];
    const wv = floatData(w);
    const wt = new Float32Array(cin * cout);
    for (let o = 0; o < cout; o++) for (let i = 0; i < cin; i++) wt[i * cout + o] = wv[o * cin + i]!;
    inits.push(tensor(`${step}/weights`, OnnxDataType.FLOAT, [cin, cout], wt));
    const product = n.inputs[2] ? `${step}/product` : y;
    nodes.push({ name: `${step}/matmul`, opType: 'MatMul', inputs: [x, `${step}/weights`], outputs: [product], attributes: {} });
    if (n.inputs[2]) {
      inits.push({ ...index.inits.get(n.inputs[2])!, name: `${step}/bias` });
      nodes.push({ name: `${step}/bias_add`, opType: 'Add', inputs: [product, `${step}/bias`], outputs: [y], attributes: {} });
    }
    x = y;
  });
  return nodes;
}

/** `model` with each float pointwise head before a channels-last output Transpose as channels-last products. */
export function nhwcHeads(model: OnnxModel): { model: OnnxModel; rewritten: string[] } {
  const index = indexGraph(model);
  const replaced = new Map<OnnxNode, OnnxNode[]>();
  const dropped = new Set<OnnxNode>();
  const inits = [...model.initializers];
  const rewritten: string[] = [];
  for (const t of model.nodes) {
    if (t.opType !== 'Transpose' || !index.outputs.has(t.outputs[0]!) || !same(ints(t.attributes['perm']), TO_CHANNELS_LAST)) continue;
    const head = headBefore(t, index);
    if (!head) continue;
    // The new nodes take the Transpose's place: everything they read was written before it.
    replaced.set(t, channelsLastHead(head, t.outputs[0]!, index, inits));
    for (const n of head) dropped.add(n);
    rewritten.push(t.outputs[0]!);
  }
  const nodes = model.nodes.flatMap((n) => replaced.get(n) ?? (dropped.has(n) ? [] : [n]));
  const used = new Set(nodes.flatMap((n) => n.inputs));
  return { model: { ...model, nodes, initializers: inits.filter((t) => used.has(t.name)) }, rewritten };
}
