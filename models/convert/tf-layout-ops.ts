// TF ops that move, pad, resize, slice or reduce values: where each keeps NCHW order and where it needs TF's own.
import { normalizeAxis, stridedSliceSpec } from './const-eval.js';
import { int, ints, str } from './onnx-graph-builder.js';
import { transposeTensor } from './tensor-transform.js';
import { attrBool, attrInt, attrInts, sizeOf, tensorName, type TfNode } from './tfjs-graph.js';
import type { OpContext } from './tf-op-context.js';
import { constOf, dyn, NHWC_TO_NCHW, out, shapeOf, type Value } from './tf-values.js';

export function reshape(ctx: OpContext, node: TfNode, inputs: Value[], name: string): Value {
  const b = ctx.b;
  const x = dyn(node, inputs[0]);
  const target = [...constOf(node, inputs[1]).data];
  const known = target.filter((d) => d !== -1).reduce((p, q) => p * q, 1);
  const shape = target.map((d) => (d === -1 ? sizeOf(x.shape) / known : d));
  const result = b.node('Reshape', [b.tfLayout(x, node.name), b.ints64(shape, `${name}/shape`)], name);
  return out(node, shape, false, result);
}

export function squeeze(ctx: OpContext, node: TfNode, inputs: Value[], name: string): Value {
  const b = ctx.b;
  const x = dyn(node, inputs[0]);
  const dims = attrInts(node, 'squeeze_dims');
  const drop = new Set(dims.map((d) => normalizeAxis(d, x.shape.length)));
  const shape = x.shape.filter((d, i) => (drop.size ? !drop.has(i) : d !== 1));
  const result = b.node('Reshape', [b.tfLayout(x, node.name), b.ints64(shape, `${name}/shape`)], name);
  return out(node, shape, false, result);
}

export function depthToSpace(ctx: OpContext, node: TfNode, inputs: Value[], name: string): Value {
  const x = dyn(node, inputs[0]);
  const bs = attrInt(node, 'block_size');
  const [n, h, w, c] = x.shape;
  const result = ctx.b.node('DepthToSpace', [ctx.b.nchw(x)], name, { blocksize: int(bs), mode: str('DCR') });
  return out(node, [n, h * bs, w * bs, c / (bs * bs)], true, result);
}

/** In TF's own layout: YOLO heads permute 5-D [n, anchors, outputs, h, w] tensors. */
export function transpose(ctx: OpContext, node: TfNode, inputs: Value[], name: string): Value {
  const x = dyn(node, inputs[0]);
  const perm = [...constOf(node, inputs[1]).data];
  const result = ctx.b.node('Transpose', [ctx.b.tfLayout(x, node.name)], name, { perm: ints(perm) });
  return out(node, perm.map((p) => x.shape[p]), false, result);
}

export function pad(ctx: OpContext, node: TfNode, inputs: Value[], name: string): Value {
  const b = ctx.b;
  const x = dyn(node, inputs[0]);
  const p = [...constOf(node, inputs[1]).data];
  const rank = x.shape.length;
  const before = Array.from({ length: rank }, (_, i) => p[2 * i]);
  const after = Array.from({ length: rank }, (_, i) => p[2 * i + 1]);
  const value = inputs[2] ? constOf(node, inputs[2]).data[0] : 0;
  const shape = x.shape.map((d, i) => d + before[i] + after[i]);
  const useNchw = rank === 4;
  const order = useNchw ? NHWC_TO_NCHW : before.map((_, i) => i);
  const pads = [...order.map((i) => before[i]), ...order.map((i) => after[i])];
  const input = useNchw ? b.nchw(x) : b.tfLayout(x, node.name);
  const padInputs = [input, b.ints64(pads, `${name}/pads`)];
  if (value !== 0) padInputs.push(b.constant({ dtype: 'float32', shape: [], data: Float32Array.of(value) }, `${name}/value`));
  return out(node, shape, useNchw, b.node('Pad', padInputs, name, { mode: str('constant') }));
}

export function concat(ctx: OpContext, node: TfNode, inputs: Value[], name: string): Value {
  const b = ctx.b;
  const parts = inputs.slice(0, -1);
  const rank = shapeOf(parts[0]).length;
  const axis = normalizeAxis(constOf(node, inputs[inputs.length - 1]).data[0], rank);
  const shape = [...shapeOf(parts[0])];
  shape[axis] = parts.reduce((s, v) => s + shapeOf(v)[axis], 0);
  if (rank === 4) {
    const names = parts.map((v, i) =>
      v.kind === 'const' ? b.constant(transposeTensor(v.tensor, NHWC_TO_NCHW), `${name}/part${i}`) : b.nchw(v),
    );
    return out(node, shape, true, b.node('Concat', names, name, { axis: int(NHWC_TO_NCHW.indexOf(axis)) }));
  }
  const names = parts.map((v, i) => b.tfLayout(v, `${name}/part${i}`));
  return out(node, shape, false, b.node('Concat', names, name, { axis: int(axis) }));
}

