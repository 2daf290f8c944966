// Structure checks on a PNG or JPEG before any decoder sees it. OpenCV's decoders trust what the file says:
// a PNG chunk claiming 0x7fffffff bytes made libpng reserve ~2 GB for 141 bytes of input, and a JPEG with
// thousands of progressive scans costs a full pass over the coefficients per scan. Walking the container here
// costs one pass over the bytes (no pixel is touched) and turns every such file into INVALID_IMAGE.
//
// It also drops the PNG iCCP chunk: OpenCV applies no colour profile, and libpng prints "iCCP: known
// incorrect sRGB profile" on stderr for many real photos. Dropping the whole chunk (chunks carry their own
// CRC) leaves a valid PNG and silences that warning without hiding decode errors.

import { EngineError } from './errors.js';
import type { ImageHeader } from './image-header.js';

/** More scans than any encoder writes (progressive JPEGs use about 10); each one is a pass over the image. */
export const MAX_JPEG_SCANS = 100;
/**
 * A JPEG's work is its pixels times its scans (each scan a pass over every coefficient; DCT scaling does not
 * shorten it): at most this many passes over the largest image allowed (maxPixels), about what the standard
 * progressive script (10 scans) costs at that size. A smaller image may have more scans, up to MAX_JPEG_SCANS.
 */
export const MAX_SCAN_PASSES = 12;

function invalid(format: 'PNG' | 'JPEG', why: string): EngineError {
  return new EngineError('INVALID_IMAGE', `invalid ${format}: ${why}`);
}

function u32be(b: Uint8Array, at: number): number {
  return b[at]! * 0x1000000 + ((b[at + 1]! << 16) | (b[at + 2]! << 8) | b[at + 3]!);
}

function u16be(b: Uint8Array, at: number): number {
  return (b[at]! << 8) | b[at + 1]!;
}

/** Bit depths the PNG spec allows for each colour type. */
const PNG_DEPTHS: Record<number, readonly number[]> = {
  0: [1, 2, 4, 8, 16],
  2: [8, 16],
  3: [1, 2, 4, 8],
  4: [8, 16],
  6: [8, 16],
};

const DROPPED_PNG_CHUNKS = new Set(['iCCP']);

function checkPng(b: Uint8Array): Uint8Array {
  // IHDR (already found first by readImageHeader): width, height, depth, colour type, compression, filter, interlace.
  const depth = b[24];
  const colour = b[25];
  if (b.length < 33 || depth === undefined || colour === undefined) throw invalid('PNG', 'truncated IHDR chunk');
  if (!PNG_DEPTHS[colour]?.includes(depth)) throw invalid('PNG', `bit depth ${depth} with colour type ${colour}`);
  if (b[26] !== 0 || b[27] !== 0 || b[28]! > 1) throw invalid('PNG', 'unknown compression, filter or interlace method');

  const drop: Array<[number, number]> = [];
  let sawData = false;
  let at = 8;
  for (;;) {
    if (at + 8 > b.length) throw invalid('PNG', `truncated at byte ${at} (no IEND chunk)`);
    const length = u32be(b, at);
    const type = String.fromCharCode(b[at + 4]!, b[at + 5]!, b[at + 6]!, b[at + 7]!);
    if (!/^[A-Za-z]{4}$/.test(type)) throw invalid('PNG', `bad chunk type at byte ${at + 4}`);
    const end = at + 12 + length;
    // The spec caps a chunk at 2^31-1 bytes; here it must also fit in what was sent.
    if (length > 0x7fffffff || end > b.length) {
      throw invalid('PNG', `chunk ${type} at byte ${at} claims ${length} bytes, only ${Math.max(0, b.length - at - 12)} present`);
    }
    if (type === 'IHDR' && at !== 8) throw invalid('PNG', 'second IHDR chunk');
    if (type === 'IDAT') sawData = true;
    if (type === 'IEND') break;
    if (DROPPED_PNG_CHUNKS.has(type)) drop.push([at, end]);
    at = end;
  }
  if (!sawData) throw invalid('PNG', 'no IDAT chunk (no image data)');
  if (drop.length === 0) return b;

  const parts: Uint8Array[] = [];
  let from = 0;
  for (const [s, e] of drop) {
    parts.push(b.subarray(from, s));
    from = e;
  }
  parts.push(b.subarray(from));
  return Buffer.concat(parts);
}

