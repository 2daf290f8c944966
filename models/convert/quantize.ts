// Static post-training quantization of a converted ONNX graph into QDQ form: QuantizeLinear/DequantizeLinear pairs
// that onnxruntime's CPU provider fuses into integer kernels (QLinearConv, QLinearAdd/Mul/Sigmoid/Concat, int8
// MaxPool/Resize). Weights: per-output-channel symmetric int8 (8 or 7 bits); biases: int32 at input scale x weight
// scale; activations: uint8 with a scale and zero point from calibrated ranges (models/calibration/*.json).
import type { WeightBits } from '../model-manifest.js';
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
  /** Keep in fp32 each Conv whose output is a graph output (directly or through a layout Transpose): the heads. */
  keepOutputConvs?: boolean;
  /**
   * 8 (default): weights in -127..127. 7: in -63..63, so that two uint8 x int8 products always add up within 16 bits
   * (2 x 255 x 63 = 32130): onnxruntime's fast int8 kernels on CPUs without VNNI then cannot saturate (docs/int8.md).
   */
  weightBits?: WeightBits;
  /**
   * Convolutions with 7-bit weights whatever `weightBits` says, by name or name prefix as in keepFloat: a model can
   * run its layers that lose nothing at 7 bits on the fast kernels and keep 8 bits where accuracy needs them.
   */
  sevenBitWeights?: readonly string[];
}

