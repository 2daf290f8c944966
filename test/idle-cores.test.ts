// idleCores 'lend' (native/runtime/idle_cores.h): a job alone in the engine runs its onnxruntime inferences on
// the process-wide pool of every CPU; jobs that overlap keep to their worker's threads. Checked on the real
// addon: which runs were lent (stats().lentRuns), and that lending changes no answer.

import os from 'node:os';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Engine } from '../src/index.js';
import { openEngine, photo } from './helpers.js';

const astronaut = photo('skimage/astronaut.png');
const FACES_ONLY = { workers: 2, threadsPerWorker: 1, poseModel: null, objectDetector: null, faceEmbedder: null } as const;
// Lending needs onnxruntime on the CPU and more CPUs than one worker's threads.
const canLend = os.availableParallelism() > 1;

describe('idle cores', () => {
  let lend: Engine;
  let keep: Engine;

  beforeAll(async () => {
    lend = await openEngine({ ...FACES_ONLY, idleCores: 'lend' });
    keep = await openEngine({ ...FACES_ONLY, idleCores: 'keep' });
  });
  afterAll(async () => {
    await lend?.close();
    await keep?.close();
  });

  it('runs a lone job on the shared pool, with the same answer as a worker alone', async () => {
    expect(lend.backend().onnxRuntime).not.toBeNull();
    const before = lend.stats().lentRuns;
    const lent = [];
    for (let i = 0; i < 6; i++) lent.push(await lend.detectFaces(astronaut));
    const kept = await keep.detectFaces(astronaut);
    const lentRuns = lend.stats().lentRuns - before;
    if (canLend) expect(lentRuns).toBeGreaterThanOrEqual(6);
    else expect(lentRuns).toBe(0);
    expect(kept.faces.length).toBe(1);
    for (const r of lent) {
      expect(r.faces.length).toBe(kept.faces.length);
      const [a, b] = [r.faces[0]!, kept.faces[0]!];
      a.rect.forEach((v, i) => expect(Math.abs(v - b.rect[i]!)).toBeLessThanOrEqual(1));
      a.keypoints.forEach((v, i) => expect(Math.abs(v - b.keypoints[i]!)).toBeLessThan(1e-2));
      expect(Math.abs(a.score - b.score)).toBeLessThan(1e-4);
    }
  });

  it("never lends with idleCores 'keep'", async () => {
    for (let i = 0; i < 3; i++) await keep.detectFaces(astronaut);
    await Promise.all(Array.from({ length: 4 }, () => keep.detectFaces(astronaut)));
    expect(keep.stats().lentRuns).toBe(0);
  });

  it('lends to overlapping jobs only once the others are done', async () => {
    const calls = 12;
    const before = lend.stats().lentRuns;
    // Submitted in one tick: every job but the last to start finds others in the engine.
    const results = await Promise.all(Array.from({ length: calls }, () => lend.detectFaces(astronaut)));
    const lentRuns = lend.stats().lentRuns - before;
    expect(results.every((r) => r.faces.length === 1)).toBe(true);
    // A face job runs one or two inferences; only the last job alone may borrow the pool.
    expect(lentRuns).toBeLessThanOrEqual(2);
  });

  it('lends to runModel too, with the same outputs', async () => {
    const input = new Float32Array(3 * 192 * 192).map((_, i) => Math.sin(i) * 0.9);
    const before = lend.stats().lentRuns;
    const a = await lend.runModel('facemesh-detection-full', input, { runtime: 'onnxruntime' });
    const b = await keep.runModel('facemesh-detection-full', input, { runtime: 'onnxruntime' });
    if (canLend) expect(lend.stats().lentRuns - before).toBe(1);
    expect(a.length).toBe(b.length);
    for (let o = 0; o < a.length; o++) {
      let worst = 0;
      for (let i = 0; i < b[o]!.length; i++) worst = Math.max(worst, Math.abs(a[o]![i]! - b[o]![i]!) / Math.max(1, Math.abs(b[o]![i]!)));
      expect(worst).toBeLessThanOrEqual(1e-4);
    }
  });

  it("refuses an idleCores that is not 'lend' or 'keep'", async () => {
    await expect(openEngine({ ...FACES_ONLY, idleCores: 'share' as 'lend' })).rejects.toMatchObject({ code: 'INVALID_ARGUMENT', message: expect.stringMatching(/idleCores/) });
  });
});
