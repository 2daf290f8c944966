// PNGs are decoded by libpng in the addon (native/image/png_decoder.h) and face crops encoded by libjpeg
// (image/jpeg_encoder.h), not by OpenCV's imgcodecs, which the addon no longer links. cv::imdecode(IMREAD_COLOR) and
// cv::imencode stay the reference: the check program (native/checks/codec_check.cc, built here against the same
// libraries) decodes every file both ways. The PNGs are made in code (testkit/fuzz/png-kinds.ts), every kind
// the format has, so their pixels are also known here without any decoder.

import { execFileSync, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import zlib from 'node:zlib';
import { PNG } from 'pngjs';
import { beforeAll, describe, expect, it } from 'vitest';
import { pngChunk } from '../testkit/fuzz/hostile-images.js';
import { encodePng, exifChunk, expectedBgr, pngKinds, type PngImage } from '../testkit/fuzz/png-kinds.js';
import { DEFAULT_BODY_LIMIT } from '../src/config.js';
import type { Engine } from '../src/index.js';
import { createApp } from '../src/server/app.js';
import { sharedEngine, photo, ROOT, useTempDirs } from './helpers.js';
import { checkProgram } from './support/check-program.js';
import { expectError, json } from './support/http-api.js';

interface CheckLine {
  file: string;
  reference: [number, number] | null;
  decoded: [number, number] | null;
  error?: string;
  samePixels?: boolean;
  sameJpeg?: boolean;
  pixels?: string;
}

const newTmpDir = useTempDirs();
let checkBinary: string;

beforeAll(() => {
  const libs = execFileSync('pkg-config', ['--cflags', '--libs', 'opencv4', 'libpng', 'libjpeg'], { encoding: 'utf8' }).trim().split(/\s+/);
  const sources = [
    'checks/codec_check.cc',
    'image/image.cc',
    'image/png_decoder.cc',
    'image/jpeg_decoder.cc',
    'image/jpeg_encoder.cc',
    'image/exif_orientation.cc',
    'runtime/recycled_buffers.cc',
  ];
  checkBinary = checkProgram('codec_check', sources, ['-O1'], libs);
}, 300_000);

/** Writes the files and runs the check program on them: one parsed line per file, in order. */
function check(files: Record<string, Buffer>): Record<string, CheckLine> {
  const dir = newTmpDir('edgecv-png-kinds-');
  const paths = Object.entries(files).map(([name, bytes]) => {
    fs.writeFileSync(path.join(dir, name), bytes);
    return path.join(dir, name);
  });
  const run = spawnSync(checkBinary, paths, { encoding: 'utf8', maxBuffer: 1 << 26 });
  expect(run.status, run.stderr).toBe(0); // no crash, whatever the bytes
  const lines = run.stdout
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as CheckLine);
  expect(lines.map((l) => path.basename(l.file))).toEqual(Object.keys(files));
  return Object.fromEntries(lines.map((l) => [path.basename(l.file), l]));
}

/** BGR pixels turned a quarter clockwise (EXIF orientation 6: transpose, then mirror left-right). */
function quarterTurn(bgr: Buffer, width: number, height: number): Buffer {
  const out = Buffer.alloc(bgr.length);
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) bgr.copy(out, (x * height + (height - 1 - y)) * 3, (y * width + x) * 3, (y * width + x) * 3 + 3);
  }
  return out;
}

