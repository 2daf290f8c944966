// A PNG encoder for every kind the format has (grey 1/2/4/8/16-bit, grey+alpha, RGB and RGBA 8/16, palette with
// and without tRNS, Adam7 interlacing), written here on Node's zlib so the decoding tests and the native fuzz
// target's seeds (scripts/dev/fuzz-native.mjs) control every byte. pngjs writes only 8/16-bit grey, RGB and RGBA,
// never a palette or an interlaced file.

import zlib from 'node:zlib';
import { PNG_SIGNATURE, pngChunk } from './hostile-images.js';

export type PngColorType = 0 | 2 | 3 | 4 | 6;

export interface PngImage {
  width: number;
  height: number;
  colorType: PngColorType;
  bitDepth: 1 | 2 | 4 | 8 | 16;
  /** Row-major samples, CHANNELS[colorType] per pixel, each 0..2^bitDepth-1 (a palette index for type 3). */
  samples: ArrayLike<number>;
  interlace?: boolean;
  /** PLTE entries [r, g, b] (type 3). */
  palette?: ReadonlyArray<readonly [number, number, number]>;
  /** The tRNS chunk's data as it is. */
  trns?: Buffer;
  /** Whole chunks (pngChunk) before the image data and after it. */
  before?: Buffer[];
  after?: Buffer[];
}

export const CHANNELS: Record<PngColorType, number> = { 0: 1, 2: 3, 3: 1, 4: 2, 6: 4 };

/** Adam7's passes: first column, first row, column step, row step. */
const ADAM7 = [
  [0, 0, 8, 8],
  [4, 0, 8, 8],
  [0, 4, 4, 8],
  [2, 0, 4, 4],
  [0, 2, 2, 4],
  [1, 0, 2, 2],
  [0, 1, 1, 2],
] as const;

/** One scanline of the given pixels (filter type 0, none), samples packed big-endian, sub-byte depths MSB first. */
function scanline(img: PngImage, y: number, xs: number[]): Buffer {
  const channels = CHANNELS[img.colorType];
  const bits = xs.length * channels * img.bitDepth;
  const row = Buffer.alloc(1 + Math.ceil(bits / 8));
  let bit = 8;
  for (const x of xs) {
    for (let c = 0; c < channels; c++) {
      const v = img.samples[(y * img.width + x) * channels + c]!;
      if (img.bitDepth === 16) {
        row.writeUInt16BE(v, bit / 8);
      } else {
        row[bit >> 3]! |= v << (8 - img.bitDepth - (bit & 7));
      }
      bit += img.bitDepth;
    }
  }
  return row;
}

function imageData(img: PngImage): Buffer {
  const range = (from: number, to: number, step: number) =>
    Array.from({ length: Math.max(0, Math.ceil((to - from) / step)) }, (_, i) => from + i * step);
  const rows: Buffer[] = [];
  for (const [x0, y0, dx, dy] of img.interlace ? ADAM7 : [[0, 0, 1, 1] as const]) {
    const xs = range(x0, img.width, dx);
    if (xs.length === 0) continue;
    for (const y of range(y0, img.height, dy)) rows.push(scanline(img, y, xs));
  }
  return Buffer.concat(rows);
}

export function encodePng(img: PngImage): Buffer {
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(img.width, 0);
  ihdr.writeUInt32BE(img.height, 4);
  ihdr[8] = img.bitDepth;
  ihdr[9] = img.colorType;
  ihdr[12] = img.interlace ? 1 : 0;
  const chunks = [pngChunk('IHDR', ihdr), ...(img.before ?? [])];
  if (img.palette) chunks.push(pngChunk('PLTE', Buffer.from(img.palette.flat())));
  if (img.trns) chunks.push(pngChunk('tRNS', img.trns));
  chunks.push(pngChunk('IDAT', zlib.deflateSync(imageData(img))), ...(img.after ?? []), pngChunk('IEND', Buffer.alloc(0)));
  return Buffer.concat([PNG_SIGNATURE, ...chunks]);
}

/**
 * The 8-bit BGR pixels cv::imdecode(IMREAD_COLOR) gives for the image (OpenCV 4.6 on libpng 1.6): 16-bit samples
 * keep their high byte, 1/2/4-bit grey is scaled to 0..255, palette indices become their colours, alpha and tRNS
 * are dropped without compositing, grey is repeated in all three channels. No orientation.
 */
