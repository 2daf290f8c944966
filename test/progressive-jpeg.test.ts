// Progressive JPEGs (issue 48, item 7): DCT scaling saves nothing on them (every scan is entropy-decoded at full
// size first), so the pose route decodes one once and keeps it for the person crops, where a baseline one is
// decoded small for the person finder and again larger for the crops; and a JPEG whose scans times pixels pass
// MAX_SCAN_PASSES images of the largest size allowed is refused (413) before any decoder sees it. The progressive
// files are a real photo encoded here (testkit/progressive-jpeg.ts), the baseline one the same pixels.

import jpeg from 'jpeg-js';
import { beforeAll, describe, expect, it } from 'vitest';
import { flatJpeg } from '../testkit/fuzz/hostile-images.js';
import { progressiveGreyJpeg } from '../testkit/progressive-jpeg.js';
import { fittedJpeg, VGA_SCENE_PHOTO } from '../testkit/vga-photos.js';
import { DEFAULT_BODY_LIMIT } from '../src/config.js';
import { admitImage } from '../src/engine/image-admission.js';
import { MAX_SCAN_PASSES } from '../src/engine/image-container.js';
import { IMAGE_LIMIT_DEFAULTS } from '../src/engine/limits.js';
import { EngineError, type Engine } from '../src/index.js';
import { createApp } from '../src/server/app.js';
import { ROOT, sharedEngine } from './helpers.js';

let engine: Engine;
let progressive: Buffer;
let baseline: Buffer;

beforeAll(async () => {
  engine = await sharedEngine({ workers: 1 }); // nothing here reads its stats or closes it
  // A scene whose people are small in a large frame: the crops need a larger copy than the person finder's.
  const scene = jpeg.decode(fittedJpeg(ROOT, VGA_SCENE_PHOTO, 2000, 1400, 0.25), { useTArray: true });
  const grey = new Uint8Array(scene.width * scene.height);
  const rgba = Buffer.alloc(scene.width * scene.height * 4, 255);
  for (let i = 0; i < grey.length; i++) {
    const g = Math.round(0.299 * scene.data[i * 4]! + 0.587 * scene.data[i * 4 + 1]! + 0.114 * scene.data[i * 4 + 2]!);
    grey[i] = g;
    rgba[i * 4] = rgba[i * 4 + 1] = rgba[i * 4 + 2] = g;
  }
  progressive = progressiveGreyJpeg(grey, scene.width, scene.height);
  baseline = Buffer.from(jpeg.encode({ data: rgba, width: scene.width, height: scene.height }, 90).data);
}, 120_000);

describe('a progressive JPEG on the pose route', () => {
  it('is decoded once and finds the people the baseline one finds', async () => {
    expect(progressive.readUInt16BE(2 + 4 + 65)).toBe(0xffc2); // after SOI and the DQT: a progressive frame header
    const b = await engine.detectPoses(baseline);
    expect(b.timings.stages!['decodes']).toBe(2); // small for the finder, larger for the crops
    const p = await engine.detectPoses(progressive);
    expect(p.timings.stages!['decodes']).toBe(1);
    expect(b.poses.length).toBeGreaterThan(0);
    expect(p.poses.length).toBe(b.poses.length);
    expect([p.width, p.height]).toEqual([2000, 1400]);
  }, 60_000);
});

describe('the scans a JPEG may have', () => {
  const app = () => createApp({ engine, config: { bodyLimit: DEFAULT_BODY_LIMIT } });
  const limit = IMAGE_LIMIT_DEFAULTS.maxPixels * MAX_SCAN_PASSES;

  it('refuse a JPEG whose scans times pixels pass the limit, with 413 and why', async () => {
    const scans = Math.floor(limit / (6000 * 6000)) + 1; // 14 scans of 6000x6000: a 2 MB file
    const tooMany = flatJpeg(6000, 6000, { scans });
    expect(tooMany.length).toBeLessThan(3_000_000);
    const e = await engine.detectPoses(tooMany).catch((x: unknown) => x);
    expect(e).toBeInstanceOf(EngineError);
    expect((e as EngineError).code).toBe('IMAGE_TOO_LARGE');
    const res = await app().request('/pose/detect/', { method: 'POST', body: tooMany, headers: { 'content-type': 'image/jpeg' } });
    expect(res.status).toBe(413);
    expect(((await res.json()) as { error: string }).error).toMatch(/6000x6000 with more than 13 scans.*pixel-passes/);
  });

  it('take a small image with many scans, and a large one with a standard number', async () => {
    // 16 x 16 with 100 scans: 25,600 pixel-passes; 2000 x 1400 progressive with 11 scans: 31 million
    expect(() => admitImage(flatJpeg(16, 16, { scans: 100 }), IMAGE_LIMIT_DEFAULTS)).not.toThrow();
    expect(() => admitImage(flatJpeg(6000, 6000, { scans: 13 }), IMAGE_LIMIT_DEFAULTS)).not.toThrow();
    await expect(engine.detectFaces(progressive)).resolves.toMatchObject({ width: 2000, height: 1400 });
  });
});
