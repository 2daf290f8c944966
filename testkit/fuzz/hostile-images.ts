// Crafted image files, made in code (no binaries in the repo): valid flat images of any shape, and the
// container attacks a probe found. Used by the tests and by `npm run fuzz`.

import zlib from 'node:zlib';

const CRC_TABLE = (() => {
  const t = new Uint32Array(256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    t[n] = c >>> 0;
  }
  return t;
})();

export function crc32(buf: Uint8Array): number {
  let c = 0xffffffff;
  for (const b of buf) c = CRC_TABLE[(c ^ b) & 0xff]! ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}

export const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

/** One PNG chunk: length, type, data, CRC. */
export function pngChunk(type: string, data: Buffer): Buffer {
  const len = Buffer.alloc(4);
  len.writeUInt32BE(data.length);
  const td = Buffer.concat([Buffer.from(type, 'ascii'), data]);
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(crc32(td));
  return Buffer.concat([len, td, crc]);
}

/** IHDR data for an 8-bit RGB image. */
export function rgbIhdr(width: number, height: number): Buffer {
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(width, 0);
  ihdr.writeUInt32BE(height, 4);
  ihdr[8] = 8; // bit depth
  ihdr[9] = 2; // RGB
  return ihdr;
}

/** A real, decodable PNG of one grey level, any shape (1x1,000,000 is ~4 KB: the rows deflate to nothing). */
export function flatPng(width: number, height: number, extraChunks: Buffer[] = []): Buffer {
  const row = Buffer.alloc(1 + width * 3, 0x80);
  row[0] = 0; // filter: none
  const deflate = zlib.deflateSync(Buffer.concat(Array.from({ length: height }, () => row)));
  return Buffer.concat([
    PNG_SIGNATURE,
    pngChunk('IHDR', rgbIhdr(width, height)),
    ...extraChunks,
    pngChunk('IDAT', deflate),
    pngChunk('IEND', Buffer.alloc(0)),
  ]);
}

/**
 * A small PNG with a chunk whose length field claims `claimed` bytes (0x7fffffff in the probe) while only a few
 * follow: 141 bytes that once cost libpng about 2 GB.
 */
export function pngLengthBomb(type = 'zTXt', claimed = 0x7fffffff): Buffer {
  const head = Buffer.alloc(8);
  head.writeUInt32BE(claimed, 0);
  head.write(type, 4, 'ascii');
  return Buffer.concat([PNG_SIGNATURE, pngChunk('IHDR', rgbIhdr(64, 64)), head, Buffer.alloc(64, 0x41)]);
}

/** An iCCP chunk with a profile libpng warns about on stderr (the server drops every iCCP before decoding). */
export function iccpChunk(): Buffer {
  const profile = zlib.deflateSync(Buffer.alloc(128, 0));
  return pngChunk('iCCP', Buffer.concat([Buffer.from('bogus\0\0', 'latin1'), profile]));
}

function segment(marker: number, payload: Buffer): Buffer {
  const head = Buffer.from([0xff, marker, 0, 0]);
  head.writeUInt16BE(payload.length + 2, 2);
  return Buffer.concat([head, payload]);
}

/**
 * A real, decodable baseline JPEG of one grey level, any shape up to 65535 a side. One component, and
 * Huffman tables with a single 1-bit code each, so every 8x8 block is two zero bits (DC diff 0, EOB):
 * a 65500x1 image is about 2 KB.
 */
export function flatJpeg(width: number, height: number, opts: { scans?: number } = {}): Buffer {
  const dqt = segment(0xdb, Buffer.concat([Buffer.from([0]), Buffer.alloc(64, 1)]));
  const sof = segment(0xc0, Buffer.from([8, height >> 8, height & 255, width >> 8, width & 255, 1, 1, 0x11, 0]));
  const oneCode = (tableClass: number) => {
    const counts = Buffer.alloc(16);
    counts[0] = 1; // one code of length 1
    return segment(0xc4, Buffer.concat([Buffer.from([tableClass << 4]), counts, Buffer.from([0])]));
  };
  const sos = segment(0xda, Buffer.from([1, 1, 0x00, 0, 63, 0]));
  const blocks = Math.ceil(width / 8) * Math.ceil(height / 8);
  const data = Buffer.alloc(Math.ceil((blocks * 2) / 8), 0);
  const padBits = data.length * 8 - blocks * 2;
  if (padBits > 0) data[data.length - 1] = (1 << padBits) - 1; // pad with 1 bits, as the spec says
  const scans = Array.from({ length: opts.scans ?? 1 }, () => Buffer.concat([sos, data]));
  return Buffer.concat([Buffer.from([0xff, 0xd8]), dqt, sof, oneCode(0), oneCode(1), ...scans, Buffer.from([0xff, 0xd9])]);
}

/** A JPEG whose APP1 segment claims more bytes than the file has. */
export function jpegLengthBomb(): Buffer {
  const good = flatJpeg(64, 64);
  const app1 = Buffer.from([0xff, 0xe1, 0xff, 0xff, 0x45, 0x78, 0x69, 0x66]);
  return Buffer.concat([good.subarray(0, 2), app1, good.subarray(2, 40)]);
}