describe('the PNG decoder against cv::imdecode (native/checks/codec_check.cc)', () => {
  it("decodes every kind, plain and interlaced, odd shapes included, to the known pixels and imdecode's", () => {
    const images: Record<string, PngImage> = {};
    for (const [w, h] of [
      [13, 9],
      [1, 1],
      [37, 2],
    ] as const) {
      for (const interlace of [false, true]) {
        for (const [kind, img] of Object.entries(pngKinds(w, h, interlace))) images[`${kind}-${w}x${h}${interlace ? '-adam7' : ''}.png`] = img;
      }
    }
    const lines = check(Object.fromEntries(Object.entries(images).map(([name, img]) => [name, encodePng(img)])));
    expect(Object.keys(lines)).toHaveLength(18 * 6);
    for (const [name, img] of Object.entries(images)) {
      const line = lines[name]!;
      expect(line.error, name).toBeUndefined();
      expect(line.decoded, name).toEqual([img.width, img.height]);
      expect(line.reference, name).toEqual([img.width, img.height]);
      expect(line.samePixels, name).toBe(true);
      expect(line.pixels, name).toBe(expectedBgr(img).toString('hex'));
      expect(line.sameJpeg, name).toBe(true); // the crop encoder writes imencode's bytes
    }
  });

  it('applies an eXIf orientation, before or after the image data, as OpenCV 4.6 does', () => {
    const rgb = pngKinds(13, 9)['rgb-8']!;
    const upright = expectedBgr(rgb);
    const lines = check({
      'exif-6.png': encodePng({ ...rgb, before: [exifChunk(6)] }),
      'exif-6-big-endian-after.png': encodePng({ ...rgb, after: [exifChunk(6, 'MM')] }),
      'exif-3.png': encodePng({ ...rgb, before: [exifChunk(3)] }),
      'exif-1.png': encodePng({ ...rgb, before: [exifChunk(1)] }),
    });
    for (const line of Object.values(lines)) expect(line.samePixels, line.file).toBe(true);
    for (const name of ['exif-6.png', 'exif-6-big-endian-after.png']) {
      expect(lines[name]!.decoded).toEqual([9, 13]);
      expect(lines[name]!.pixels).toBe(quarterTurn(upright, 13, 9).toString('hex'));
    }
    expect(lines['exif-3.png']!.pixels).toBe(
      Buffer.from([...Array(13 * 9).keys()].reverse().flatMap((i) => [...upright.subarray(i * 3, i * 3 + 3)])).toString('hex'),
    );
    expect(lines['exif-1.png']!.pixels).toBe(upright.toString('hex'));
  });

  it("refuses damaged PNGs with libpng's reason, as imdecode refuses them, and never crashes", () => {
    const good = encodePng(pngKinds(13, 9)['palette-8-trns']!);
    const idat = good.indexOf('IDAT') - 4;
    const files: Record<string, Buffer> = {};
    for (let cut = 8; cut < good.length - 12; cut += 5) files[`cut-${cut}.png`] = good.subarray(0, cut);
    const crcBroken = Buffer.from(good);
    crcBroken[idat + 8 + good.readUInt32BE(idat)]! ^= 0xff; // the first byte of the IDAT chunk's CRC
    files['idat-crc.png'] = crcBroken;
    const dataBroken = Buffer.from(good);
    dataBroken[idat + 12]! ^= 0x5a; // inside the compressed data
    files['idat-data.png'] = dataBroken;
    // A grey 13x9 file's signature and IHDR, then image data of our own making.
    const grey = encodePng(pngKinds(13, 9)['gray-8']!);
    const withData = (data: Buffer) =>
      Buffer.concat([grey.subarray(0, grey.indexOf('IDAT') - 4), pngChunk('IDAT', data), pngChunk('IEND', Buffer.alloc(0))]);
    const rows = Buffer.alloc(9 * 14);
    rows[4 * 14] = 7; // the fifth row's filter type: there is none numbered 7
    files['bad-filter.png'] = withData(zlib.deflateSync(rows));
    files['not-zlib.png'] = withData(Buffer.from('not a zlib stream at all'));
    files['short-data.png'] = withData(zlib.deflateSync(Buffer.alloc(4 * 14))); // 4 rows of 9
    // An eXIf chunk claiming 1 GB in a file of 72 bytes (npm run fuzz:native): libpng would allocate the claim before
    // reading; the decoder refuses it first. (The engine's container check refuses such a file before the addon.)
    const claim = Buffer.alloc(8);
    claim.writeUInt32BE(0x40000016);
    claim.write('eXIf', 4, 'ascii');
    files['chunk-past-end.png'] = Buffer.concat([grey.subarray(0, grey.indexOf('IDAT') - 4), claim, Buffer.alloc(27)]);
    const lines = check(files);
    for (const line of Object.values(lines)) {
      expect(line.decoded, line.file).toBeNull();
      expect(line.error, line.file).toMatch(/^image could not be decoded: \S/);
      expect(line.reference, line.file).toBeNull();
    }
    expect(lines['idat-crc.png']!.error).toMatch(/CRC/);
    expect(lines['chunk-past-end.png']!.error).toBe('image could not be decoded: invalid PNG: truncated (a chunk is longer than the file holds)');
  });
});

