// Static post-training quantization of a converted ONNX graph into QDQ form: QuantizeLinear/DequantizeLinear pairs
// that onnxruntime's CPU provider fuses into integer kernels (QLinearConv, QLinearAdd/Mul/Sigmoid/Concat, int8
// MaxPool/Resize). Weights: per-output-channel symmetric int8; biases: int32 at input scale x weight scale;
// activations: uint8 with a scale and zero point from calibrated ranges (models/calibration/*.json).
import { OnnxDataType, type OnnxAttributeValue, type OnnxModel, type OnnxNode, type OnnxTensor } from './onnx-writer.js';

/** Ops whose float inputs and outputs get Q/DQ pairs, so onnxruntime can run them on 8-bit data. */
export const QUANTIZED_OPS = new Set(['Conv', 'Add', 'Mul', 'Sigmoid', 'Concat', 'MaxPool', 'Resize', 'Relu', 'Clip']);

/** Ops that move values without computing new ones: their output keeps the input's scale, so onnxruntime runs them on uint8 directly. */
const SAME_SCALE_OPS = new Set(['MaxPool', 'Resize']);

/** QuantizeLinear with per-axis scales needs opset 13; the converter's ops mean the same in 11 and 13. */
export const QDQ_OPSET = 13;

export interface ActivationRange {
  min: number;
  max: number;
}

export interface QuantizeOptions {
  /** Calibrated range of each activation tensor to quantize (by tensor name). */
  ranges: Record<string, ActivationRange>;
  /**
   * Nodes kept in fp32, by name or name prefix (a layer's scope ending in '/' keeps its conv and activation): their
   * inputs and outputs get no Q/DQ pair of their own and their weights stay float.
   */
  keepFloat?: readonly string[];
  /** Op types to quantize (default QUANTIZED_OPS). */
  ops?: ReadonlySet<string>;
}

export interface UInt8Params {
  scale: number;
  zeroPoint: number;
}

/** Asymmetric uint8 parameters for a range; the range is widened to hold 0 so that zero (padding, ReLU) is exact. */
export function uint8Params(range: ActivationRange): UInt8Params {
  const min = Math.min(0, range.min);
  const max = Math.max(0, range.max);
  const scale = max > min ? (max - min) / 255 : 1;
  const zeroPoint = Math.min(255, Math.max(0, Math.round(-min / scale)));
  return { scale, zeroPoint };
}

function floatData(t: OnnxTensor): Float32Array {
  if (t.dataType !== OnnxDataType.FLOAT) throw new Error(`${t.name}: not a float tensor`);
  return new Float32Array(t.raw.buffer.slice(t.raw.byteOffset, t.raw.byteOffset + t.raw.byteLength));
}

function tensor(name: string, dataType: OnnxDataType, dims: number[], data: Float32Array | Int8Array | Uint8Array | Int32Array): OnnxTensor {
  return { name, dataType, dims, raw: new Uint8Array(data.buffer, data.byteOffset, data.byteLength) };
}

/** Symmetric int8 weights use -127..127 (not -128: the range stays symmetric around the zero point 0). */
const WEIGHT_MAX = 127;
/** Per-output-channel (axis 0) symmetric int8 weights: scale = max|w| / 127 per channel. */
export function quantizeWeights(w: Float32Array, channels: number): { q: Int8Array; scales: Float32Array } {
  const per = w.length / channels;
  const q = new Int8Array(w.length);
  const scales = new Float32Array(channels);
  for (let c = 0; c < channels; c++) {
    let amax = 0;
    for (let i = c * per; i < (c + 1) * per; i++) amax = Math.max(amax, Math.abs(w[i]!));
    const s = amax > 0 ? amax / WEIGHT_MAX : 1;
    scales[c] = s;
    for (let i = c * per; i < (c + 1) * per; i++) q[i] = Math.max(-WEIGHT_MAX, Math.min(WEIGHT_MAX, Math.round(w[i]! / s)));
  }
  return { q, scales };
}

function int64Data(t: OnnxTensor): number[] {
  const v = new DataView(t.raw.buffer, t.raw.byteOffset, t.raw.byteLength);
  return Array.from({ length: t.raw.byteLength / 8 }, (_, i) => Number(v.getBigInt64(i * 8, true)));
}

