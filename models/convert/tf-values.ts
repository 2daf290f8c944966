// What the converter knows of each TF node's output: a constant tensor (folded with the fixed input size), or a
// value computed by the ONNX graph, with its TF (NHWC) shape and whether the graph holds it in NCHW order.
import type { DType, Tensor, TfNode } from './tfjs-graph.js';

export type Value =
  | { kind: 'const'; tensor: Tensor }
  | { kind: 'dyn'; name: string; shape: number[]; dtype: DType; nchw: boolean };
export type DynValue = Extract<Value, { kind: 'dyn' }>;

export const NHWC_TO_NCHW = [0, 3, 1, 2];
export const NCHW_TO_NHWC = [0, 2, 3, 1];

export function shapeOf(v: Value): number[] {
  return v.kind === 'const' ? v.tensor.shape : v.shape;
}

/** `v` as a computed value; a constant where `node` needs one computed is an error. */
export function dyn(node: TfNode, v: Value): DynValue {
  if (v.kind !== 'dyn') throw new Error(`${node.name} (${node.op}): expected a computed input, got a constant`);
  return v;
}

/** `v` as a constant; a computed value where `node` needs a constant (a size, an axis) is an error. */
export function constOf(node: TfNode, v: Value): Tensor {
  if (v.kind !== 'const') throw new Error(`${node.name} (${node.op}): expected a constant input (dynamic shapes must fold)`);
  return v.tensor;
}

/** The value `node` computes into the ONNX tensor `name`. */
export function out(node: TfNode, shape: number[], nchw: boolean, name = node.name, dtype: DType = 'float32'): DynValue {
  return { kind: 'dyn', name, shape, dtype, nchw };
}
