// Which converter each TF op goes to (tf-conv-ops, tf-layout-ops, tf-math-ops).
import type { TfNode } from './tfjs-graph.js';
import { conv, matmul, pool } from './tf-conv-ops.js';
import { concat, depthToSpace, mean, pad, reshape, resize, squeeze, stridedSlice, transpose } from './tf-layout-ops.js';
import { cast, elementwise, ELEMENTWISE, leakyRelu, relu6, softmax, square, unary, UNARY } from './tf-math-ops.js';
import type { OpContext, OpConverter } from './tf-op-context.js';
import type { Value } from './tf-values.js';

const passThrough: OpConverter = (_ctx, _node, inputs) => inputs[0];

const OPS = new Map<string, OpConverter>([
  ['Identity', passThrough],
  ['StopGradient', passThrough],
  ['Cast', cast],
  ['Conv2D', conv],
  ['_FusedConv2D', conv],
  ['DepthwiseConv2dNative', conv],
  ['FusedDepthwiseConv2dNative', conv],
  ['_FusedMatMul', matmul],
  ['MatMul', matmul],
  ['Relu6', relu6],
  ['LeakyRelu', leakyRelu],
  ['Softmax', softmax],
  ['MaxPool', pool],
  ['AvgPool', pool],
  ['Pad', pad],
  ['PadV2', pad],
  ['Reshape', reshape],
  ['Squeeze', squeeze],
  ['ConcatV2', concat],
  ['ResizeBilinear', resize],
  ['ResizeNearestNeighbor', resize],
  ['DepthToSpace', depthToSpace],
  ['Mean', mean],
  ['StridedSlice', stridedSlice],
  ['Transpose', transpose],
  ['Square', square],
]);

/** The ONNX nodes of one TF node whose inputs are converted (and not all constant). */
export function convertOp(ctx: OpContext, node: TfNode, inputs: Value[]): Value {
  const name = ctx.b.unique(node.name);
  const convert = OPS.get(node.op) ?? (ELEMENTWISE[node.op] ? elementwise : UNARY[node.op] ? unary : undefined);
  if (!convert) throw new Error(`${node.name}: op ${node.op} is not supported by the converter`);
  return convert(ctx, node, inputs, name);
}
