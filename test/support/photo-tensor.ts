// A real photo as a model input tensor, decoded and resized in plain JS so that the
// parity test feeds both engines the very same numbers.
import { PNG } from 'pngjs';

export interface PhotoTensor {
  nhwc: Float32Array;
  nchw: Float32Array;
}

/** Nearest-neighbour resize of an RGB(A) PNG to width x height, then (pixel - mean) * scale. */
export function photoTensor(png: Buffer, width: number, height: number, mean: number, scale: number): PhotoTensor {
  const image = PNG.sync.read(png);
  const nhwc = new Float32Array(width * height * 3);
  const nchw = new Float32Array(width * height * 3);
  for (let y = 0; y < height; y++) {
    const sy = Math.min(image.height - 1, Math.floor(((y + 0.5) * image.height) / height));
    for (let x = 0; x < width; x++) {
      const sx = Math.min(image.width - 1, Math.floor(((x + 0.5) * image.width) / width));
      for (let c = 0; c < 3; c++) {
        const v = (image.data[(sy * image.width + sx) * 4 + c] - mean) * scale;
        nhwc[(y * width + x) * 3 + c] = v;
        nchw[c * width * height + y * width + x] = v;
      }
    }
  }
  return { nhwc, nchw };
}
