// Images that could cost seconds and gigabytes (extreme shapes, a 1x1,000,000 PNG,
// a PNG chunk claiming 2 GB) are refused from their headers and container structure with a clear 4xx, the
// padded second pass of recognition is bounded for shapes that are allowed, and a normal request still works
// after each. Every hostile file is made in code (testkit/fuzz/hostile-images.ts). Real engine, real SQLite.

import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { flatJpeg, flatPng, iccpChunk, jpegLengthBomb, pngChunk, pngLengthBomb } from '../testkit/fuzz/hostile-images.js';
import { loadJohns } from '../testkit/face-verification.js';
import { DEFAULT_BODY_LIMIT } from '../src/config.js';
import { RecognitionService } from '../src/gallery/recognition-service.js';
import { SqliteGalleryStore } from '../src/gallery/sqlite-store.js';
import { admitImage } from '../src/engine/image-admission.js';
import { IMAGE_LIMIT_DEFAULTS } from '../src/engine/limits.js';
import { EngineError, type Engine } from '../src/index.js';
import { createApp } from '../src/server/app.js';
import { DATA_DIR, openEngine, sharedEngine, useTempDirs } from './helpers.js';

const MB = 1024 * 1024;
const KEY = 'hostile-admin-key-0123456789';
const JOHN = loadJohns(DATA_DIR)[0]!.bytes; // a tight crop of one face: enrolment takes it

/** Runs `work` while sampling this process's RSS every 5 ms (the native work runs off the JS thread). */
async function peakRssGrowth<T>(work: () => Promise<T>): Promise<{ result: T | EngineError; growthMb: number }> {
  const before = process.memoryUsage.rss();
  let peak = before;
  const timer = setInterval(() => (peak = Math.max(peak, process.memoryUsage.rss())), 5);
  try {
    const result = await work().catch((e: unknown) => (e instanceof EngineError ? e : Promise.reject(e)));
    return { result, growthMb: (Math.max(peak, process.memoryUsage.rss()) - before) / MB };
  } finally {
    clearInterval(timer);
  }
}

function codeOf(r: unknown): string {
  return r instanceof EngineError ? r.code : 'resolved';
}

const newTmpDir = useTempDirs();
let engine: Engine;
let service: RecognitionService;
let app: ReturnType<typeof createApp>;

beforeAll(async () => {
  engine = await sharedEngine({ workers: 1 });
  service = await RecognitionService.open(engine, SqliteGalleryStore.open(newTmpDir('edgecv-hostile-')), { storeCrops: true, log: () => {} });
  await service.ready;
  app = createApp({ engine, config: { bodyLimit: DEFAULT_BODY_LIMIT, adminKey: KEY }, recognition: service });
});
afterAll(async () => {
  await service?.close();
});

describe('crafted files are what they claim', () => {
  it('flat PNG and JPEG of any shape decode to that shape', async () => {
    expect(await engine.detectFaces(flatJpeg(100, 37))).toMatchObject({ width: 100, height: 37, faces: [] });
    expect(await engine.detectFaces(flatPng(64, 9))).toMatchObject({ width: 64, height: 9, faces: [] });
  });
});

describe('container checks before decoding', () => {
  it('let every test photo through, byte for byte unless it carries an iCCP chunk', () => {
    const files: string[] = [];
    const walk = (d: string) => {
      for (const f of fs.readdirSync(d, { withFileTypes: true })) {
        const p = path.join(d, f.name);
        if (f.isDirectory()) walk(p);
        else if (/\.(png|jpe?g)$/i.test(f.name)) files.push(p);
      }
    };
    walk(DATA_DIR);
    expect(files.length).toBeGreaterThan(20);
    for (const f of files) {
      const bytes = fs.readFileSync(f);
      const { bytes: out } = admitImage(bytes, IMAGE_LIMIT_DEFAULTS);
      if (!bytes.includes(Buffer.from('iCCP'))) expect(out === bytes, f).toBe(true);
    }
  });

  it('drop the iCCP chunk (libpng warned "known incorrect sRGB profile" on stderr) and still decode', async () => {
    const png = flatPng(40, 30, [iccpChunk()]);
    const { bytes } = admitImage(png, IMAGE_LIMIT_DEFAULTS);
    expect(bytes.length).toBeLessThan(png.length);
    expect(Buffer.from(bytes).includes(Buffer.from('iCCP'))).toBe(false);
    expect(await engine.detectFaces(png)).toMatchObject({ width: 40, height: 30 });
  });

  it('refuse a PNG chunk claiming 0x7fffffff bytes on every image call, cheaply', async () => {
    const bomb = pngLengthBomb();
    expect(bomb.length).toBeLessThan(200);
    const calls: (() => Promise<unknown>)[] = [
      () => engine.detectFaces(bomb),
      () => engine.embedFace(bomb),
      () => engine.detectPoses(bomb),
      () => engine.detectObjects(bomb),
    ];
    for (const call of calls) {
      const { result, growthMb } = await peakRssGrowth(call);
      expect(codeOf(result)).toBe('INVALID_IMAGE');
      expect((result as EngineError).message).toMatch(/claims 2147483647 bytes/);
      expect(growthMb).toBeLessThan(500);
    }
    // The same with IDAT as the lying chunk, and a JPEG segment running past the end.
    expect(codeOf(await engine.detectFaces(pngLengthBomb('IDAT')).catch((e: unknown) => e))).toBe('INVALID_IMAGE');
    expect(codeOf(await engine.detectFaces(jpegLengthBomb()).catch((e: unknown) => e))).toBe('INVALID_IMAGE');
  });

  it('refuse impossible PNG headers, a PNG without image data and a JPEG with too many scans', async () => {
    const badDepth = flatPng(16, 16);
    badDepth[24] = 7; // bit depth 7 (the IHDR CRC is not checked here: the structure decides)
    const noIdat = Buffer.concat([flatPng(16, 16).subarray(0, 33), pngChunk('IEND', Buffer.alloc(0))]);
    for (const bytes of [badDepth, noIdat, flatJpeg(16, 16, { scans: 101 })]) {
      const e = await engine.detectFaces(bytes).catch((x: unknown) => x);
      expect(codeOf(e)).toBe('INVALID_IMAGE');
    }
  });
});

