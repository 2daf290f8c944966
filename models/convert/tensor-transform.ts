// Constant tensors rearranged at conversion time: TF's weight layouts into ONNX's, constants to a broadcast shape.
import { sizeOf, type Tensor } from './tfjs-graph.js';

/** `t` with its axes permuted (`perm[d]` is the input axis of output axis d). */
export function transposeTensor(t: Tensor, perm: number[]): Tensor {
  const outShape = perm.map((p) => t.shape[p]);
  const inStrides = t.shape.map((_, i) => sizeOf(t.shape.slice(i + 1)));
  const outStrides = outShape.map((_, i) => sizeOf(outShape.slice(i + 1)));
  const n = sizeOf(outShape);
  const data = t.dtype === 'float32' ? new Float32Array(n) : new Int32Array(n);
  for (let i = 0; i < n; i++) {
    let src = 0;
    for (let d = 0; d < outShape.length; d++) src += (Math.floor(i / outStrides[d]) % outShape[d]) * inStrides[perm[d]];
    data[i] = t.data[src];
  }
  return { dtype: t.dtype, shape: outShape, data };
}

/** `t` repeated to `shape` by numpy broadcasting rules. */
export function broadcastTensor(t: Tensor, shape: number[]): Tensor {
  const src = [...new Array<number>(shape.length - t.shape.length).fill(1), ...t.shape];
  const srcStrides = src.map((_, i) => sizeOf(src.slice(i + 1)));
  const outStrides = shape.map((_, i) => sizeOf(shape.slice(i + 1)));
  const n = sizeOf(shape);
  const data = t.dtype === 'float32' ? new Float32Array(n) : new Int32Array(n);
  for (let i = 0; i < n; i++) {
    let from = 0;
    for (let d = 0; d < shape.length; d++) if (src[d] !== 1) from += (Math.floor(i / outStrides[d]) % shape[d]) * srcStrides[d];
    data[i] = t.data[from];
  }
  return { dtype: t.dtype, shape: [...shape], data };
}
