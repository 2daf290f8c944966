// The two runtimes inside the addon: onnxruntime (dlopen'ed from onnxruntime-node's library) and OpenCV DNN.
// Which one runs each model, how a missing or wrong library is reported, and that both give the same answers
// on real photos. The first tests run before any onnxruntime is loaded in this process (one library per
// process), so they see the failures a user without it would see. Hence the system tier: its files each run in a
// process of their own, where the engine tier's share one (vitest.config.ts).
// Tier: system
import { createRequire } from 'node:module';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { Engine } from '../src/index.js';
import { nativeAddonPath } from '../src/engine/native.js';
import { findOnnxRuntimeLibrary } from '../src/engine/onnxruntime-library.js';
import { openEngine, photo } from './helpers.js';

const onlyFaces = { poseModel: null, objectDetector: null, faceEmbedder: null } as const;

describe('onnxruntime library errors (before it is loaded)', () => {
  it('runtime onnxruntime with a missing library fails Engine.open with the reason', async () => {
    await expect(openEngine({ ...onlyFaces, runtime: 'onnxruntime', onnxRuntimeLibrary: '/nonexistent/libonnxruntime.so.1' })).rejects.toThrow(
      /runtime onnxruntime is not available: cannot open onnxruntime library \/nonexistent\/libonnxruntime\.so\.1/,
    );
  });

  it('a library that is not onnxruntime is named as such', async () => {
    await expect(openEngine({ ...onlyFaces, runtime: 'onnxruntime', onnxRuntimeLibrary: nativeAddonPath() })).rejects.toThrow(
      /is not an onnxruntime library/,
    );
  });

  it('runtime auto falls back to OpenCV and says why', async () => {
    const engine = await openEngine({ ...onlyFaces, workers: 1, onnxRuntimeLibrary: '/nonexistent/libonnxruntime.so.1' });
    try {
      const backend = engine.backend();
      expect(backend.runtimes).toEqual({ faceDetector: 'opencv' });
      expect(backend.onnxRuntime).toBeNull();
      expect(backend.onnxRuntimeMissing).toMatch(/nonexistent/);
      const { faces } = await engine.detectFaces(photo('skimage/astronaut.png'));
      expect(faces).toHaveLength(1);
    } finally {
      await engine.close();
    }
  });

  it('rejects unknown runtime and backend names', async () => {
    await expect(openEngine({ runtime: 'tensorrt' as never })).rejects.toThrow(/runtime must be one of auto, onnxruntime, opencv/);
    await expect(openEngine({ backend: 'vulkan' as never })).rejects.toThrow(/backend must be one of auto, cpu, cuda, gpu/);
  });
});

