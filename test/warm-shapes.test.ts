// The first request as fast as the tenth: the engine warms every model at every input shape it sees from a camera
// before open() resolves (native/runtime/shape_runs.h), so no request after that pays for a shape's first runs. Checked
// with the engine's own count of cold runs (stats().coldRuns), not with a time: every route, photos of many
// aspects (yolov5s runs each photo at its own aspect), calls alone (lent the idle cores: the wide sessions) and
// side by side (each worker's own sessions).

import jpeg from 'jpeg-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Engine } from '../src/index.js';
import { openEngine, ROOT } from './helpers.js';
import { fittedJpeg, scaledJpeg, VGA_FACE_PHOTO, VGA_SCENE_PHOTO, vgaJpeg } from '../testkit/vga-photos.js';

/** A width x height JPEG of smooth deterministic colours: no person or face, any aspect. */
function patternJpeg(width: number, height: number): Buffer {
  const data = Buffer.alloc(width * height * 4);
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      const o = (y * width + x) * 4;
      data[o] = (x * 7 + y * 3) & 255;
      data[o + 1] = (x * 2 + y * 5) & 255;
      data[o + 2] = (x ^ y) & 255;
      data[o + 3] = 255;
    }
  }
  return Buffer.from(jpeg.encode({ data, width, height }, 80).data);
}

describe('warm-up at every input shape', () => {
  let engine: Engine;
  const scene = vgaJpeg(ROOT, VGA_SCENE_PHOTO);
  const face = vgaJpeg(ROOT, VGA_FACE_PHOTO);
  // The person detector's side and under: detectObjects runs those on it (engine.ts, smallImages).
  const smallScene = scaledJpeg(ROOT, VGA_SCENE_PHOTO, 300).bytes;
  // The camera aspects the objects model is warmed at (yolo_detector.cc, WarmShapes): 16:9 both ways, square,
  // 4:3 upright, 3:2.
  const aspects = [
    [1280, 720],
    [720, 1280],
    [500, 500],
    [480, 640],
    [600, 400],
  ].map(([w, h]) => patternJpeg(w!, h!));

  beforeAll(async () => {
    engine = await openEngine({ workers: 2, threadsPerWorker: 1, idleCores: 'lend' });
  });
  afterAll(async () => {
    await engine?.close();
  });

  const everyRoute = (image: Buffer, faces: Buffer) => [
    () => engine.detectPoses(image),
    () => engine.detectPoses(image, { mode: 'whole' }),
    () => engine.detectObjects(image),
    () => engine.detectFaces(faces),
    () => engine.embedFace(faces),
  ];

  it('warmed every model at load and counts no cold run for any route, alone or side by side', async () => {
    expect(engine.stats().warmUp.runs).toBeGreaterThan(0);
    expect(engine.stats().coldRuns).toBe(0);
    const found = await engine.detectPoses(scene);
    expect(found.poses.length).toBeGreaterThan(0); // the crops' MoveNet passes run, not only the person detector
    // A request served alone: short runs are lent too while the host says so.
    const done = engine.serveRequest();
    try {
      for (const image of [scene, smallScene, ...aspects]) {
        for (const call of everyRoute(image, image === scene ? face : image)) await call();
      }
    } finally {
      done();
    }
    for (const image of [scene, aspects[0]!, aspects[1]!]) {
      for (const call of everyRoute(image, face)) await Promise.all([call(), call()]);
    }
    expect(engine.stats().coldRuns).toBe(0);
  });

  it('counts no cold run on the pose route with a person in a photo of each camera aspect, alone or side by side', async () => {
    // The scene photo (one person) fitted into 16:9, 3:2 and 4:3 frames both ways: the person detector runs the
    // frame and MoveNet the person's crop, the route's two models at whatever shapes such a frame gives them.
    const people = [
      [1280, 720],
      [720, 1280],
      [600, 400],
      [400, 600],
      [480, 640],
    ].map(([w, h]) => fittedJpeg(ROOT, VGA_SCENE_PHOTO, w!, h!));
    const before = engine.stats().coldRuns;
    const done = engine.serveRequest();
    try {
      for (const image of people) {
        const { timings } = await engine.detectPoses(image);
        expect(timings.stages!['posePasses']).toBeGreaterThanOrEqual(1); // a person was found and cropped
      }
    } finally {
      done();
    }
    for (const image of people) await Promise.all([engine.detectPoses(image), engine.detectPoses(image)]);
    expect(engine.stats().coldRuns).toBe(before);
  });

  it('counts the runs of a model or a shape that was not warmed', async () => {
    // A raw model loads on a worker at its first call: its first runs there are cold, and the count says so.
    const before = engine.stats().coldRuns;
    await engine.runModel('faceres-deep', new Float32Array(3 * 224 * 224));
    const afterModel = engine.stats().coldRuns;
    expect(afterModel).toBeGreaterThan(before);
    // A strip near the 32:1 limit runs the objects model at a shape no camera gives, which is not warmed.
    await engine.detectObjects(patternJpeg(1000, 40));
    expect(engine.stats().coldRuns).toBeGreaterThan(afterModel);
  });
});