/**
 * A zero-value constant Pad feeding only a Conv becomes the Conv's own pads (TF's stride-2 "SAME" convolutions
 * arrive as Pad + VALID Conv): the same numbers, and no float Pad between two quantized convolutions.
 */
export function foldPadsIntoConvs(model: OnnxModel): OnnxModel {
  const inits = new Map(model.initializers.map((t) => [t.name, t]));
  const consumers = new Map<string, OnnxNode[]>();
  for (const n of model.nodes) for (const i of n.inputs) consumers.set(i, [...(consumers.get(i) ?? []), n]);
  const outputs = new Set(model.outputs.map((o) => o.name));
  const dropped = new Set<OnnxNode>();
  const nodes = model.nodes.map((n) => ({ ...n, attributes: { ...n.attributes } }));
  const byName = new Map(nodes.map((n) => [n.name, n]));
  for (const pad of model.nodes) {
    if (pad.opType !== 'Pad' || pad.inputs.length !== 2 || outputs.has(pad.outputs[0]!)) continue;
    const mode = pad.attributes['mode'];
    const padsInit = inits.get(pad.inputs[1]!);
    const users = consumers.get(pad.outputs[0]!) ?? [];
    if ((mode && !(mode.kind === 'string' && mode.value === 'constant')) || !padsInit || users.length !== 1 || users[0]!.opType !== 'Conv') continue;
    const p = int64Data(padsInit);
    if (p.length !== 8 || p[0] !== 0 || p[1] !== 0 || p[4] !== 0 || p[5] !== 0) continue;
    const conv = byName.get(users[0]!.name)!;
    const old = conv.attributes['pads'];
    const cp = old?.kind === 'ints' ? old.value : [0, 0, 0, 0];
    conv.attributes['pads'] = { kind: 'ints', value: [cp[0]! + p[2]!, cp[1]! + p[3]!, cp[2]! + p[6]!, cp[3]! + p[7]!] };
    conv.inputs = conv.inputs.map((i) => (i === pad.outputs[0] ? pad.inputs[0]! : i));
    dropped.add(byName.get(pad.name)!);
  }
  const kept = nodes.filter((n) => !dropped.has(n));
  const used = new Set(kept.flatMap((n) => n.inputs));
  return { ...model, nodes: kept, initializers: model.initializers.filter((t) => used.has(t.name)) };
}