describe('default engine: onnxruntime from the onnxruntime-node package', () => {
  const engines: Engine[] = [];
  afterAll(async () => {
    await Promise.all(engines.map((e) => e.close()));
  });

  it('finds the library onnxruntime-node ships, and runs every model on it', async () => {
    const found = findOnnxRuntimeLibrary({});
    expect('path' in found && found.path).toMatch(/onnxruntime-node\/bin\/napi-v6\/linux\/.*\/libonnxruntime\.so\.1$/);
    const engine = await openEngine({ workers: 1 });
    engines.push(engine);
    const backend = engine.backend();
    const ortVersion = (createRequire(import.meta.url)('onnxruntime-node/package.json') as { version: string }).version;
    expect(backend.onnxRuntime?.version).toBe(ortVersion);
    expect(path.basename(backend.onnxRuntime?.path ?? '')).toBe('libonnxruntime.so.1');
    expect(backend.runtimes).toEqual({
      faceDetector: 'onnxruntime',
      poseEstimator: 'onnxruntime',
      objectDetector: 'onnxruntime',
      personDetector: 'onnxruntime',
      faceEmbedder: 'onnxruntime',
    });
  });

  it('EDGECV_ONNXRUNTIME_LIB overrides the library, and a wrong one is reported', () => {
    expect(findOnnxRuntimeLibrary({ EDGECV_ONNXRUNTIME_LIB: '/nope/libonnxruntime.so' })).toEqual({
      missing: 'EDGECV_ONNXRUNTIME_LIB=/nope/libonnxruntime.so does not exist',
    });
    expect(findOnnxRuntimeLibrary({ EDGECV_ONNXRUNTIME_LIB: nativeAddonPath() })).toEqual({ path: nativeAddonPath() });
  });

  it('backend cuda fails without a CUDA device, and works where the backend report has one', async () => {
    const probe = engines[0]!.backend();
    if (probe.backend === 'cpu') {
      await expect(openEngine({ ...onlyFaces, backend: 'cuda' })).rejects.toThrow(/backend cuda was asked for/);
    } else {
      const engine = await openEngine({ ...onlyFaces, backend: 'cuda' });
      engines.push(engine);
      expect(engine.backend().backend).toBe('cuda');
    }
  });

  it('onnxruntime and OpenCV give the same answers on real photos', async () => {
    // fp32 on both: OpenCV runs the fp32 files (the int8 ones are checked against fp32 in int8-models.test.ts)
    const ortEngine = await openEngine({ workers: 1, precision: 'fp32' });
    engines.push(ortEngine);
    const cvEngine = await openEngine({ workers: 1, runtime: 'opencv' });
    engines.push(cvEngine);
    expect(Object.values(cvEngine.backend().runtimes)).toEqual(['opencv', 'opencv', 'opencv', 'opencv', 'opencv']);

    const close = (a: number[], b: number[], tol: number) => a.every((v, i) => Math.abs(v - b[i]!) <= tol);
    for (const file of ['dlib/faces/2008_002506.jpg', 'skimage/astronaut.png']) {
      const [a, b] = [await ortEngine.detectFaces(photo(file)), await cvEngine.detectFaces(photo(file))];
      expect(a.faces.length, file).toBeGreaterThan(0);
      expect(b.faces.length, file).toBe(a.faces.length);
      a.faces.forEach((f, i) => expect(close(f.rect, b.faces[i]!.rect, 1), file).toBe(true));
    }
    // Square photos for the objects: yolov5s' onnxruntime file runs a photo on its own aspect, OpenCV's on the square
    // (open-input-size.test.ts compares those); on a square photo both see the same input.
    for (const file of ['skimage/astronaut.png', 'skimage/camera.png']) {
      const [a, b] = [await ortEngine.detectObjects(photo(file)), await cvEngine.detectObjects(photo(file))];
      expect(a.objects.length, file).toBeGreaterThan(0);
      expect(
        b.objects.map((o) => o.className),
        file,
      ).toEqual(a.objects.map((o) => o.className));
      a.objects.forEach((o, i) => expect(Math.abs(o.score - b.objects[i]!.score), file).toBeLessThan(1e-3));
    }
    let posesCompared = 0;
    for (const file of ['darknet/person.jpg', 'darknet/dog.jpg']) {
      const [p, q] = [await ortEngine.detectPoses(photo(file)), await cvEngine.detectPoses(photo(file))];
      expect(q.poses.length, file).toBe(p.poses.length);
      p.poses.forEach((pose, i) => expect(close(pose.box, q.poses[i]!.box, 1), file).toBe(true));
      posesCompared += p.poses.length;
    }
    expect(posesCompared).toBeGreaterThan(0); // person.jpg has a person: the pose comparison ran
    const [e1, e2] = [await ortEngine.embedFace(photo('skimage/astronaut.png')), await cvEngine.embedFace(photo('skimage/astronaut.png'))];
    let cosine = 0;
    e1.embedding!.forEach((v, i) => (cosine += v * e2.embedding![i]!));
    expect(cosine).toBeGreaterThan(0.9999);
  });

  it('runModel runs either runtime on request and rejects an unknown one', async () => {
    const engine = engines[0]!;
    const input = new Float32Array(3 * 192 * 192).fill(0.25);
    const [viaOrt, viaCv] = [
      await engine.runModel('facemesh-detection-full', input),
      await engine.runModel('facemesh-detection-full', input, { runtime: 'opencv' }),
    ];
    expect(viaOrt).toHaveLength(2);
    viaOrt.forEach((out, i) => {
      expect(out.length).toBe(viaCv[i]!.length);
      let maxDiff = 0;
      out.forEach((v, j) => (maxDiff = Math.max(maxDiff, Math.abs(v - viaCv[i]![j]!))));
      expect(maxDiff).toBeLessThan(1e-3);
    });
    await expect(engine.runModel('facemesh-detection-full', input, { runtime: 'tvm' as never })).rejects.toThrow(
      /runtime must be one of onnxruntime, opencv/,
    );
  });

  it('recycles output buffers only once JS has dropped them', async () => {
    const engine = engines[0]!;
    const model = 'movenet-multipose'; // 1.5 MB of outputs a run
    // two grey images (movenet takes 0-255 pixels; at int8 anything below 0 is 0, as 0.25 nearly is)
    const input = (v: number) => new Float32Array(3 * 256 * 256).fill(v);
    const kept = await engine.runModel(model, input(64));
    const copies = kept.map((out) => out.slice());
    const before = engine.stats().recycledBuffers;
    let last: Float32Array[] = [];
    for (let i = 0; i < 100; i++) last = await engine.runModel(model, input(192));
    const after = engine.stats().recycledBuffers;
    expect(after.reused - before.reused).toBeGreaterThan(0);
    expect(after.idleBytes).toBeLessThanOrEqual(64 * 1024 * 1024);
    // Held outputs were never handed to a later run: they still hold their own run's values.
    kept.forEach((out, i) => expect(out).toEqual(copies[i]));
    expect(last[0]).not.toEqual(kept[0]);
  });
});
