// Static post-training quantization of a converted ONNX graph into QDQ form: QuantizeLinear/DequantizeLinear pairs
// that onnxruntime's CPU provider fuses into integer kernels (QLinearConv, QLinearAdd/Mul/Sigmoid/Concat, int8
// MaxPool/Resize). Weights: per-output-channel symmetric int8 (8 or 7 bits); biases: int32 at input scale x weight
// scale; activations: uint8 with a scale and zero point from calibrated ranges (models/calibration/*.json).
import type { WeightBits } from '../model-manifest.js';
import { foldIntoConvs } from './fold-into-convs.js';
import { floatData, indexGraph, tensor, type GraphIndex } from './graph-index.js';
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

/** The nodes kept in fp32 (keepFloat, and with keepOutputConvs the head convolutions) and each Conv's weight bits. */
function floatNodesAndWeightBits(model: OnnxModel, options: QuantizeOptions): { kept: Set<string>; weightBitsOf: (node: string) => WeightBits } {
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
  return { kept, weightBitsOf };
}

/** Every float tensor a quantized node reads or writes, when calibrated and not a graph output: those get a Q/DQ pair. */
function activationsToQuantize(model: OnnxModel, index: GraphIndex, kept: Set<string>, options: QuantizeOptions): Set<string> {
  const ops = options.ops ?? QUANTIZED_OPS;
  const quantNodes = model.nodes.filter((n) => ops.has(n.opType) && !kept.has(n.name));
  // A Conv whose only reader is a Relu/Clip gets its Q after that activation, not before: onnxruntime then drops
  // the activation into the integer convolution (the Q's range already clips), instead of a float Relu between.
  const intoActivation = (t: string) => {
    const r = index.readers.get(t) ?? [];
    return index.producers.get(t)?.opType === 'Conv' && r.length === 1 && (r[0]!.opType === 'Relu' || r[0]!.opType === 'Clip') && !kept.has(r[0]!.name);
  };
  const activations = new Set<string>();
  for (const n of quantNodes) {
    const dataInputs = n.opType === 'Resize' || n.opType === 'Clip' ? n.inputs.slice(0, 1) : n.inputs;
    for (const t of [...dataInputs, ...n.outputs]) {
      if (t && !index.inits.has(t) && !index.outputs.has(t) && options.ranges[t] && !intoActivation(t)) activations.add(t);
    }
  }
  return activations;
}

/** Each activation's uint8 parameters, its QuantizeLinear/DequantizeLinear pair and their initializers. */
interface ActivationPairs {
  params: Map<string, UInt8Params>;
  /** The dequantized name each quantized tensor's readers read instead. */
  dq: Map<string, string>;
  /** The pairs, in activation order; each is placed after its tensor's producer. */
  nodes: OnnxNode[];
  inits: OnnxTensor[];
}

function activationPairs(model: OnnxModel, activations: Set<string>, calibrated: Record<string, ActivationRange>): ActivationPairs {
  // A same-scale op's output takes its input's range (nodes are in topological order).
  const ranges = { ...calibrated };
  for (const n of model.nodes) {
    const from = ranges[n.inputs[0]!];
    if (SAME_SCALE_OPS.has(n.opType) && from) ranges[n.outputs[0]!] = from;
  }
  const pairs: ActivationPairs = { params: new Map(), dq: new Map(), nodes: [], inits: [] };
  for (const t of activations) {
    const p = uint8Params(ranges[t]!);
    pairs.params.set(t, p);
    const scale = `${t}/q_scale`;
    const zp = `${t}/q_zero_point`;
    pairs.inits.push(tensor(scale, OnnxDataType.FLOAT, [], Float32Array.of(p.scale)), tensor(zp, OnnxDataType.UINT8, [], Uint8Array.of(p.zeroPoint)));
    pairs.nodes.push(
      { name: `${t}/QuantizeLinear`, opType: 'QuantizeLinear', inputs: [t, scale, zp], outputs: [`${t}/q`], attributes: {} },
      { name: `${t}/DequantizeLinear`, opType: 'DequantizeLinear', inputs: [`${t}/q`, scale, zp], outputs: [`${t}/dq`], attributes: {} },
    );
    pairs.dq.set(t, `${t}/dq`);
  }
  return pairs;
}

function perChannel(): Record<string, OnnxAttributeValue> {
  return { axis: { kind: 'int', value: 0 } };
}

