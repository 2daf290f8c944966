// Where each tensor of an ONNX graph comes from and goes: built once per graph, read by the passes over it.
import { OnnxDataType, type OnnxModel, type OnnxNode, type OnnxTensor } from './onnx-writer.js';

export interface GraphIndex {
  /** Initializers by name. */
  inits: Map<string, OnnxTensor>;
  /** Names of the graph's outputs. */
  outputs: Set<string>;
  /** The nodes that read each tensor, in graph order. */
  readers: Map<string, OnnxNode[]>;
  /** The node that writes each tensor. */
  producers: Map<string, OnnxNode>;
}

/** The index of `model`, over `nodes` (the model's own, or copies of them a pass will edit). */
export function indexGraph(model: OnnxModel, nodes: readonly OnnxNode[] = model.nodes): GraphIndex {
  const readers = new Map<string, OnnxNode[]>();
  for (const n of nodes) for (const i of n.inputs) readers.set(i, [...(readers.get(i) ?? []), n]);
  return {
    inits: new Map(model.initializers.map((t) => [t.name, t])),
    outputs: new Set(model.outputs.map((o) => o.name)),
    readers,
    producers: new Map(nodes.flatMap((n) => n.outputs.map((o) => [o, n] as const))),
  };
}

export function floatData(t: OnnxTensor): Float32Array {
  if (t.dataType !== OnnxDataType.FLOAT) throw new Error(`${t.name}: not a float tensor`);
  return new Float32Array(t.raw.buffer.slice(t.raw.byteOffset, t.raw.byteOffset + t.raw.byteLength));
}

export function int64Data(t: OnnxTensor): number[] {
  const v = new DataView(t.raw.buffer, t.raw.byteOffset, t.raw.byteLength);
  return Array.from({ length: t.raw.byteLength / 8 }, (_, i) => Number(v.getBigInt64(i * 8, true)));
}

export function tensor(name: string, dataType: OnnxDataType, dims: number[], data: Float32Array | Int8Array | Uint8Array | Int32Array): OnnxTensor {
  return { name, dataType, dims, raw: new Uint8Array(data.buffer, data.byteOffset, data.byteLength) };
}