function isStartOfFrame(marker: number): boolean {
  return marker >= 0xc0 && marker <= 0xcf && marker !== 0xc4 && marker !== 0xc8 && marker !== 0xcc;
}

/** Index of the first marker after entropy-coded data starting at `at` (skips stuffed 0xFF00 and RSTn). */
function endOfScan(b: Uint8Array, at: number): number {
  for (let i = b.indexOf(0xff, at); i >= 0 && i + 1 < b.length; i = b.indexOf(0xff, i + 1)) {
    const next = b[i + 1]!;
    if (next !== 0x00 && next !== 0xff && !(next >= 0xd0 && next <= 0xd7)) return i;
  }
  return b.length;
}

function checkJpeg(b: Uint8Array, header: ImageHeader, maxPixelScans: number): Uint8Array {
  const pixels = header.width * header.height;
  let frames = 0;
  let scans = 0;
  let at = 2; // after SOI
  while (at < b.length) {
    if (b[at] !== 0xff) throw invalid('JPEG', `expected a marker at byte ${at}`);
    while (at < b.length && b[at] === 0xff) at++;
    if (at >= b.length) break;
    const marker = b[at++]!;
    if (marker === 0xd9) break; // EOI
    if (marker === 0x01 || (marker >= 0xd0 && marker <= 0xd7)) continue; // no length field
    if (marker === 0x00 || marker === 0xd8) throw invalid('JPEG', `unexpected marker 0xFF${marker.toString(16).padStart(2, '0')} at byte ${at - 1}`);
    if (at + 2 > b.length) throw invalid('JPEG', 'truncated segment length');
    const length = u16be(b, at);
    if (length < 2 || at + length > b.length) {
      throw invalid('JPEG', `segment 0xFF${marker.toString(16)} at byte ${at - 2} claims ${length} bytes, ${b.length - at} present`);
    }
    if (isStartOfFrame(marker)) {
      if (++frames > 1) throw invalid('JPEG', 'more than one frame header');
      const components = b[at + 7] ?? 0;
      if (components < 1 || components > 4 || length !== 8 + 3 * components) throw invalid('JPEG', 'bad frame header');
      for (let c = 0; c < components; c++) {
        const sampling = b[at + 9 + 3 * c]!;
        const h = sampling >> 4;
        const v = sampling & 15;
        if (h < 1 || h > 4 || v < 1 || v > 4) throw invalid('JPEG', `bad sampling factors in the frame header`);
      }
    }
    at += length;
    if (marker === 0xda) {
      if (frames === 0) throw invalid('JPEG', 'scan before the frame header');
      if (++scans > MAX_JPEG_SCANS) throw invalid('JPEG', `more than ${MAX_JPEG_SCANS} scans`);
      if (scans * pixels > maxPixelScans) {
        throw new EngineError(
          'IMAGE_TOO_LARGE',
          `JPEG of ${header.width}x${header.height} with more than ${scans - 1} scans: decoding it costs ${scans} passes over ${pixels} pixels, the limit is ${maxPixelScans} pixel-passes (${MAX_SCAN_PASSES} over the largest image allowed)`,
        );
      }
      at = endOfScan(b, at);
    }
  }
  // A file cut inside the last scan is accepted (libjpeg fills the rest grey): cameras and uploads do that.
  if (scans === 0) throw invalid('JPEG', 'no image data (no scan)');
  return b;
}

/**
 * Checks the container structure of an image whose header `readImageHeader` already accepted.
 * Throws EngineError INVALID_IMAGE for lengths that run past the bytes, impossible header fields, missing
 * image data or too many JPEG scans; IMAGE_TOO_LARGE for a JPEG whose scans times pixels pass `maxPixelScans`.
 */
export function checkImageContainer(bytes: Uint8Array, header: ImageHeader, maxPixelScans = Infinity): Uint8Array {
  return header.format === 'png' ? checkPng(bytes) : checkJpeg(bytes, header, maxPixelScans);
}