describe('the addon on one photo in every kind of PNG', () => {
  let engine: Engine;
  let app: ReturnType<typeof createApp>;
  beforeAll(async () => {
    engine = await sharedEngine({ workers: 1, poseModel: null, faceEmbedder: null });
    app = createApp({ engine, config: { bodyLimit: DEFAULT_BODY_LIMIT } });
  });

  // The astronaut (512x512 RGB), as samples; each variant below decodes to the pixels of its reference, an 8-bit RGB
  // (or grey, for the grey kinds) PNG of the same picture, so the objects found must be the same to the last digit.
  const astronaut = PNG.sync.read(photo('skimage/astronaut.png'));
  const { width, height } = astronaut;
  const n = width * height;
  const rgbAt = (i: number, c: number) => astronaut.data[i * 4 + c]!;
  const greyAt = (i: number) => Math.round(0.299 * rgbAt(i, 0) + 0.587 * rgbAt(i, 1) + 0.114 * rgbAt(i, 2));
  const image = (
    colorType: PngImage['colorType'],
    bitDepth: PngImage['bitDepth'],
    sample: (i: number, c: number) => number,
    extra: Partial<PngImage> = {},
  ): Buffer => {
    const channels = { 0: 1, 2: 3, 3: 1, 4: 2, 6: 4 }[colorType];
    const samples = new Uint16Array(n * channels);
    for (let i = 0; i < n; i++) for (let c = 0; c < channels; c++) samples[i * channels + c] = sample(i, c);
    return encodePng({ width, height, colorType, bitDepth, samples, ...extra });
  };
  const rgb8 = image(2, 8, rgbAt);
  const grey8 = image(0, 8, greyAt);
  // 3-3-2 bits of colour: 256 palette entries, and the same colours as plain RGB
  const quantized = (i: number, c: number) => rgbAt(i, c) & (c === 2 ? 0xc0 : 0xe0);
  const palette = Array.from({ length: 256 }, (_, k) => [k & 0xe0, (k << 3) & 0xe0, (k << 6) & 0xc0] as [number, number, number]);
  const index = (i: number) => quantized(i, 0) | (quantized(i, 1) >> 3) | (quantized(i, 2) >> 6);
  const alpha = (i: number) => (i * 7919) % 256;

  const variants: Array<[string, Buffer, Buffer]> = [
    ['RGB 16-bit', image(2, 16, (i, c) => rgbAt(i, c) * 256 + ((i * 3 + c) % 256)), rgb8],
    ['RGBA 8-bit', image(6, 8, (i, c) => (c === 3 ? alpha(i) : rgbAt(i, c))), rgb8],
    ['RGBA 16-bit, interlaced', image(6, 16, (i, c) => (c === 3 ? alpha(i) * 257 : rgbAt(i, c) * 257), { interlace: true }), rgb8],
    ['RGB 8-bit, interlaced', image(2, 8, rgbAt, { interlace: true }), rgb8],
    ['grey 16-bit', image(0, 16, (i) => greyAt(i) * 256 + (i % 256)), grey8],
    ['grey+alpha 8-bit', image(4, 8, (i, c) => (c === 1 ? alpha(i) : greyAt(i))), grey8],
    ['grey 4-bit', image(0, 4, (i) => greyAt(i) >> 4), image(0, 8, (i) => (greyAt(i) >> 4) * 17)],
    ['palette with tRNS', image(3, 8, index, { palette, trns: Buffer.from(palette.map((_, k) => k)) }), image(2, 8, quantized)],
  ];

  /** What a photo's answer says about its pixels: its size and the objects (timings left out). */
  const found = async (png: Buffer) => {
    const { width: w, height: h, objects } = await engine.detectObjects(png);
    return { w, h, objects };
  };

  it.each(variants)('%s: the same objects as its 8-bit reference', async (_name, variant, reference) => {
    const [got, want] = [await found(variant), await found(reference)];
    expect(got.objects.length).toBeGreaterThan(0);
    expect(got).toEqual(want);
  });

  it('tells a picture 10 grey levels brighter in one patch from the original (the comparison above can fail)', async () => {
    const patched = image(2, 8, (i, c) => Math.min(255, rgbAt(i, c) + (i % width < 64 && i < width * 64 ? 10 : 0)));
    expect(await found(patched)).not.toEqual(await found(rgb8));
  });

  it('answers a damaged PNG with a clear 400, then still serves', async () => {
    const good = encodePng(pngKinds(32, 32)['rgb-8']!);
    const idat = good.indexOf('IDAT') - 4;
    const damaged = Buffer.from(good);
    damaged[idat + 8 + good.readUInt32BE(idat)]! ^= 0xff; // the IDAT chunk's CRC: libpng refuses the file
    const truncated = good.subarray(0, idat + 20); // the server's container check refuses it before libpng
    for (const [bytes, re] of [
      [damaged, /^image could not be decoded: invalid PNG: IDAT: CRC error$/],
      [truncated, /invalid PNG/],
    ] as const) {
      const res = await app.request('/detector/detect/', { method: 'POST', body: bytes, headers: { 'content-type': 'image/png' } });
      expect(res.status).toBe(400);
      expectError(await json(res), re);
    }
    const ok = await app.request('/detector/detect/', { method: 'POST', body: good, headers: { 'content-type': 'image/png' } });
    expect(ok.status).toBe(200);
  });
});
