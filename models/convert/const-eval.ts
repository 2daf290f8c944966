// Constant folding for the small integer/shape sub-graphs TF.js models carry
// (Shape -> StridedSlice -> Pack -> Reshape, resize sizes from Shape * 2, ...).
// With a fixed input size these become constants, which OpenCV's importer needs.
import { attrInt, sizeOf, type Tensor, type TfNode } from './tfjs-graph.js';

function intTensor(shape: number[], values: number[]): Tensor {
  return { dtype: 'int32', shape, data: Int32Array.from(values) };
}

function like(t: Tensor, shape: number[], values: ArrayLike<number>): Tensor {
  return t.dtype === 'float32'
    ? { dtype: 'float32', shape, data: Float32Array.from(values) }
    : { dtype: t.dtype, shape, data: Int32Array.from(values) };
}

function strides(shape: number[]): number[] {
  const s = new Array<number>(shape.length).fill(1);
  for (let i = shape.length - 2; i >= 0; i--) s[i] = s[i + 1] * shape[i + 1];
  return s;
}

function broadcastShape(a: number[], b: number[]): number[] {
  const n = Math.max(a.length, b.length);
  const out: number[] = [];
  for (let i = 0; i < n; i++) {
    const da = a[a.length - n + i] ?? 1;
    const db = b[b.length - n + i] ?? 1;
    if (da !== db && da !== 1 && db !== 1) throw new Error(`cannot broadcast [${a}] with [${b}]`);
    out.push(Math.max(da, db));
  }
  return out;
}

function broadcastIndex(index: number, outShape: number[], inShape: number[]): number {
  const outStrides = strides(outShape);
  const inStrides = strides(inShape);
  const offset = outShape.length - inShape.length;
  let j = 0;
  for (let d = 0; d < outShape.length; d++) {
    const coord = Math.floor(index / outStrides[d]) % outShape[d];
    const di = d - offset;
    if (di >= 0 && inShape[di] !== 1) j += coord * inStrides[di];
  }
  return j;
}

function binary(a: Tensor, b: Tensor, f: (x: number, y: number) => number): Tensor {
  const shape = broadcastShape(a.shape, b.shape);
  const n = sizeOf(shape);
  const out = new Array<number>(n);
  for (let i = 0; i < n; i++) out[i] = f(a.data[broadcastIndex(i, shape, a.shape)], b.data[broadcastIndex(i, shape, b.shape)]);
  return like(a, shape, out);
}

export function normalizeAxis(axis: number, rank: number): number {
  return axis < 0 ? axis + rank : axis;
}

/** TF StridedSlice with begin/end/shrink masks; ellipsis and new-axis masks are not used by our models. */
export function stridedSliceSpec(
  node: TfNode,
  shape: number[],
  begin: number[],
  end: number[],
  step: number[],
): { starts: number[]; ends: number[]; steps: number[]; outShape: number[]; keptShape: number[] } {
  if (attrInt(node, 'new_axis_mask')) throw new Error(`${node.name}: StridedSlice new_axis_mask is not supported`);
  let beginMask = attrInt(node, 'begin_mask');
  let endMask = attrInt(node, 'end_mask');
  let shrinkMask = attrInt(node, 'shrink_axis_mask');
  const ellipsisMask = attrInt(node, 'ellipsis_mask');
  if (ellipsisMask) {
    // `x[..., a:b]` (YOLO heads): expand the ellipsis into full-range entries so the spec covers every axis.
    const at = Math.log2(ellipsisMask);
    if (!Number.isInteger(at)) throw new Error(`${node.name}: StridedSlice with more than one ellipsis`);
    const fill = shape.length - (begin.length - 1);
    const remap = (mask: number, full: boolean): number => {
      let out = 0;
      for (let i = 0; i < begin.length; i++) {
        if (i < at && mask & (1 << i)) out |= 1 << i;
        if (i > at && mask & (1 << i)) out |= 1 << (i + fill - 1);
      }
      if (full) for (let i = at; i < at + fill; i++) out |= 1 << i;
      return out;
    };
    const expand = (values: number[], filler: number): number[] => [
      ...values.slice(0, at),
      ...new Array<number>(fill).fill(filler),
      ...values.slice(at + 1),
    ];
    beginMask = remap(beginMask, true);
    endMask = remap(endMask, true);
    shrinkMask = remap(shrinkMask, false);
    begin = expand(begin, 0);
    end = expand(end, 0);
    step = expand(step, 1);
  }
  const starts: number[] = [];
  const ends: number[] = [];
  const steps: number[] = [];
  const outShape: number[] = [];
  const keptShape: number[] = [];
  for (let d = 0; d < shape.length; d++) {
    const dim = shape[d];
    const s = d < step.length ? step[d] : 1;
    let b: number;
    let e: number;
    if (d >= begin.length) {
      b = s > 0 ? 0 : dim - 1;
      e = s > 0 ? dim : -1;
    } else if (shrinkMask & (1 << d)) {
      b = normalizeAxis(begin[d], dim);
      e = b + 1;
    } else {
      b = beginMask & (1 << d) ? (s > 0 ? 0 : dim - 1) : normalizeAxis(begin[d], dim);
      e = endMask & (1 << d) ? (s > 0 ? dim : -1) : normalizeAxis(end[d], dim);
      b = Math.min(Math.max(b, s > 0 ? 0 : -1), s > 0 ? dim : dim - 1);
      e = Math.min(Math.max(e, s > 0 ? 0 : -1), s > 0 ? dim : dim - 1);
    }
    const len = Math.max(0, Math.ceil((e - b) / s));
    starts.push(b);
    ends.push(e);
    steps.push(s);
    keptShape.push(len);
    if (!(shrinkMask & (1 << d))) outShape.push(len);
  }
  return { starts, ends, steps, outShape, keptShape };
}

