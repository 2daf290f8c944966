// Face detection through the library API, real addon, real models, real photos.
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { matchDetections, parseImglabXml, type Rect } from '../testkit/face-annotations.js';
import { evaluateFaceDetector, FACELESS_PHOTOS } from '../testkit/face-eval.js';
import { autoTiles, Engine, EngineError } from '../src/index.js';
import { DATA_DIR, garbage, photo, pngClaiming, sharedEngine } from './helpers.js';

/** Engines that only detect faces, opened without the warm-up (these tests time nothing). */
const FACES_ONLY = { poseModel: null, objectDetector: null, personDetector: null, faceEmbedder: null, warmUp: false } as const;

describe('face detection (default detector and options)', () => {
  let engine: Engine;
  beforeAll(async () => {
    engine = await sharedEngine({ workers: 2 }); // one thread each; no test here counts on a fresh engine's stats
  });

  it('finds the annotated faces of the dlib group photos: recall and precision >= 0.95, boxes overlap', async () => {
    const r = await evaluateFaceDetector(engine, DATA_DIR, {}, 0.5);
    expect(r.faces).toBe(43);
    expect(r.recall).toBeGreaterThanOrEqual(0.95);
    expect(r.precision).toBeGreaterThanOrEqual(0.95);
    expect(r.meanIou).toBeGreaterThanOrEqual(0.7);
    expect(r.facelessDetections).toBe(0);
  });

  it('gives each annotated photo its own face count', async () => {
    for (const image of parseImglabXml(join(DATA_DIR, 'dlib/faces/testing.xml'))) {
      const found = await engine.detectFaces(photo(`dlib/faces/${image.file}`));
      const m = matchDetections(
        found.faces.map((f) => f.rect as Rect),
        image.boxes,
        0.5,
      );
      // At most one face missed or extra per photo, and every photo's faces mostly found.
      expect(Math.abs(found.faces.length - image.boxes.length), image.file).toBeLessThanOrEqual(1);
      expect(m.truePositives, image.file).toBeGreaterThanOrEqual(image.boxes.length - 1);
    }
  });

  it.each(FACELESS_PHOTOS)('finds no face in %s', async (file) => {
    const found = await engine.detectFaces(photo(file));
    expect(found.faces).toEqual([]);
  });

  it('finds the one face of the astronaut portrait, in the upper half, with six keypoints inside it', async () => {
    const found = await engine.detectFaces(photo('skimage/astronaut.png'));
    expect(found.width).toBe(512);
    expect(found.height).toBe(512);
    expect(found.format).toBe('png');
    expect(found.faces).toHaveLength(1);
    const [face] = found.faces;
    const [l, t, r, b] = face.rect;
    expect(b).toBeLessThan(256);
    expect(r - l).toBeGreaterThan(60);
    expect(face.score).toBeGreaterThan(0.6);
    expect(face.keypoints).toHaveLength(12);
    // Eyes, nose and mouth (the first four points) lie inside the face box.
    for (let k = 0; k < 4; k++) {
      const [x, y] = [face.keypoints[2 * k], face.keypoints[2 * k + 1]];
      expect(x).toBeGreaterThan(l);
      expect(x).toBeLessThan(r);
      expect(y).toBeGreaterThan(t);
      expect(y).toBeLessThan(b);
    }
  });

  it('rects are integers inside the image', async () => {
    const found = await engine.detectFaces(photo('dlib/faces/bald_guys.jpg'));
    expect(found.faces.length).toBeGreaterThan(0);
    for (const { rect } of found.faces) {
      expect(rect.every(Number.isInteger)).toBe(true);
      expect(rect[0]).toBeGreaterThanOrEqual(0);
      expect(rect[1]).toBeGreaterThanOrEqual(0);
      expect(rect[2]).toBeLessThanOrEqual(found.width);
      expect(rect[3]).toBeLessThanOrEqual(found.height);
      expect(rect[2]).toBeGreaterThan(rect[0]);
      expect(rect[3]).toBeGreaterThan(rect[1]);
    }
  });

  it('tiles large photos automatically: the 25-face collage needs them', async () => {
    const image = photo('dlib/faces/bald_guys.jpg'); // 1986x1545, 25 faces
    expect(autoTiles(1986, 1545)).toBe(2);
    const whole = await engine.detectFaces(image, { tiles: 0 });
    const auto = await engine.detectFaces(image);
    expect(auto.faces.length).toBeGreaterThanOrEqual(23);
    expect(auto.faces.length).toBeLessThanOrEqual(26);
    expect(auto.faces.length).toBeGreaterThan(whole.faces.length);
  });

  it('auto tiling leaves ordinary photos whole', () => {
    expect(autoTiles(500, 375)).toBe(0);
    expect(autoTiles(1280, 720)).toBe(0);
    expect(autoTiles(1920, 1080)).toBe(2);
    expect(autoTiles(4000, 3000)).toBe(4);
    expect(autoTiles(20000, 100)).toBe(4);
  });

  it('answers the same for the same photo, under concurrency', async () => {
    const image = photo('dlib/faces/2008_002470.jpg');
    const results = await Promise.all(Array.from({ length: 24 }, () => engine.detectFaces(image)));
    const first = JSON.stringify(results[0].faces);
    expect(results[0].faces.length).toBeGreaterThan(0);
    for (const r of results) expect(JSON.stringify(r.faces)).toBe(first);
  });

  it('reports per-stage timings', async () => {
    const { timings } = await engine.detectFaces(photo('skimage/astronaut.png'));
    for (const key of ['queueMs', 'decodeMs', 'preprocessMs', 'inferenceMs', 'postprocessMs'] as const) {
      expect(timings[key]).toBeGreaterThanOrEqual(0);
    }
    expect(timings.inferenceMs).toBeGreaterThan(0);
  });

  it('rejects bad input with typed errors and keeps working', async () => {
    const code = (p: Promise<unknown>) =>
      p.then(
        () => 'resolved',
        (e: unknown) => (e instanceof EngineError ? e.code : `untyped ${String(e)}`),
      );
    expect(await code(engine.detectFaces(garbage(5000)))).toBe('UNSUPPORTED_FORMAT');
    expect(await code(engine.detectFaces(Buffer.alloc(0)))).toBe('INVALID_IMAGE');
    const jpeg = photo('darknet/dog.jpg');
    expect(await code(engine.detectFaces(jpeg.subarray(0, 2000)))).toBe('INVALID_IMAGE');
    expect(await code(engine.detectFaces(pngClaiming(30000, 30000)))).toBe('IMAGE_TOO_LARGE');
    expect(await code(engine.detectFaces(jpeg, { scoreThreshold: 2 }))).toBe('INVALID_ARGUMENT');
    expect(await code(engine.detectFaces(jpeg, { tiles: 99 }))).toBe('INVALID_ARGUMENT');
    expect(await code(engine.detectFaces('not a buffer' as unknown as Buffer))).toBe('INVALID_ARGUMENT');
    expect((await engine.detectFaces(photo('skimage/astronaut.png'))).faces).toHaveLength(1);
  });
});