describe('shapes no model can use', () => {
  const route = (p: string, bytes: Buffer, type: string) =>
    app.request(p, { method: 'POST', body: bytes, headers: { 'content-type': type, authorization: `Bearer ${KEY}` } });

  it('answer 400 JSON from the header on recognition and enrolment, then a normal photo still works', async () => {
    const enrolled = await route('/trainer/add/?subject=john', JOHN, 'image/jpeg');
    expect(enrolled.status, await enrolled.clone().text()).toBe(200); // predict needs a gallery
    const cases: Array<[string, Buffer, string, RegExp]> = [
      ['65500x1 JPEG', flatJpeg(65500, 1), 'image/jpeg', /65500x1.*too small/],
      ['8x60000 JPEG', flatJpeg(8, 60000), 'image/jpeg', /8x60000.*aspect ratio/],
      ['40000x1000 PNG', flatPng(40000, 1000), 'image/png', /40000x1000.*aspect ratio/],
      ['1x1,000,000 PNG', flatPng(1, 1_000_000), 'image/png', /1x1000000/],
    ];
    for (const [name, bytes, type, message] of cases) {
      for (const p of ['/recognizer/predict/', '/trainer/add/?subject=hostile', '/detector/detect/']) {
        const before = process.memoryUsage.rss();
        const res = await route(p, bytes, type);
        expect(res.status, `${name} on ${p}`).toBe(400);
        const body = (await res.json()) as { success: string; error: string };
        expect(body.success).toBe('false');
        expect(body.error, `${name} on ${p}`).toMatch(message);
        expect((process.memoryUsage.rss() - before) / MB).toBeLessThan(500);
      }
    }
    const ok = await route('/recognizer/predict/', JOHN, 'image/jpeg');
    expect(ok.status).toBe(200);
    expect(((await ok.json()) as { success: string }).success).toBe('true');
  });
});

describe('the padded second pass of recognition', () => {
  it('costs little memory even for a long thin image when the shape limits are lifted', async () => {
    const loose = await openEngine({ workers: 1, maxAspectRatio: 1_000_000, minImageSide: 1, poseModel: null, objectDetector: null });
    try {
      // Before the fix: a black border of a quarter of the longer side, 30000x10008 pixels (0.9 GB), for no face.
      const { result, growthMb } = await peakRssGrowth(() => loose.embedFace(flatJpeg(20000, 8)));
      expect(codeOf(result)).toBe('resolved');
      expect(result).toMatchObject({ width: 20000, height: 8, face: null });
      expect(growthMb).toBeLessThan(300);
      expect((await loose.embedFace(JOHN)).face).not.toBeNull();
    } finally {
      await loose.close();
    }
  });
});

describe('the face crops of recognition', () => {
  it('stay small for a face rect as wide as a long image, and map the face into the kept crop', async () => {
    // Within the default limits (30:1, 12 MP). Before the fix the 1.2x square around the rect was cut at full
    // size (14400x14400, 620 MB), and the kept crop's 2x square at 24000x24000 (1.7 GB).
    const image = flatJpeg(12000, 400);
    const { result, growthMb } = await peakRssGrowth(() => engine.embedFace(image, { rect: [0, 0, 12000, 400], keepCrop: true }));
    expect(codeOf(result)).toBe('resolved');
    expect(growthMb).toBeLessThan(300);
    const r = result as Awaited<ReturnType<Engine['embedFace']>>;
    expect(r.embedding).not.toBeNull();
    // The kept crop is at most 448 pixels, and the face rect inside it spans the crop's middle half.
    const crop = await engine.detectFaces(r.crop!.jpeg);
    expect(crop.width).toBeLessThanOrEqual(448);
    const [l, , rr] = r.crop!.rect;
    expect(rr - l).toBeGreaterThan(crop.width * 0.45);
    expect(rr - l).toBeLessThan(crop.width * 0.55);
  });
});