function stridedSlice(node: TfNode, x: Tensor, begin: Tensor, end: Tensor, step: Tensor): Tensor {
  const spec = stridedSliceSpec(node, x.shape, [...begin.data], [...end.data], [...step.data]);
  const inStrides = strides(x.shape);
  const total = sizeOf(spec.keptShape);
  const keptStrides = strides(spec.keptShape);
  const out: number[] = [];
  for (let i = 0; i < total; i++) {
    let src = 0;
    for (let d = 0; d < x.shape.length; d++) {
      const c = Math.floor(i / keptStrides[d]) % spec.keptShape[d];
      src += (spec.starts[d] + c * spec.steps[d]) * inStrides[d];
    }
    out.push(x.data[src]);
  }
  return like(x, spec.outShape, out);
}

function concat(inputs: Tensor[], axisIn: number): Tensor {
  const rank = inputs[0].shape.length;
  const axis = normalizeAxis(axisIn, rank);
  const outShape = [...inputs[0].shape];
  outShape[axis] = inputs.reduce((s, t) => s + t.shape[axis], 0);
  const outer = sizeOf(outShape.slice(0, axis));
  const out: number[] = [];
  for (let o = 0; o < outer; o++) {
    for (const t of inputs) {
      const chunk = sizeOf(t.shape.slice(axis));
      for (let k = 0; k < chunk; k++) out.push(t.data[o * chunk + k]);
    }
  }
  return like(inputs[0], outShape, out);
}

function reshapeTarget(x: Tensor, target: number[]): number[] {
  const known = target.filter((d) => d !== -1).reduce((a, b) => a * b, 1);
  return target.map((d) => (d === -1 ? sizeOf(x.shape) / known : d));
}

/**
 * Evaluates `node` on constant inputs. Returns undefined when the op is not one the
 * folder knows, so the caller emits it as a graph node instead.
 */
export function evalConst(node: TfNode, inputs: Tensor[]): Tensor | undefined {
  const [a, b] = inputs;
  switch (node.op) {
    case 'Identity':
    case 'StopGradient':
      return a;
    case 'Cast': {
      const to = node.attr.DstT?.type;
      if (to === 'DT_FLOAT') return { dtype: 'float32', shape: a.shape, data: Float32Array.from(a.data) };
      if (to === 'DT_INT32') return { dtype: 'int32', shape: a.shape, data: Int32Array.from(a.data, Math.trunc) };
      return undefined;
    }
    case 'Add':
    case 'AddV2':
      return binary(a, b, (x, y) => x + y);
    case 'Sub':
      return binary(a, b, (x, y) => x - y);
    case 'Mul':
      return binary(a, b, (x, y) => x * y);
    case 'RealDiv':
      return binary(a, b, (x, y) => x / y);
    case 'FloorDiv':
      return binary(a, b, (x, y) => Math.floor(x / y));
    case 'Maximum':
      return binary(a, b, Math.max);
    case 'Minimum':
      return binary(a, b, Math.min);
    case 'Pack': {
      const axis = attrInt(node, 'axis');
      if (axis !== 0) return undefined;
      return like(a, [inputs.length, ...a.shape], inputs.flatMap((t) => [...t.data]));
    }
    case 'StridedSlice':
      return stridedSlice(node, a, b, inputs[2], inputs[3]);
    case 'ConcatV2': {
      const axis = inputs[inputs.length - 1].data[0];
      return concat(inputs.slice(0, -1), axis);
    }
    case 'Reshape':
      return like(a, reshapeTarget(a, [...b.data]), a.data);
    case 'ExpandDims': {
      const axis = normalizeAxis(b.data[0], a.shape.length + 1);
      const shape = [...a.shape];
      shape.splice(axis, 0, 1);
      return like(a, shape, a.data);
    }
    case 'Squeeze': {
      const dims = (node.attr.squeeze_dims?.list?.i ?? node.attr.axis?.list?.i ?? []).map(Number);
      const rank = a.shape.length;
      const drop = new Set(dims.map((d) => normalizeAxis(d, rank)));
      const shape = a.shape.filter((d, i) => (drop.size ? !drop.has(i) : d !== 1));
      return like(a, shape, a.data);
    }
    case 'Fill':
      return like(b, [...a.data], new Array(sizeOf([...a.data])).fill(b.data[0]));
    case 'Range': {
      const values: number[] = [];
      for (let v = a.data[0]; inputs[2].data[0] > 0 ? v < b.data[0] : v > b.data[0]; v += inputs[2].data[0]) values.push(v);
      return like(a, [values.length], values);
    }
    default:
      return undefined;
  }
}

export function shapeTensor(shape: number[]): Tensor {
  return intTensor([shape.length], shape);
}
