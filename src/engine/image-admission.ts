// What an image must be before any native decoder sees it: a PNG or JPEG (sniffed), within the pixel limit,
// of a shape the models can use, with a sound container. Everything here reads headers and walks chunk or
// segment lengths; nothing decodes a pixel, so a hostile file costs about as much as reading its bytes.

import { EngineError } from './errors.js';
import { checkImageContainer, MAX_SCAN_PASSES } from './image-container.js';
import { readImageHeader, type ImageHeader } from './image-header.js';

export interface ImageLimits {
  /** width * height above this: IMAGE_TOO_LARGE (413). */
  maxPixels: number;
  /** Longer side / shorter side above this: INVALID_IMAGE (400). */
  maxAspectRatio: number;
  /** A side shorter than this: INVALID_IMAGE (400). */
  minSide: number;
}

export interface AdmittedImage {
  header: ImageHeader;
  /** The bytes to decode (the input, or a copy without decoder-noise chunks: see image-container.ts). */
  bytes: Uint8Array;
}

/** Throws EngineError UNSUPPORTED_FORMAT, INVALID_IMAGE or IMAGE_TOO_LARGE; otherwise the bytes to decode. */
export function admitImage(image: Uint8Array, limits: ImageLimits): AdmittedImage {
  if (image.length === 0) throw new EngineError('INVALID_IMAGE', 'image is empty');
  const header = readImageHeader(image);
  const { width, height } = header;
  const pixels = width * height;
  if (pixels > limits.maxPixels) {
    throw new EngineError('IMAGE_TOO_LARGE', `image is ${width}x${height} (${pixels} pixels); the limit is ${limits.maxPixels} pixels`);
  }
  const short = Math.min(width, height);
  const long = Math.max(width, height);
  if (short < limits.minSide) {
    throw new EngineError('INVALID_IMAGE', `image is ${width}x${height}: a side under ${limits.minSide} pixels is too small for any model`);
  }
  if (long > short * limits.maxAspectRatio) {
    throw new EngineError('INVALID_IMAGE', `image is ${width}x${height}: an aspect ratio over ${limits.maxAspectRatio}:1 is not usable by any model`);
  }
  // a progressive JPEG's scans are passes over its pixels: a small file must not buy many full-size decodes
  return { header, bytes: checkImageContainer(image, header, limits.maxPixels * MAX_SCAN_PASSES) };
}