/** Whether a node's name is one of `names` or lies under one of them that ends in '/' (a layer's scope). */
function named(names: readonly string[], node: string): boolean {
  return names.some((p) => node === p || (p.endsWith('/') && node.startsWith(p)));
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

/**
 * Per-output-channel (axis 0) symmetric int8 weights: scale = max|w| / m per channel, m = 2^(bits-1) - 1 (127 or
 * 63; not -128: the range stays symmetric around the zero point 0).
 */
export function quantizeWeights(w: Float32Array, channels: number, bits: WeightBits = 8): { q: Int8Array; scales: Float32Array } {
  const max = 2 ** (bits - 1) - 1;
  const per = w.length / channels;
  const q = new Int8Array(w.length);
  const scales = new Float32Array(channels);
  for (let c = 0; c < channels; c++) {
    let amax = 0;
    for (let i = c * per; i < (c + 1) * per; i++) amax = Math.max(amax, Math.abs(w[i]!));
    const s = amax > 0 ? amax / max : 1;
    scales[c] = s;
    for (let i = c * per; i < (c + 1) * per; i++) q[i] = Math.max(-max, Math.min(max, Math.round(w[i]! / s)));
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

/** A per-channel constant (scalar, [M] or [1,M,1,1]) as M values, or null. */
function channelConstant(t: OnnxTensor | undefined, channels: number): Float32Array | null {
  if (!t || t.dataType !== OnnxDataType.FLOAT) return null;
  const v = floatData(t);
  const perChannel = t.dims.filter((d) => d !== 1).length <= 1 && (t.dims.length < 4 || t.dims[1] === v.length);
  if (v.length === 1) return new Float32Array(channels).fill(v[0]!);
  return perChannel && v.length === channels ? v : null;
}

/**
 * Folds what TF.js leaves after a convolution into it and its activation, so that onnxruntime's integer kernels
 * cover them: a per-channel Mul then Add (unfolded batch norm) into the weights and bias, and a Relu/Clip chain
 * (TF's relu then clip_by_value) into one Clip. The same function in float, up to rounding.
 */
export function foldIntoConvs(source: OnnxModel): OnnxModel {
  const model = foldPadsIntoConvs(source);
  const inits = new Map(model.initializers.map((t) => [t.name, t]));
  const outputs = new Set(model.outputs.map((o) => o.name));
  const nodes = model.nodes.map((n) => ({ ...n, inputs: [...n.inputs] }));
  const readers = new Map<string, OnnxNode[]>();
  for (const n of nodes) for (const i of n.inputs) readers.set(i, [...(readers.get(i) ?? []), n]);
  const soleReader = (t: string) => {
    const r = readers.get(t) ?? [];
    return r.length === 1 && !outputs.has(t) ? r[0]! : undefined;
  };
  const dropped = new Set<OnnxNode>();
  const added: OnnxTensor[] = [];
  for (const conv of nodes) {
    if (conv.opType !== 'Conv' || !inits.has(conv.inputs[1]!)) continue;
    const w = inits.get(conv.inputs[1]!)!;
    const channels = w.dims[0]!;
    let weights: Float32Array | null = null;
    let bias: Float32Array | null = null;
    for (;;) {
      const next = soleReader(conv.outputs[0]!);
      if (!next || (next.opType !== 'Mul' && next.opType !== 'Add') || next.inputs.length !== 2) break;
      const constIndex = next.inputs[0] === conv.outputs[0] ? 1 : 0;
      const k = channelConstant(inits.get(next.inputs[constIndex]!), channels);
      if (!k) break;
      weights ??= floatData(w).slice();
      bias ??= conv.inputs[2] && inits.has(conv.inputs[2]) ? floatData(inits.get(conv.inputs[2])!).slice() : new Float32Array(channels);
      const per = weights.length / channels;
      for (let c = 0; c < channels; c++) {
        if (next.opType === 'Mul') {
          for (let i = c * per; i < (c + 1) * per; i++) weights[i]! *= k[c]!;
          bias[c]! *= k[c]!;
        } else {
          bias[c]! += k[c]!;
        }
      }
      // the conv now writes the folded node's output (its name is what the rest of the graph reads)
      readers.set(next.outputs[0]!, readers.get(next.outputs[0]!) ?? []);
      conv.outputs = [next.outputs[0]!];
      dropped.add(next);
    }
    if (weights && bias) {
      const wt = tensor(`${conv.name}/folded_weights`, OnnxDataType.FLOAT, w.dims, weights);
      const bt = tensor(`${conv.name}/folded_bias`, OnnxDataType.FLOAT, [channels], bias);
      added.push(wt, bt);
      conv.inputs = [conv.inputs[0]!, wt.name, bt.name];
    }
  }
  const bound = (name: string | undefined, fallback: number) => {
    const t = name ? inits.get(name) : undefined;
    return t && t.dataType === OnnxDataType.FLOAT && t.raw.byteLength === 4 ? floatData(t)[0]! : name ? NaN : fallback;
  };
  for (const act of nodes) {
    if (dropped.has(act) || (act.opType !== 'Relu' && act.opType !== 'Clip')) continue;
    let lo = act.opType === 'Relu' ? 0 : bound(act.inputs[1], -Infinity);
    let hi = act.opType === 'Relu' ? Infinity : bound(act.inputs[2], Infinity);
    if (Number.isNaN(lo) || Number.isNaN(hi)) continue;
    let merged = false;
    for (let next = soleReader(act.outputs[0]!); next?.opType === 'Clip' || next?.opType === 'Relu'; next = soleReader(act.outputs[0]!)) {
      const nlo = next.opType === 'Relu' ? 0 : bound(next.inputs[1], -Infinity);
      const nhi = next.opType === 'Relu' ? Infinity : bound(next.inputs[2], Infinity);
      if (Number.isNaN(nlo) || Number.isNaN(nhi)) break;
      lo = Math.max(lo, nlo);
      hi = Math.min(hi, nhi);
      act.outputs = [next.outputs[0]!];
      readers.set(next.outputs[0]!, readers.get(next.outputs[0]!) ?? []);
      dropped.add(next);
      merged = true;
    }
    if (!merged) continue;
    const loT = tensor(`${act.name}/merged_min`, OnnxDataType.FLOAT, [], Float32Array.of(Math.max(lo, -3.4028234663852886e38)));
    const hiT = tensor(`${act.name}/merged_max`, OnnxDataType.FLOAT, [], Float32Array.of(Math.min(hi, 3.4028234663852886e38)));
    added.push(loT, hiT);
    act.opType = 'Clip';
    act.attributes = {};
    act.inputs = [act.inputs[0]!, loT.name, hiT.name];
  }
  const kept = nodes.filter((n) => !dropped.has(n));
  for (const n of kept) n.name = n.outputs[0]!;
  const used = new Set(kept.flatMap((n) => n.inputs));
  return { ...model, nodes: kept, initializers: [...model.initializers, ...added].filter((t) => used.has(t.name)) };
}

/** `model` in QDQ form. Tensors without a calibrated range (and graph outputs) stay float. */
export function quantizeModel(source: OnnxModel, options: QuantizeOptions): OnnxModel {
  const model = foldIntoConvs(source);
  const prefixes = options.keepFloat ?? [];
  const kept = new Set(model.nodes.filter((n) => named(prefixes, n.name)).map((n) => n.name));
  const sevenBit = options.sevenBitWeights ?? [];
  // a name that matches no convolution is a typo or a stale list (the graph changed): say so, not quantize otherwise
  const unmatched = sevenBit.filter((name) => !model.nodes.some((n) => n.opType === 'Conv' && named([name], n.name)));
  if (unmatched.length > 0) throw new Error(`sevenBitWeights: no convolution named ${unmatched.map((n) => JSON.stringify(n)).join(', ')}`);
  const weightBitsOf = (node: string): WeightBits => (named(sevenBit, node) ? 7 : (options.weightBits ?? 8));
  if (options.keepOutputConvs) {
    const outs = new Set(model.outputs.map((o) => o.name));
    const toOutput = new Set(model.nodes.filter((n) => n.opType === 'Transpose' && outs.has(n.outputs[0]!)).map((n) => n.inputs[0]!));
    for (const n of model.nodes) if (n.opType === 'Conv' && (outs.has(n.outputs[0]!) || toOutput.has(n.outputs[0]!))) kept.add(n.name);
  }
  const keep = { has: (name: string) => kept.has(name) };
  const inits = new Map(model.initializers.map((t) => [t.name, t]));
  const outputs = new Set(model.outputs.map((o) => o.name));
  const newInits: OnnxTensor[] = [];
  const usedInits = new Set<string>();
  const ops = options.ops ?? QUANTIZED_OPS;
  const quantNodes = model.nodes.filter((n) => ops.has(n.opType) && !keep.has(n.name));

  // A Conv whose only reader is a Relu/Clip gets its Q after that activation, not before: onnxruntime then drops
  // the activation into the integer convolution (the Q's range already clips), instead of a float Relu between.
  const readers = new Map<string, OnnxNode[]>();
  for (const n of model.nodes) for (const i of n.inputs) readers.set(i, [...(readers.get(i) ?? []), n]);
  const producers = new Map(model.nodes.flatMap((n) => n.outputs.map((o) => [o, n] as const)));
  const intoActivation = (t: string) => {
    const r = readers.get(t) ?? [];
    return producers.get(t)?.opType === 'Conv' && r.length === 1 && (r[0]!.opType === 'Relu' || r[0]!.opType === 'Clip') && !keep.has(r[0]!.name);
  };
  // Activations: every float tensor a quantized node reads or writes, when calibrated and not a graph output.
  const activations = new Set<string>();
  for (const n of quantNodes) {
    const dataInputs = n.opType === 'Resize' || n.opType === 'Clip' ? n.inputs.slice(0, 1) : n.inputs;
    for (const t of [...dataInputs, ...n.outputs]) {
      if (t && !inits.has(t) && !outputs.has(t) && options.ranges[t] && !intoActivation(t)) activations.add(t);
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
      const { q, scales } = quantizeWeights(floatData(w), channels, weightBitsOf(n.name));
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
