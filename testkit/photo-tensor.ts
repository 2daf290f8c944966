// A real photo as a model input tensor, decoded and resized in plain JS so that the
// parity test feeds both engines the very same numbers.
import { PNG } from 'pngjs';

export interface PhotoTensor {
  nhwc: Float32Array;
  nchw: Float32Array;
}

/** Decoded RGBA pixels (pngjs, jpeg-js). */
export interface RgbaPixels {
  width: number;
  height: number;
  data: ArrayLike<number>;
}

/** Nearest-neighbour resize of RGBA pixels to width x height, packed RGB (alpha dropped). */
export function resizeNearestRgb(image: RgbaPixels, width: number, height: number): Uint8Array {
  const rgb = new Uint8Array(width * height * 3);
  for (let y = 0; y < height; y++) {
    const sy = Math.min(image.height - 1, Math.floor(((y + 0.5) * image.height) / height));
    for (let x = 0; x < width; x++) {
      const sx = Math.min(image.width - 1, Math.floor(((x + 0.5) * image.width) / width));
      for (let c = 0; c < 3; c++) rgb[(y * width + x) * 3 + c] = image.data[(sy * image.width + sx) * 4 + c]!;
    }
  }
  return rgb;
}

/** Nearest-neighbour resize of an RGB(A) PNG to width x height, then (pixel - mean) * scale. */
export function photoTensor(png: Buffer, width: number, height: number, mean: number, scale: number): PhotoTensor {
  return rgbTensor(resizeNearestRgb(PNG.sync.read(png), width, height), width, height, mean, scale);
}

/** Packed RGB pixels of width x height as (pixel - mean) * scale, in both layouts. */
export function rgbTensor(rgb: Uint8Array, width: number, height: number, mean: number, scale: number): PhotoTensor {
  const nhwc = new Float32Array(width * height * 3);
  const nchw = new Float32Array(width * height * 3);
  for (let i = 0; i < width * height; i++) {
    for (let c = 0; c < 3; c++) {
      const v = (rgb[i * 3 + c]! - mean) * scale;
      nhwc[i * 3 + c] = v;
      nchw[c * width * height + i] = v;
    }
  }
  return { nhwc, nchw };
}