export function expectedBgr(img: PngImage): Buffer {
  const channels = CHANNELS[img.colorType];
  const out = Buffer.alloc(img.width * img.height * 3);
  const to8 = (v: number) => (img.bitDepth === 16 ? v >> 8 : img.bitDepth < 8 ? (v * 255) / ((1 << img.bitDepth) - 1) : v);
  for (let i = 0; i < img.width * img.height; i++) {
    const s = (c: number) => img.samples[i * channels + c]!;
    let rgb: readonly number[];
    if (img.colorType === 3) rgb = img.palette![s(0)]!;
    else if (img.colorType === 0 || img.colorType === 4) rgb = [to8(s(0)), to8(s(0)), to8(s(0))];
    else rgb = [to8(s(0)), to8(s(1)), to8(s(2))];
    out.set([rgb[2]!, rgb[1]!, rgb[0]!], i * 3);
  }
  return out;
}

/** An eXIf chunk: a TIFF structure whose IFD0 holds one entry, Orientation. */
export function exifChunk(orientation: number, byteOrder: 'II' | 'MM' = 'II'): Buffer {
  const tiff = Buffer.alloc(26);
  const le = byteOrder === 'II';
  const u16 = (v: number, at: number) => (le ? tiff.writeUInt16LE(v, at) : tiff.writeUInt16BE(v, at));
  const u32 = (v: number, at: number) => (le ? tiff.writeUInt32LE(v, at) : tiff.writeUInt32BE(v, at));
  tiff.write(byteOrder, 0, 'latin1');
  u16(42, 2);
  u32(8, 4); // IFD0 right after the header
  u16(1, 8); // one entry
  u16(0x0112, 10); // Orientation
  u16(3, 12); // SHORT
  u32(1, 14); // count
  u16(orientation, 18); // the value, left-justified in the 4-byte field
  u32(0, 22); // no next IFD
  return pngChunk('eXIf', tiff);
}

/** Deterministic samples spread over 0..max (a linear congruential sequence, seeded per kind). */
function samples(count: number, max: number, seed: number): number[] {
  let s = seed >>> 0;
  return Array.from({ length: count }, () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s % (max + 1);
  });
}

/** A palette of n colours spread over the cube. */
function palette(n: number): Array<[number, number, number]> {
  return Array.from({ length: n }, (_, i) => [(i * 37) % 256, (i * 101 + 50) % 256, 255 - ((i * 59) % 256)]);
}

/**
 * Every kind of PNG, width x height, samples drawn over each kind's whole range: grey at 1, 2, 4, 8 and 16 bits
 * (8-bit also with a tRNS grey), grey+alpha and RGBA at 8 and 16, RGB at 8 and 16 (8 also with a tRNS colour),
 * palettes of 1, 2, 4 and 8 bits (some with tRNS alphas). Keyed by a name such as 'gray-4' or 'palette-8-trns'.
 */
export function pngKinds(width: number, height: number, interlace = false): Record<string, PngImage> {
  const n = width * height;
  const kind = (colorType: PngColorType, bitDepth: PngImage['bitDepth'], seed: number, extra: Partial<PngImage> = {}): PngImage => {
    const max = colorType === 3 ? (extra.palette?.length ?? 1) - 1 : (1 << bitDepth) - 1;
    return { width, height, colorType, bitDepth, interlace, samples: samples(n * CHANNELS[colorType], max, seed), ...extra };
  };
  const trns16 = (...values: number[]) => Buffer.from(values.flatMap((v) => [v >> 8, v & 255]));
  return {
    'gray-1': kind(0, 1, 1),
    'gray-2': kind(0, 2, 2),
    'gray-4': kind(0, 4, 3),
    'gray-8': kind(0, 8, 4),
    'gray-8-trns': kind(0, 8, 5, { trns: trns16(7) }),
    'gray-16': kind(0, 16, 6),
    'gray-alpha-8': kind(4, 8, 7),
    'gray-alpha-16': kind(4, 16, 8),
    'rgb-8': kind(2, 8, 9),
    'rgb-8-trns': kind(2, 8, 10, { trns: trns16(1, 2, 3) }),
    'rgb-16': kind(2, 16, 11),
    'rgba-8': kind(6, 8, 12),
    'rgba-16': kind(6, 16, 13),
    'palette-1': kind(3, 1, 14, { palette: palette(2) }),
    'palette-2-trns': kind(3, 2, 15, { palette: palette(4), trns: Buffer.from([0, 128]) }),
    'palette-4': kind(3, 4, 16, { palette: palette(11) }),
    'palette-8': kind(3, 8, 17, { palette: palette(256) }),
    'palette-8-trns': kind(3, 8, 18, { palette: palette(200), trns: Buffer.from(samples(150, 255, 19)) }),
  };
}
