// What each TF op's converter reads and writes: the ONNX graph being built, the TF graph, the configured input.
import type { OnnxGraphBuilder } from './onnx-graph-builder.js';
import type { TfGraph, TfNode } from './tfjs-graph.js';
import type { Value } from './tf-values.js';

export interface OpContext {
  readonly b: OnnxGraphBuilder;
  readonly graph: TfGraph;
  /** The configured input: the TF node cut at, and its fixed TF (NHWC) shape. */
  readonly input: { readonly node: string; readonly shape: number[] };
  /** Each Resize node's input height and width at this input size (what openInputSize turns into scales). */
  readonly resizeInputs: Map<string, [number, number]>;
}

/** Converts one TF node whose inputs are converted; `name` is the unique ONNX name reserved for its output. */
export type OpConverter = (ctx: OpContext, node: TfNode, inputs: Value[], name: string) => Value;
