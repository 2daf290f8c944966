// How good a face sample is, measured on the JPEG crop kept with it (native/jobs/face_embed_job.h, StoredCrop):
// the face box's side, and its sharpness: the variance of the Laplacian of the face, resampled to a fixed side so
// that the figure reads the same whatever the face's size in the photo. Enrolment refuses a photo under the
// thresholds (RecognitionService); the face library reports both figures for every sample (measured once per
// sample and stored with it; off the event loop where it is not enrolment: sample-qualities.ts). Computed in JS (jpeg-js): the crop is at most 448 px, a few milliseconds.

import jpeg from 'jpeg-js';
import type { Rect } from './types.js';

/**
 * Side a larger face box is averaged down to before the Laplacian: about the embedder's input. A smaller face is
 * measured as it is (enlarging it would either blur it or, repeating pixels, add edges), so that sharpness and
 * size stay two separate measures.
 */
export const SHARPNESS_SIDE = 112;

/**
 * Enrolment thresholds, measured on the test photos and degraded copies of them (tools/sample-quality.ts,
 * docs/gallery.md "Enrolment quality"): a face box under MIN_FACE_SIDE pixels in the photo, or sharper than
 * nothing under MIN_SHARPNESS, makes a poor sample.
 */
export const MIN_FACE_SIDE = 36;
export const MIN_SHARPNESS = 15;

export interface SampleQuality {
  /** The face box's shorter side in the crop's pixels (the photo's, unless the crop was scaled down to 448 px). */
  faceSide: number;
  /** Variance of the 4-neighbour Laplacian of the face's grey levels, at most SHARPNESS_SIDE x SHARPNESS_SIDE. */
  sharpness: number;
}

/** Grey levels (BT.601) of the RGBA pixels. */
function grey(rgba: Uint8Array, width: number, height: number): Float32Array {
  const out = new Float32Array(width * height);
  for (let i = 0; i < out.length; i++) out[i] = 0.299 * rgba[i * 4]! + 0.587 * rgba[i * 4 + 1]! + 0.114 * rgba[i * 4 + 2]!;
  return out;
}

/**
 * The region `rect` of a grey image averaged down to side x side (side <= the region's sides): each output pixel
 * is the mean of the source pixels its cell covers, so that shrinking does not alias.
 */
function resampled(src: Float32Array, width: number, height: number, rect: Rect, side: number): Float32Array {
  const [l, t, r, b] = [Math.max(0, rect[0]), Math.max(0, rect[1]), Math.min(width, rect[2]), Math.min(height, rect[3])];
  const out = new Float32Array(side * side);
  const sx = (r - l) / side;
  const sy = (b - t) / side;
  for (let y = 0; y < side; y++) {
    const y0 = t + Math.floor(y * sy);
    const y1 = Math.max(y0 + 1, t + Math.floor((y + 1) * sy));
    for (let x = 0; x < side; x++) {
      const x0 = l + Math.floor(x * sx);
      const x1 = Math.max(x0 + 1, l + Math.floor((x + 1) * sx));
      let sum = 0;
      for (let yy = y0; yy < y1; yy++) for (let xx = x0; xx < x1; xx++) sum += src[yy * width + xx]!;
      out[y * side + x] = sum / ((y1 - y0) * (x1 - x0));
    }
  }
  return out;
}

/** Variance of the 4-neighbour Laplacian over the interior of a side x side image. */
function laplacianVariance(img: Float32Array, side: number): number {
  let sum = 0;
  let sq = 0;
  let n = 0;
  for (let y = 1; y < side - 1; y++) {
    for (let x = 1; x < side - 1; x++) {
      const i = y * side + x;
      const v = img[i - 1]! + img[i + 1]! + img[i - side]! + img[i + side]! - 4 * img[i]!;
      sum += v;
      sq += v * v;
      n++;
    }
  }
  const mean = sum / n;
  return sq / n - mean * mean;
}

/** Quality of a face given as a JPEG crop and the face box inside it; null when the JPEG cannot be decoded. */
export function sampleQuality(crop: Uint8Array, faceRect: Rect): SampleQuality | null {
  let decoded: { width: number; height: number; data: Uint8Array };
  try {
    decoded = jpeg.decode(crop, { useTArray: true, maxResolutionInMP: 1, maxMemoryUsageInMB: 64 });
  } catch {
    return null;
  }
  const { width, height, data } = decoded;
  const faceSide = Math.min(faceRect[2] - faceRect[0], faceRect[3] - faceRect[1]);
  if (faceSide <= 0 || width === 0 || height === 0) return null;
  const side = Math.min(SHARPNESS_SIDE, faceSide);
  if (side < 3) return { faceSide, sharpness: 0 };
  const face = resampled(grey(data, width, height), width, height, faceRect, side);
  return { faceSide, sharpness: Math.round(laplacianVariance(face, side) * 10) / 10 };
}
