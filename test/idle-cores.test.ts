// idleCores 'lend' (native/runtime/idle_cores.h): a long inference whose job is alone in the engine runs on a wide
// session with a thread per CPU; jobs that overlap keep to their worker's threads, and so do short runs unless the
// host (Engine.serveRequest) serves their request alone. Checked on
// the real addon: which runs were lent (stats().lentRuns), and that lending changes no answer.

import os from 'node:os';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Engine } from '../src/index.js';
import { DEFAULT_BODY_LIMIT } from '../src/config.js';
import { createApp } from '../src/server/app.js';
import { openEngine, photo } from './helpers.js';

const LAYOUT = { workers: 2, threadsPerWorker: 1, poseModel: null, objectDetector: null, faceEmbedder: null } as const;
// Lending needs onnxruntime on the CPU and more CPUs than one worker's threads.
const canLend = os.availableParallelism() > 1;
// The shortest run that is lent (kMinLentRunMs in idle_cores.h).
const MIN_LENT_RUN_MS = 10;
// yolov5s at 320 px: about 25 ms a run on one thread of the reference machine, well above MIN_LENT_RUN_MS.
const LONG_MODEL = 'yolov5s-320';
const longInput = new Float32Array(3 * 320 * 320).map((_, i) => (Math.sin(i) + 1) / 2);

function worstRelativeError(a: Float32Array[], b: Float32Array[]): number {
  expect(a.length).toBe(b.length);
  let worst = 0;
  for (let o = 0; o < a.length; o++) {
    expect(a[o]!.length).toBe(b[o]!.length);
    for (let i = 0; i < b[o]!.length; i++) worst = Math.max(worst, Math.abs(a[o]![i]! - b[o]![i]!) / Math.max(1, Math.abs(b[o]![i]!)));
  }
  return worst;
}

describe('idle cores', () => {
  let lend: Engine;
  let keep: Engine;

  beforeAll(async () => {
    lend = await openEngine({ ...LAYOUT, idleCores: 'lend' });
    keep = await openEngine({ ...LAYOUT, idleCores: 'keep' });
    expect(lend.backend().onnxRuntime).not.toBeNull();
  });
  afterAll(async () => {
    await lend?.close();
    await keep?.close();
  });

  it('lends a long run whose job is alone, with the same outputs as on one thread', async () => {
    const kept = await keep.runModel(LONG_MODEL, longInput);
    const before = lend.stats().lentRuns;
    const lent = [];
    // Each worker times its first run on its own thread; from then on a lone job's run is lent.
    for (let i = 0; i < 6; i++) lent.push(await lend.runModel(LONG_MODEL, longInput));
    const lentRuns = lend.stats().lentRuns - before;
    if (canLend) expect(lentRuns).toBeGreaterThanOrEqual(4);
    else expect(lentRuns).toBe(0);
    for (const outputs of lent) expect(worstRelativeError(outputs, kept)).toBeLessThanOrEqual(1e-4);
  });

  it("never lends with idleCores 'keep'", async () => {
    for (let i = 0; i < 3; i++) await keep.runModel(LONG_MODEL, longInput);
    await Promise.all(Array.from({ length: 4 }, () => keep.runModel(LONG_MODEL, longInput)));
    expect(keep.stats().lentRuns).toBe(0);
  });

  it('lends to overlapping jobs only once the others are done', async () => {
    for (let i = 0; i < 4; i++) await lend.runModel(LONG_MODEL, longInput); // both workers have timed the model
    const calls = 8;
    const before = lend.stats().lentRuns;
    // Submitted in one tick: every job but the last to start finds others in the engine.
    await Promise.all(Array.from({ length: calls }, () => lend.runModel(LONG_MODEL, longInput)));
    expect(lend.stats().lentRuns - before).toBeLessThanOrEqual(1);
  });

  it('keeps short runs on the worker threads unless the host serves their request alone', async () => {
    const astronaut = photo('skimage/astronaut.png');
    const kept = await keep.detectFaces(astronaut);
    const sameFaces = (r: Awaited<ReturnType<Engine['detectFaces']>>) => {
      expect(r.faces.length).toBe(kept.faces.length);
      r.faces[0]!.rect.forEach((v, i) => expect(Math.abs(v - kept.faces[0]!.rect[i]!)).toBeLessThanOrEqual(1));
    };
    const lentDuring = async (calls: number) => {
      const before = lend.stats().lentRuns;
      const results = [];
      for (let i = 0; i < calls; i++) results.push(await lend.detectFaces(astronaut));
      results.forEach(sameFaces);
      return { lent: lend.stats().lentRuns - before, short: results.every((r) => r.timings.inferenceMs < MIN_LENT_RUN_MS) };
    };
    // No host has said what it serves (a library user): face detection runs take a few ms here and none is lent
    // (on a machine where one took over the threshold, it would rightly have been).
    const alone = await lentDuring(6);
    if (alone.short) expect(alone.lent).toBe(0);
    // The host serves this one request: every run is lent.
    const one = lend.serveRequest();
    try {
      const served = await lentDuring(6);
      expect(served.lent).toBe(canLend ? 6 : 0);
      // Another request in flight: back on the worker's thread.
      const two = lend.serveRequest();
      try {
        const busy = await lentDuring(6);
        if (busy.short) expect(busy.lent).toBe(0);
      } finally {
        // Ending is idempotent: the count goes back to one request, not below.
        two();
        two();
      }
      expect((await lentDuring(2)).lent).toBe(canLend ? 2 : 0);
    } finally {
      one();
    }
    const after = await lentDuring(2);
    if (after.short) expect(after.lent).toBe(0);
  });

  it("counts each HTTP request in flight: a lone request's face detection is lent, and the count ends with it", async () => {
    const app = createApp({ engine: lend, config: { bodyLimit: DEFAULT_BODY_LIMIT } });
    const body = photo('skimage/astronaut.png');
    for (let i = 0; i < 2; i++) {
      const before = lend.stats().lentRuns;
      const res = await app.request('/detector/detect/', { method: 'POST', headers: { 'content-type': 'image/png' }, body });
      expect(res.status).toBe(200);
      expect(lend.stats().lentRuns - before).toBe(canLend ? 1 : 0);
    }
    // the requests are over: a library call's short run keeps to its worker's thread again
    const before = lend.stats().lentRuns;
    const r = await lend.detectFaces(body);
    if (r.timings.inferenceMs < MIN_LENT_RUN_MS) expect(lend.stats().lentRuns - before).toBe(0);
  });

  it("refuses an idleCores that is not 'lend' or 'keep'", async () => {
    await expect(openEngine({ ...LAYOUT, idleCores: 'share' as 'lend' })).rejects.toMatchObject({
      code: 'INVALID_ARGUMENT',
      message: expect.stringMatching(/idleCores/),
    });
  });
});
