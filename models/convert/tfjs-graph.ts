// Reads a TensorFlow.js graph model (model.json + weight shards) into plain nodes and constant tensors.
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';

export type DType = 'float32' | 'int32' | 'bool';

export interface Tensor {
  dtype: DType;
  shape: number[];
  data: Float32Array | Int32Array;
}

export interface TfAttr {
  i?: string;
  f?: number;
  b?: boolean;
  s?: string;
  type?: string;
  list?: { i?: string[]; s?: string[]; f?: number[] };
  shape?: { dim?: { size: string }[] };
  tensor?: unknown;
}

export interface TfNode {
  name: string;
  op: string;
  inputs: string[];
  attr: Record<string, TfAttr>;
}

export interface TfGraph {
  nodes: Map<string, TfNode>;
  weights: Map<string, Tensor>;
}

interface WeightEntry {
  name: string;
  shape: number[];
  dtype: 'float32' | 'int32' | 'bool';
  quantization?: { dtype: 'float16' | 'uint8' | 'uint16'; scale?: number; min?: number; original_dtype?: string };
}

interface ModelJson {
  modelTopology: { node: { name: string; op: string; input?: string[]; attr?: Record<string, TfAttr> }[] };
  weightsManifest: { paths: string[]; weights: WeightEntry[] }[];
}

export function sizeOf(shape: number[]): number {
  return shape.reduce((a, b) => a * b, 1);
}

function float16ToFloat32(h: number): number {
  const sign = h & 0x8000 ? -1 : 1;
  const exp = (h >> 10) & 0x1f;
  const frac = h & 0x3ff;
  if (exp === 0) return sign * 2 ** -14 * (frac / 1024);
  if (exp === 0x1f) return frac ? NaN : sign * Infinity;
  return sign * 2 ** (exp - 15) * (1 + frac / 1024);
}

function decodeWeight(entry: WeightEntry, bytes: Buffer, offset: number): { tensor: Tensor; byteLength: number } {
  const count = sizeOf(entry.shape);
  const q = entry.quantization;
  const view = new DataView(bytes.buffer, bytes.byteOffset + offset);
  if (q) {
    const data = new Float32Array(count);
    if (q.dtype === 'float16') {
      for (let i = 0; i < count; i++) data[i] = float16ToFloat32(view.getUint16(i * 2, true));
      return { tensor: { dtype: 'float32', shape: entry.shape, data }, byteLength: count * 2 };
    }
    const width = q.dtype === 'uint8' ? 1 : 2;
    const scale = q.scale ?? 1;
    const min = q.min ?? 0;
    for (let i = 0; i < count; i++) {
      const v = width === 1 ? view.getUint8(i) : view.getUint16(i * 2, true);
      data[i] = v * scale + min;
    }
    if (entry.dtype === 'int32') {
      return { tensor: { dtype: 'int32', shape: entry.shape, data: Int32Array.from(data, Math.round) }, byteLength: count * width };
    }
    return { tensor: { dtype: 'float32', shape: entry.shape, data }, byteLength: count * width };
  }
  if (entry.dtype === 'float32') {
    const data = new Float32Array(count);
    for (let i = 0; i < count; i++) data[i] = view.getFloat32(i * 4, true);
    return { tensor: { dtype: 'float32', shape: entry.shape, data }, byteLength: count * 4 };
  }
  if (entry.dtype === 'int32') {
    const data = new Int32Array(count);
    for (let i = 0; i < count; i++) data[i] = view.getInt32(i * 4, true);
    return { tensor: { dtype: 'int32', shape: entry.shape, data }, byteLength: count * 4 };
  }
  const data = new Int32Array(count);
  for (let i = 0; i < count; i++) data[i] = view.getUint8(i);
  return { tensor: { dtype: 'bool', shape: entry.shape, data }, byteLength: count };
}

/** Strips TF's ":0" output suffix and "^" control-dependency prefix. */
export function tensorName(input: string): string {
  return input.replace(/^\^/, '').replace(/:0$/, '');
}

export function loadTfjsGraph(modelJsonPath: string): TfGraph {
  const json = JSON.parse(readFileSync(modelJsonPath, 'utf8')) as ModelJson;
  const nodes = new Map<string, TfNode>();
  for (const n of json.modelTopology.node) {
    nodes.set(n.name, {
      name: n.name,
      op: n.op,
      // Control inputs ("^x") carry no data; conversion ignores them.
      inputs: (n.input ?? []).filter((i) => !i.startsWith('^')).map(tensorName),
      attr: n.attr ?? {},
    });
  }
  const weights = new Map<string, Tensor>();
  for (const group of json.weightsManifest) {
    // Weights of a group lie back to back across its shards, in manifest order.
    const bytes = Buffer.concat(group.paths.map((p) => readFileSync(join(dirname(modelJsonPath), p))));
    let offset = 0;
    for (const entry of group.weights) {
      const { tensor, byteLength } = decodeWeight(entry, bytes, offset);
      weights.set(entry.name, tensor);
      offset += byteLength;
    }
    if (offset !== bytes.length) {
      throw new Error(`${modelJsonPath}: weights use ${offset} bytes but shards hold ${bytes.length}`);
    }
  }
  return { nodes, weights };
}

export function attrInts(node: TfNode, name: string): number[] {
  return (node.attr[name]?.list?.i ?? []).map(Number);
}

export function attrString(node: TfNode, name: string): string {
  const s = node.attr[name]?.s;
  return s === undefined ? '' : Buffer.from(s, 'base64').toString('utf8');
}

export function attrStrings(node: TfNode, name: string): string[] {
  return (node.attr[name]?.list?.s ?? []).map((s) => Buffer.from(s, 'base64').toString('utf8'));
}

export function attrInt(node: TfNode, name: string, fallback = 0): number {
  const v = node.attr[name]?.i;
  return v === undefined ? fallback : Number(v);
}

export function attrBool(node: TfNode, name: string): boolean {
  return node.attr[name]?.b === true;
}

export function attrFloat(node: TfNode, name: string, fallback = 0): number {
  return node.attr[name]?.f ?? fallback;
}
