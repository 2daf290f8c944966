// Degraded copies of the test photos, made in JS on the decoded pixels: a Gaussian blur (a camera out of focus or
// a moving subject) and a shrink (a face far from the camera). For the enrolment-quality thresholds
// (tools/sample-quality.ts) and the refusal tests.
import jpeg from 'jpeg-js';
import type { Rgba } from './vga-photos.js';

/** The photo blurred by a Gaussian of `sigma` pixels (separable, kernel radius 3 sigma, edges clamped). */
export function blurred(src: Rgba, sigma: number): Rgba {
  const radius = Math.max(1, Math.ceil(3 * sigma));
  const kernel = Array.from({ length: 2 * radius + 1 }, (_, i) => Math.exp(-((i - radius) ** 2) / (2 * sigma * sigma)));
  const total = kernel.reduce((a, b) => a + b, 0);
  const k = kernel.map((v) => v / total);
  const { width, height } = src;
  const pass = (input: Float32Array, dx: number, dy: number): Float32Array => {
    const out = new Float32Array(input.length);
    for (let y = 0; y < height; y++) {
      for (let x = 0; x < width; x++) {
        for (let c = 0; c < 3; c++) {
          let sum = 0;
          for (let i = -radius; i <= radius; i++) {
            const xx = Math.min(width - 1, Math.max(0, x + i * dx));
            const yy = Math.min(height - 1, Math.max(0, y + i * dy));
            sum += k[i + radius]! * input[(yy * width + xx) * 4 + c]!;
          }
          out[(y * width + x) * 4 + c] = sum;
        }
      }
    }
    return out;
  };
  const once = pass(Float32Array.from(src.data), 1, 0);
  const twice = pass(once, 0, 1);
  const data = new Uint8Array(src.data.length);
  for (let i = 0; i < data.length; i++) data[i] = i % 4 === 3 ? 255 : Math.round(twice[i]!);
  return { width, height, data };
}

/** The photo shrunk by `factor` (> 1) with box averaging, as a camera's sensor would record it further away. */
export function shrunk(src: Rgba, factor: number): Rgba {
  const width = Math.max(1, Math.round(src.width / factor));
  const height = Math.max(1, Math.round(src.height / factor));
  const data = new Uint8Array(width * height * 4);
  for (let y = 0; y < height; y++) {
    const y0 = Math.floor(y * factor);
    const y1 = Math.min(src.height, Math.max(y0 + 1, Math.floor((y + 1) * factor)));
    for (let x = 0; x < width; x++) {
      const x0 = Math.floor(x * factor);
      const x1 = Math.min(src.width, Math.max(x0 + 1, Math.floor((x + 1) * factor)));
      for (let c = 0; c < 3; c++) {
        let sum = 0;
        for (let yy = y0; yy < y1; yy++) for (let xx = x0; xx < x1; xx++) sum += src.data[(yy * src.width + xx) * 4 + c]!;
        data[(y * width + x) * 4 + c] = Math.round(sum / ((y1 - y0) * (x1 - x0)));
      }
      data[(y * width + x) * 4 + 3] = 255;
    }
  }
  return { width, height, data };
}

/** The photo placed in the middle of a grey canvas of width x height (a small face in a camera-sized frame). */
export function onCanvas(src: Rgba, width: number, height: number): Rgba {
  const data = new Uint8Array(width * height * 4).fill(114);
  const left = Math.floor((width - src.width) / 2);
  const top = Math.floor((height - src.height) / 2);
  for (let y = 0; y < src.height; y++) {
    for (let x = 0; x < src.width; x++) {
      const o = ((top + y) * width + left + x) * 4;
      const i = (y * src.width + x) * 4;
      data[o] = src.data[i]!;
      data[o + 1] = src.data[i + 1]!;
      data[o + 2] = src.data[i + 2]!;
    }
  }
  for (let i = 3; i < data.length; i += 4) data[i] = 255;
  return { width, height, data };
}

/** JPEG (quality 90) of the pixels. */
export function jpegOf(image: Rgba, quality = 90): Buffer {
  return Buffer.from(jpeg.encode({ width: image.width, height: image.height, data: image.data }, quality).data);
}
