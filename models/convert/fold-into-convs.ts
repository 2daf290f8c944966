// Float graph rewrites before quantizing: what TF.js leaves around a convolution (a Pad before it, an unfolded batch
// norm and a Relu/Clip chain after it) folded into the convolution and one Clip, so that onnxruntime's integer
// kernels cover them. The same function in float, up to rounding.
import { floatData, indexGraph, int64Data, tensor, type GraphIndex } from './graph-index.js';
import { OnnxDataType, type OnnxModel, type OnnxNode, type OnnxTensor } from './onnx-writer.js';

const FLOAT_MAX = 3.4028234663852886e38;

/**
 * A zero-value constant Pad feeding only a Conv becomes the Conv's own pads (TF's stride-2 "SAME" convolutions
 * arrive as Pad + VALID Conv): the same numbers, and no float Pad between two quantized convolutions.
 */
export function foldPadsIntoConvs(model: OnnxModel): OnnxModel {
  const { inits, readers: consumers, outputs } = indexGraph(model);
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

/** The one node that reads `t`, when `t` is not also a graph output. */
function soleReader(index: GraphIndex, t: string): OnnxNode | undefined {
  const r = index.readers.get(t) ?? [];
  return r.length === 1 && !index.outputs.has(t) ? r[0]! : undefined;
}

/** `node` drops out: the one before it now writes its output (the name the rest of the graph reads). */
function absorb(index: GraphIndex, into: OnnxNode, node: OnnxNode, dropped: Set<OnnxNode>): void {
  index.readers.set(node.outputs[0]!, index.readers.get(node.outputs[0]!) ?? []);
  into.outputs = [node.outputs[0]!];
  dropped.add(node);
}

/** The per-channel Mul and Add chain after `conv` (an unfolded batch norm) folded into its weights and bias. */
function foldAffineIntoConv(conv: OnnxNode, index: GraphIndex, dropped: Set<OnnxNode>): OnnxTensor[] {
  if (conv.opType !== 'Conv' || !index.inits.has(conv.inputs[1]!)) return [];
  const w = index.inits.get(conv.inputs[1]!)!;
  const channels = w.dims[0]!;
  let weights: Float32Array | null = null;
  let bias: Float32Array | null = null;
  for (;;) {
    const next = soleReader(index, conv.outputs[0]!);
    if (!next || (next.opType !== 'Mul' && next.opType !== 'Add') || next.inputs.length !== 2) break;
    const constIndex = next.inputs[0] === conv.outputs[0] ? 1 : 0;
    const k = channelConstant(index.inits.get(next.inputs[constIndex]!), channels);
    if (!k) break;
    weights ??= floatData(w).slice();
    bias ??= conv.inputs[2] && index.inits.has(conv.inputs[2]) ? floatData(index.inits.get(conv.inputs[2])!).slice() : new Float32Array(channels);
    const per = weights.length / channels;
    for (let c = 0; c < channels; c++) {
      if (next.opType === 'Mul') {
        for (let i = c * per; i < (c + 1) * per; i++) weights[i]! *= k[c]!;
        bias[c]! *= k[c]!;
      } else {
        bias[c]! += k[c]!;
      }
    }
    absorb(index, conv, next, dropped);
  }
  if (!weights || !bias) return [];
  const wt = tensor(`${conv.name}/folded_weights`, OnnxDataType.FLOAT, w.dims, weights);
  const bt = tensor(`${conv.name}/folded_bias`, OnnxDataType.FLOAT, [channels], bias);
  conv.inputs = [conv.inputs[0]!, wt.name, bt.name];
  return [wt, bt];
}

/** A Relu's or Clip's bounds; NaN where a Clip's bound is not a float constant. */
function clipBounds(index: GraphIndex, act: OnnxNode): [number, number] {
  const bound = (name: string | undefined, fallback: number) => {
    const t = name ? index.inits.get(name) : undefined;
    return t && t.dataType === OnnxDataType.FLOAT && t.raw.byteLength === 4 ? floatData(t)[0]! : name ? NaN : fallback;
  };
  if (act.opType === 'Relu') return [0, Infinity];
  return [bound(act.inputs[1], -Infinity), bound(act.inputs[2], Infinity)];
}

/** A chain of Relu/Clip nodes from `act` (TF's relu then clip_by_value) merged into one Clip. */
function mergeClipChain(act: OnnxNode, index: GraphIndex, dropped: Set<OnnxNode>): OnnxTensor[] {
  if (dropped.has(act) || (act.opType !== 'Relu' && act.opType !== 'Clip')) return [];
  let [lo, hi] = clipBounds(index, act);
  if (Number.isNaN(lo) || Number.isNaN(hi)) return [];
  let merged = false;
  for (let next = soleReader(index, act.outputs[0]!); next?.opType === 'Clip' || next?.opType === 'Relu'; next = soleReader(index, act.outputs[0]!)) {
    const [nlo, nhi] = clipBounds(index, next);
    if (Number.isNaN(nlo) || Number.isNaN(nhi)) break;
    lo = Math.max(lo, nlo);
    hi = Math.min(hi, nhi);
    absorb(index, act, next, dropped);
    merged = true;
  }
  if (!merged) return [];
  const loT = tensor(`${act.name}/merged_min`, OnnxDataType.FLOAT, [], Float32Array.of(Math.max(lo, -FLOAT_MAX)));
  const hiT = tensor(`${act.name}/merged_max`, OnnxDataType.FLOAT, [], Float32Array.of(Math.min(hi, FLOAT_MAX)));
  act.opType = 'Clip';
  act.attributes = {};
  act.inputs = [act.inputs[0]!, loT.name, hiT.name];
  return [loT, hiT];
}

/**
 * Folds what TF.js leaves after a convolution into it and its activation, so that onnxruntime's integer kernels
 * cover them: a per-channel Mul then Add (unfolded batch norm) into the weights and bias, and a Relu/Clip chain
 * (TF's relu then clip_by_value) into one Clip. The same function in float, up to rounding.
 */
export function foldIntoConvs(source: OnnxModel): OnnxModel {
  const model = foldPadsIntoConvs(source);
  const nodes = model.nodes.map((n) => ({ ...n, inputs: [...n.inputs] }));
  const index = indexGraph(model, nodes);
  const dropped = new Set<OnnxNode>();
  const added: OnnxTensor[] = [];
  for (const conv of nodes) added.push(...foldAffineIntoConv(conv, index, dropped));
  for (const act of nodes) added.push(...mergeClipChain(act, index, dropped));
  const kept = nodes.filter((n) => !dropped.has(n));
  for (const n of kept) n.name = n.outputs[0]!;
  const used = new Set(kept.flatMap((n) => n.inputs));
  return { ...model, nodes: kept, initializers: [...model.initializers, ...added].filter((t) => used.has(t.name)) };
}