describe('engine queue and lifecycle', () => {
  it('rejects at once with OVERLOADED when the queue is full, and counts it', async () => {
    const engine = await Engine.open({ workers: 1, queueLimit: 2, ...FACES_ONLY });
    try {
      const image = photo('dlib/faces/2008_002470.jpg');
      const settled = await Promise.allSettled(Array.from({ length: 12 }, () => engine.detectFaces(image)));
      const rejected = settled.filter((s) => s.status === 'rejected');
      // queueLimit waiting jobs are always taken; one more if the worker had already picked one up.
      const fulfilled = settled.filter((s) => s.status === 'fulfilled').length;
      expect(fulfilled).toBeGreaterThanOrEqual(2);
      expect(fulfilled).toBeLessThanOrEqual(3);
      expect(rejected.length).toBeGreaterThan(0);
      for (const r of rejected) expect((r as PromiseRejectedResult).reason).toMatchObject({ code: 'OVERLOADED' });
      expect(engine.stats().rejected).toBe(rejected.length);
    } finally {
      await engine.close();
    }
  });

  it('finishes queued work on close, then rejects with CLOSED', async () => {
    const engine = await Engine.open({ workers: 1, ...FACES_ONLY });
    const backend = engine.backend();
    const image = photo('skimage/astronaut.png');
    const pending = Array.from({ length: 4 }, () => engine.detectFaces(image));
    await engine.close();
    const results = await Promise.all(pending);
    expect(results).toHaveLength(4);
    for (const r of results) expect(r.faces).toHaveLength(1);
    await expect(engine.detectFaces(image)).rejects.toMatchObject({ code: 'CLOSED' });
    // The backend report outlives the workers (whatever the device: CPU here, CUDA elsewhere).
    expect(engine.backend()).toEqual(backend);
  });
});