/** A per-channel constant `${base}_q` with its scales and zero points, and the DequantizeLinear that reads it. */
function dequantized(base: string, q: OnnxTensor, scales: Float32Array, zeroPoint: OnnxTensor, inits: OnnxTensor[]): OnnxNode {
  inits.push(q, tensor(`${base}_scale`, OnnxDataType.FLOAT, [scales.length], scales), zeroPoint);
  const inputs = [`${base}_q`, `${base}_scale`, `${base}_zero_point`];
  return { name: `${base}/DequantizeLinear`, opType: 'DequantizeLinear', inputs, outputs: [`${base}_dq`], attributes: perChannel() };
}

/**
 * A Conv's weight [M, C/group, kh, kw] in per-output-channel int8 and its bias in int32 at input scale x weight
 * scale, as DequantizeLinear nodes (pushed to `nodes`) whose outputs replace `inputs[1]` and `inputs[2]`.
 */
function quantizeConvConstants(n: OnnxNode, inputs: string[], inputScale: number, bits: WeightBits, inits: Map<string, OnnxTensor>, newInits: OnnxTensor[], nodes: OnnxNode[]): void {
  const w = inits.get(n.inputs[1]!)!;
  const channels = w.dims[0]!;
  const { q, scales } = quantizeWeights(floatData(w), channels, bits);
  const wName = `${n.name}/weight`;
  const wq = tensor(`${wName}_q`, OnnxDataType.INT8, w.dims, q);
  nodes.push(dequantized(wName, wq, scales, tensor(`${wName}_zero_point`, OnnxDataType.INT8, [channels], new Int8Array(channels)), newInits));
  inputs[1] = `${wName}_dq`;
  const biasName = n.inputs[2];
  if (!biasName || !inits.has(biasName)) return;
  const b = floatData(inits.get(biasName)!);
  const bScales = scales.map((s) => s * inputScale);
  const bq = Int32Array.from(b, (v, c) => Math.round(v / bScales[c]!));
  const bName = `${n.name}/bias`;
  const bqT = tensor(`${bName}_q`, OnnxDataType.INT32, [channels], bq);
  nodes.push(dequantized(bName, bqT, bScales, tensor(`${bName}_zero_point`, OnnxDataType.INT32, [channels], new Int32Array(channels)), newInits));
  inputs[2] = `${bName}_dq`;
}

/** `model` in QDQ form. Tensors without a calibrated range (and graph outputs) stay float. */
export function quantizeModel(source: OnnxModel, options: QuantizeOptions): OnnxModel {
  const model = foldIntoConvs(source);
  const index = indexGraph(model);
  const { kept, weightBitsOf } = floatNodesAndWeightBits(model, options);
  const activations = activationsToQuantize(model, index, kept, options);
  const pairs = activationPairs(model, activations, options.ranges);
  const newInits = [...pairs.inits];
  const nodes: OnnxNode[] = [];
  for (const n of model.nodes) {
    const inputs = n.inputs.map((i) => pairs.dq.get(i) ?? i);
    if (n.opType === 'Conv' && !kept.has(n.name) && activations.has(n.inputs[0]!) && index.inits.has(n.inputs[1]!)) {
      quantizeConvConstants(n, inputs, pairs.params.get(n.inputs[0]!)!.scale, weightBitsOf(n.name), index.inits, newInits, nodes);
    }
    nodes.push({ ...n, inputs });
    for (const o of n.outputs) {
      const i = pairs.nodes.findIndex((q) => q.inputs[0] === o);
      if (i >= 0) nodes.push(...pairs.nodes.splice(i, 2));
    }
  }
  // A quantized graph input (the image) has no producer: its pair goes first.
  nodes.unshift(...pairs.nodes);
  const usedInits = new Set(nodes.flatMap((n) => n.inputs));
  return {
    ...model,
    opset: Math.max(model.opset, QDQ_OPSET),
    nodes,
    initializers: [...model.initializers.filter((t) => usedInits.has(t.name)), ...newInits],
  };
}

/** The convolutions of a quantized graph that compute on integer weights: a DequantizeLinear of a constant feeds their weight. */
export function integerWeightConvs(quantized: OnnxModel): OnnxNode[] {
  const { inits, producers } = indexGraph(quantized);
  return quantized.nodes.filter((n) => {
    const weight = n.opType === 'Conv' ? producers.get(n.inputs[1]!) : undefined;
    return weight?.opType === 'DequantizeLinear' && inits.has(weight.inputs[0]!);
  });
}
