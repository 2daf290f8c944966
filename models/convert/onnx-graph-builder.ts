// The ONNX graph the converter writes: unique tensor names, initializers from constant tensors, nodes named after
// their output, and the layout Transposes between TF's NHWC and ONNX's NCHW (each made once per value).
import { shapeTensor } from './const-eval.js';
import { OnnxDataType, type OnnxAttributeValue, type OnnxNode, type OnnxTensor } from './onnx-writer.js';
import type { DType, Tensor } from './tfjs-graph.js';
import { NCHW_TO_NHWC, NHWC_TO_NCHW, type DynValue, type Value } from './tf-values.js';

/** Which importer the file is for: OpenCV 4.6 needs Clip's bounds as attributes, which only opset < 11 allows. */
export type OnnxTarget = 'opencv' | 'ort';

export function ints(value: number[]): OnnxAttributeValue {
  return { kind: 'ints', value };
}
export function int(value: number): OnnxAttributeValue {
  return { kind: 'int', value };
}
export function float(value: number): OnnxAttributeValue {
  return { kind: 'float', value };
}
export function str(value: string): OnnxAttributeValue {
  return { kind: 'string', value };
}

function onnxType(dtype: DType): OnnxDataType {
  return dtype === 'float32' ? OnnxDataType.FLOAT : dtype === 'int32' ? OnnxDataType.INT32 : OnnxDataType.BOOL;
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

export class OnnxGraphBuilder {
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
