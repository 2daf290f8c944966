// Image format and dimensions from the first bytes, without decoding. The engine uses it to refuse
// unsupported formats and oversized images (decompression bombs) before any pixel is decoded.
// The bytes decide the format, never a Content-Type or file name. Every read is bounds-checked, so
// truncated or hostile input yields an EngineError, never a RangeError.

import { EngineError } from './errors.js';

export type ImageFormat = 'png' | 'jpeg';

export interface ImageHeader {
  format: ImageFormat;
  width: number;
  height: number;
}

const PNG_SIGNATURE = [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a] as const;

function startsWith(bytes: Uint8Array, prefix: readonly number[]): boolean {
  if (bytes.length < prefix.length) return false;
  return prefix.every((b, i) => bytes[i] === b);
}

function u16be(bytes: Uint8Array, at: number): number {
  return (bytes[at]! << 8) | bytes[at + 1]!;
}

function u32be(bytes: Uint8Array, at: number): number {
  return ((bytes[at]! << 24) >>> 0) + ((bytes[at + 1]! << 16) | (bytes[at + 2]! << 8) | bytes[at + 3]!);
}

/** 'png' or 'jpeg' from the magic bytes, or null for anything else (including too few bytes). */
export function sniffImageFormat(bytes: Uint8Array): ImageFormat | null {
  if (startsWith(bytes, PNG_SIGNATURE)) return 'png';
  // SOI followed by the 0xFF of the next marker.
  if (startsWith(bytes, [0xff, 0xd8, 0xff])) return 'jpeg';
  return null;
}

function invalid(format: ImageFormat, why: string): EngineError {
  return new EngineError('INVALID_IMAGE', `invalid ${format.toUpperCase()}: ${why}`);
}

function readPng(bytes: Uint8Array): ImageHeader {
  // Signature (8), then the IHDR chunk, which the spec requires first: length (4) = 13, type (4), width (4), height (4).
  if (bytes.length < 24) throw invalid('png', 'truncated before the IHDR chunk');
  if (u32be(bytes, 8) !== 13 || String.fromCharCode(bytes[12]!, bytes[13]!, bytes[14]!, bytes[15]!) !== 'IHDR') {
    throw invalid('png', 'first chunk is not IHDR');
  }
  const width = u32be(bytes, 16);
  const height = u32be(bytes, 20);
  // The spec limits both to 1..2^31-1.
  if (width === 0 || height === 0 || width > 0x7fffffff || height > 0x7fffffff) {
    throw invalid('png', `impossible dimensions ${width}x${height}`);
  }
  return { format: 'png', width, height };
}

function isStartOfFrame(marker: number): boolean {
  // SOF0..SOF15, except DHT (C4), JPG (C8) and DAC (CC) which share the range.
  return marker >= 0xc0 && marker <= 0xcf && marker !== 0xc4 && marker !== 0xc8 && marker !== 0xcc;
}

function readJpeg(bytes: Uint8Array): ImageHeader {
  // Walk the marker segments after SOI until the first SOFn; its payload is
  // precision (1), height (2), width (2), components (1).
  let i = 2;
  for (;;) {
    if (i >= bytes.length) throw invalid('jpeg', 'truncated before the frame header');
    if (bytes[i] !== 0xff) throw invalid('jpeg', `expected a marker at byte ${i}`);
    while (i < bytes.length && bytes[i] === 0xff) i++; // fill bytes
    if (i >= bytes.length) throw invalid('jpeg', 'truncated before the frame header');
    const marker = bytes[i]!;
    i++;
    if (marker === 0xd8 || marker === 0x01 || (marker >= 0xd0 && marker <= 0xd7)) continue; // no length field
    if (marker === 0x00) throw invalid('jpeg', `stuffed byte where a marker was expected (byte ${i - 1})`);
    if (marker === 0xd9 || marker === 0xda) throw invalid('jpeg', 'no frame header before the image data');
    if (i + 2 > bytes.length) throw invalid('jpeg', 'truncated segment length');
    const length = u16be(bytes, i); // includes the 2 length bytes
    if (length < 2) throw invalid('jpeg', `bad segment length ${length} at byte ${i}`);
    if (isStartOfFrame(marker)) {
      if (length < 8 || i + 7 > bytes.length) throw invalid('jpeg', 'truncated frame header');
      const height = u16be(bytes, i + 3);
      const width = u16be(bytes, i + 5);
      // Height 0 means "defined later by a DNL marker": legal, rare, and not something we size-check.
      if (width === 0 || height === 0) throw invalid('jpeg', `unsupported dimensions ${width}x${height}`);
      return { format: 'jpeg', width, height };
    }
    i += length;
  }
}

/**
 * Format and dimensions from the header bytes.
 * Throws EngineError UNSUPPORTED_FORMAT (neither PNG nor JPEG) or INVALID_IMAGE (PNG/JPEG signature but a
 * truncated or malformed header).
 */
export function readImageHeader(bytes: Uint8Array): ImageHeader {
  const format = sniffImageFormat(bytes);
  if (format === 'png') return readPng(bytes);
  if (format === 'jpeg') return readJpeg(bytes);
  throw new EngineError('UNSUPPORTED_FORMAT', 'unsupported image format: only PNG and JPEG are accepted');
}

/** Like readImageHeader, but null instead of an error. */
export function tryReadImageHeader(bytes: Uint8Array): ImageHeader | null {
  try {
    return readImageHeader(bytes);
  } catch (e) {
    if (e instanceof EngineError) return null;
    throw e;
  }
}