/** `model` in QDQ form. Tensors without a calibrated range (and graph outputs) stay float. */
export function quantizeModel(source: OnnxModel, options: QuantizeOptions): OnnxModel {
  const model = foldPadsIntoConvs(source);
  const prefixes = options.keepFloat ?? [];
  const kept = new Set(model.nodes.filter((n) => prefixes.some((p) => n.name === p || (p.endsWith('/') && n.name.startsWith(p)))).map((n) => n.name));
  const keep = { has: (name: string) => kept.has(name) };
  const inits = new Map(model.initializers.map((t) => [t.name, t]));
  const outputs = new Set(model.outputs.map((o) => o.name));
  const newInits: OnnxTensor[] = [];
  const usedInits = new Set<string>();
  const ops = options.ops ?? QUANTIZED_OPS;
  const quantNodes = model.nodes.filter((n) => ops.has(n.opType) && !keep.has(n.name));

  // Activations: every float tensor a quantized node reads or writes, when calibrated and not a graph output.
  const activations = new Set<string>();
  for (const n of quantNodes) {
    const dataInputs = n.opType === 'Resize' || n.opType === 'Clip' ? n.inputs.slice(0, 1) : n.inputs;
    for (const t of [...dataInputs, ...n.outputs]) {
      if (t && !inits.has(t) && !outputs.has(t) && options.ranges[t]) activations.add(t);
    }
  }
  // A same-scale op's output takes its input's range (nodes are in topological order).
  const ranges = { ...options.ranges };
  for (const n of model.nodes) {
    const from = ranges[n.inputs[0]!];
    if (SAME_SCALE_OPS.has(n.opType) && from) ranges[n.outputs[0]!] = from;
  }
  const params = new Map<string, UInt8Params>();
  const dq = new Map<string, string>();
  const qdqNodes: OnnxNode[] = [];
  for (const t of activations) {
    const p = uint8Params(ranges[t]!);
    params.set(t, p);
    const scale = `${t}/q_scale`;
    const zp = `${t}/q_zero_point`;
    newInits.push(tensor(scale, OnnxDataType.FLOAT, [], Float32Array.of(p.scale)), tensor(zp, OnnxDataType.UINT8, [], Uint8Array.of(p.zeroPoint)));
    qdqNodes.push(
      { name: `${t}/QuantizeLinear`, opType: 'QuantizeLinear', inputs: [t, scale, zp], outputs: [`${t}/q`], attributes: {} },
      { name: `${t}/DequantizeLinear`, opType: 'DequantizeLinear', inputs: [`${t}/q`, scale, zp], outputs: [`${t}/dq`], attributes: {} },
    );
    dq.set(t, `${t}/dq`);
  }

  const nodes: OnnxNode[] = [];
  for (const n of model.nodes) {
    const inputs = n.inputs.map((i) => dq.get(i) ?? i);
    const isQuant = n.opType === 'Conv' && !keep.has(n.name) && activations.has(n.inputs[0]!) && inits.has(n.inputs[1]!);
    if (isQuant) {
      // Conv weight [M, C/group, kh, kw]: per-output-channel int8; bias int32 at input scale x weight scale.
      const w = inits.get(n.inputs[1]!)!;
      const channels = w.dims[0]!;
      const { q, scales } = quantizeWeights(floatData(w), channels);
      const wName = `${n.name}/weight`;
      newInits.push(
        tensor(`${wName}_q`, OnnxDataType.INT8, w.dims, q),
        tensor(`${wName}_scale`, OnnxDataType.FLOAT, [channels], scales),
        tensor(`${wName}_zero_point`, OnnxDataType.INT8, [channels], new Int8Array(channels)),
      );
      const axis: Record<string, OnnxAttributeValue> = { axis: { kind: 'int', value: 0 } };
      nodes.push({ name: `${wName}/DequantizeLinear`, opType: 'DequantizeLinear', inputs: [`${wName}_q`, `${wName}_scale`, `${wName}_zero_point`], outputs: [`${wName}_dq`], attributes: axis });
      inputs[1] = `${wName}_dq`;
      const biasName = n.inputs[2];
      if (biasName && inits.has(biasName)) {
        const b = floatData(inits.get(biasName)!);
        const sIn = params.get(n.inputs[0]!)!.scale;
        const bScales = scales.map((s) => s * sIn);
        const bq = Int32Array.from(b, (v, c) => Math.round(v / bScales[c]!));
        const bName = `${n.name}/bias`;
        newInits.push(
          tensor(`${bName}_q`, OnnxDataType.INT32, [channels], bq),
          tensor(`${bName}_scale`, OnnxDataType.FLOAT, [channels], bScales),
          tensor(`${bName}_zero_point`, OnnxDataType.INT32, [channels], new Int32Array(channels)),
        );
        nodes.push({ name: `${bName}/DequantizeLinear`, opType: 'DequantizeLinear', inputs: [`${bName}_q`, `${bName}_scale`, `${bName}_zero_point`], outputs: [`${bName}_dq`], attributes: axis });
        inputs[2] = `${bName}_dq`;
      }
    }
    nodes.push({ ...n, inputs });
    for (const o of n.outputs) {
      const i = qdqNodes.findIndex((q) => q.inputs[0] === o);
      if (i >= 0) nodes.push(...qdqNodes.splice(i, 2));
    }
  }
  // A quantized graph input (the image) has no producer: its pair goes first.
  nodes.unshift(...qdqNodes);
  for (const n of nodes) for (const i of n.inputs) usedInits.add(i);
  return {
    ...model,
    opset: Math.max(model.opset, QDQ_OPSET),
    nodes,
    initializers: [...model.initializers.filter((t) => usedInits.has(t.name)), ...newInits],
  };
}