export function resize(ctx: OpContext, node: TfNode, inputs: Value[], name: string): Value {
  const b = ctx.b;
  const x = dyn(node, inputs[0]);
  const [n, , , c] = x.shape;
  const [oh, ow] = resizeTarget(ctx, node, [...constOf(node, inputs[1]).data]);
  const alignCorners = attrBool(node, 'align_corners');
  const halfPixel = attrBool(node, 'half_pixel_centers');
  const empty = { dtype: 'float32' as const, shape: [0], data: new Float32Array(0) };
  const result = b.node(
    'Resize',
    [b.nchw(x), b.constant(empty, `${name}/roi`), b.constant(empty, `${name}/scales`), b.ints64([n, c, oh, ow], `${name}/sizes`)],
    name,
    {
      mode: str(node.op === 'ResizeBilinear' ? 'linear' : 'nearest'),
      coordinate_transformation_mode: str(alignCorners ? 'align_corners' : halfPixel ? 'half_pixel' : 'asymmetric'),
      nearest_mode: str(halfPixel ? 'round_prefer_ceil' : 'floor'),
    },
  );
  ctx.resizeInputs.set(result, [x.shape[1]!, x.shape[2]!]);
  return out(node, [n, oh, ow, c], true, result);
}

/**
 * Keras' UpSampling2D stores `feature size x factor` as a constant when the graph is exported. When the
 * manifest converts a graph at another input size than its input placeholder declares, such a stored
 * constant scales with the input (centernet exported at 512, converted at 384: 32x32 becomes 24x24).
 * Sizes computed from shapes were already folded at the converted size and are left alone.
 */
function resizeTarget(ctx: OpContext, node: TfNode, size: number[]): number[] {
  const sizeNode = ctx.graph.nodes.get(tensorName(node.inputs[1] ?? ''));
  const declared = declaredInputShape(ctx);
  if (sizeNode?.op !== 'Const' || !declared) return size;
  const { shape } = ctx.input;
  const scaled = [(size[0] * shape[1]) / declared[1], (size[1] * shape[2]) / declared[2]];
  if (!scaled.every(Number.isInteger)) {
    throw new Error(`${node.name}: constant resize size ${size.join('x')} does not scale to input ${shape[1]}x${shape[2]}`);
  }
  return scaled;
}

/** The static NHWC shape the graph's input placeholder was exported with, when it differs from the manifest's. */
function declaredInputShape(ctx: OpContext): number[] | undefined {
  const input = ctx.graph.nodes.get(ctx.input.node);
  if (input?.op !== 'Placeholder') return undefined;
  const dims = input.attr['shape']?.shape?.dim?.map((d) => Number(d.size));
  if (!dims || dims.length !== 4 || dims.some((d) => !(d > 0))) return undefined;
  const { shape } = ctx.input;
  return dims[1] === shape[1] && dims[2] === shape[2] ? undefined : dims;
}

export function mean(ctx: OpContext, node: TfNode, inputs: Value[], name: string): Value {
  const x = dyn(node, inputs[0]);
  const rank = x.shape.length;
  const axes = [...constOf(node, inputs[1]).data].map((a) => normalizeAxis(a, rank));
  const keep = attrBool(node, 'keep_dims');
  const useNchw = rank === 4 && x.nchw;
  const onnxAxes = useNchw ? axes.map((a) => NHWC_TO_NCHW.indexOf(a)) : axes;
  const input = useNchw ? x.name : ctx.b.tfLayout(x, node.name);
  const result = ctx.b.node('ReduceMean', [input], name, { axes: ints(onnxAxes), keepdims: int(keep ? 1 : 0) });
  const shape = keep ? x.shape.map((d, i) => (axes.includes(i) ? 1 : d)) : x.shape.filter((_, i) => !axes.includes(i));
  // Without keepdims the remaining dims keep NCHW order only if no spatial dim survives; channels-last otherwise.
  const stillNchw = keep && useNchw;
  if (!keep && useNchw && !(axes.includes(1) && axes.includes(2))) {
    throw new Error(`${node.name}: Mean without keep_dims over ${axes} is not supported`);
  }
  return out(node, shape, stillNchw, result);
}

export function stridedSlice(ctx: OpContext, node: TfNode, inputs: Value[], name: string): Value {
  const b = ctx.b;
  const x = dyn(node, inputs[0]);
  const [begin, end, step] = inputs.slice(1).map((v) => [...constOf(node, v).data]);
  const spec = stridedSliceSpec(node, x.shape, begin, end, step);
  const axes = spec.starts.map((_, i) => i);
  // ONNX Slice ends are exclusive; a negative-step end of -1 means "through index 0".
  const ends = spec.ends.map((e, i) => (spec.steps[i] < 0 && e === -1 ? -(2 ** 31) : e));
  const sliced = b.node(
    'Slice',
    [b.tfLayout(x, node.name), b.ints64(spec.starts, `${name}/starts`), b.ints64(ends, `${name}/ends`), b.ints64(axes, `${name}/axes`), b.ints64(spec.steps, `${name}/steps`)],
    spec.outShape.length === spec.keptShape.length ? name : b.unique(`${name}/slice`),
  );
  if (spec.outShape.length === spec.keptShape.length) return out(node, spec.outShape, false, sliced);
  return out(node, spec.outShape, false, b.node('Reshape', [sliced, b.ints64(spec.outShape, `${name}/shape`)], name));
}
