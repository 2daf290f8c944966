// TF's elementwise arithmetic and activations as ONNX nodes: broadcasting constants the way OpenCV 4.6 needs.
import { float, int } from './onnx-graph-builder.js';
import { broadcastTensor, transposeTensor } from './tensor-transform.js';
import { attrFloat, sizeOf, type TfNode } from './tfjs-graph.js';
import type { OpContext } from './tf-op-context.js';
import { dyn, NHWC_TO_NCHW, out, shapeOf, type DynValue, type Value } from './tf-values.js';

const FLOAT_MAX = 3.4028234663852886e38;

/** TF binary ops and the ONNX op of each. */
export const ELEMENTWISE: Record<string, string> = {
  Add: 'Add',
  AddV2: 'Add',
  Sub: 'Sub',
  Mul: 'Mul',
  RealDiv: 'Div',
  Maximum: 'Max',
  Minimum: 'Min',
};

/** TF unary ops and the ONNX op of each. */
export const UNARY: Record<string, string> = {
  Relu: 'Relu',
  Sigmoid: 'Sigmoid',
  Tanh: 'Tanh',
  Exp: 'Exp',
  Abs: 'Abs',
  Elu: 'Elu',
  Sqrt: 'Sqrt',
};

export function unary(ctx: OpContext, node: TfNode, inputs: Value[], name: string): Value {
  const x = dyn(node, inputs[0]);
  return out(node, x.shape, x.nchw, ctx.b.node(UNARY[node.op], [x.name], name));
}

export function cast(_ctx: OpContext, node: TfNode, inputs: Value[]): Value {
  const x = dyn(node, inputs[0]);
  if (node.attr.DstT?.type !== 'DT_FLOAT') throw new Error(`${node.name}: only casts to float are supported`);
  return x;
}

export function relu6(ctx: OpContext, node: TfNode, inputs: Value[], name: string): Value {
  const x = dyn(node, inputs[0]);
  return out(node, x.shape, x.nchw, ctx.b.clip(x.name, 0, 6, name));
}

export function leakyRelu(ctx: OpContext, node: TfNode, inputs: Value[], name: string): Value {
  const x = dyn(node, inputs[0]);
  return out(node, x.shape, x.nchw, ctx.b.node('LeakyRelu', [x.name], name, { alpha: float(attrFloat(node, 'alpha', 0.2)) }));
}

export function softmax(ctx: OpContext, node: TfNode, inputs: Value[], name: string): Value {
  const x = dyn(node, inputs[0]);
  const input = ctx.b.tfLayout(x, node.name);
  return out(node, x.shape, false, ctx.b.node('Softmax', [input], name, { axis: int(x.shape.length - 1) }));
}

export function square(ctx: OpContext, node: TfNode, inputs: Value[], name: string): Value {
  const x = dyn(node, inputs[0]);
  return out(node, x.shape, x.nchw, ctx.b.node('Mul', [x.name, x.name], name));
}

/** The broadcast (numpy rules) shape of the operands. */
function broadcastShape(inputs: Value[]): number[] {
  return inputs
    .map((v) => shapeOf(v))
    .reduce((a, s) => {
      const n = Math.max(a.length, s.length);
      return Array.from({ length: n }, (_, i) => Math.max(a[a.length - n + i] ?? 1, s[s.length - n + i] ?? 1));
    });
}

/** A constant operand of an elementwise op, laid out as the computed operands are. */
function constantOperand(ctx: OpContext, v: Extract<Value, { kind: 'const' }>, useNchw: boolean, shape: number[], hint: string): string {
  const b = ctx.b;
  const t = v.tensor;
  if (!useNchw && b.target === 'opencv' && sizeOf(t.shape) > 1 && t.shape.join() !== shape.join()) {
    // OpenCV 4.6 turns a constant operand into a Scale/Shift layer that only broadcasts over the batch
    // axis (YOLO grids [1,1,N,2] against [1,3,N,2]): give it the full shape.
    return b.constant(broadcastTensor(t, shape), hint);
  }
  if (!useNchw || sizeOf(t.shape) === 1) {
    // Scalars broadcast the same in either layout; keep them rank 0 so OpenCV treats them as scalars.
    const scalar = sizeOf(t.shape) === 1 && useNchw ? { ...t, shape: [] } : t;
    return b.constant(scalar, hint);
  }
  const padded = { ...t, shape: [...new Array<number>(4 - t.shape.length).fill(1), ...t.shape] };
  return b.constant(transposeTensor(padded, NHWC_TO_NCHW), hint);
}

export function elementwise(ctx: OpContext, node: TfNode, inputs: Value[], name: string): Value {
  const b = ctx.b;
  const op = ELEMENTWISE[node.op];
  const scalar = inputs.find((v) => v.kind === 'const' && sizeOf(v.tensor.shape) === 1);
  const other = inputs.find((v) => v !== scalar);
  if ((op === 'Min' || op === 'Max') && scalar?.kind === 'const' && other?.kind === 'dyn') {
    // clip_by_value: OpenCV's eltwise Min/Max need two computed inputs, Clip takes a constant bound.
    const bound = scalar.tensor.data[0];
    const result = op === 'Min' ? b.clip(other.name, -FLOAT_MAX, bound, name) : b.clip(other.name, bound, FLOAT_MAX, name);
    return out(node, other.shape, other.nchw, result);
  }
  const dyns = inputs.filter((v): v is DynValue => v.kind === 'dyn');
  const rank = Math.max(...inputs.map((v) => shapeOf(v).length));
  const shape = broadcastShape(inputs);
  const useNchw = rank === 4 && dyns.some((v) => v.nchw && v.shape.length === 4) && dyns.every((v) => v.shape.length === 4);
  const names = inputs.map((v, i) => {
    if (v.kind === 'dyn') return useNchw ? b.nchw(v) : b.tfLayout(v, node.name);
    return constantOperand(ctx, v, useNchw, shape, `${name}/in${i}`);
  });
  return out(node, shape, useNchw, b.node(op, names, name));
}
