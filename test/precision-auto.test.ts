// precision 'auto': each model with an int8 and an fp32 file runs the faster of the two on this CPU, timed at open.
// The choice itself is checked with a timer whose outcome is forced (the library's own FormTimer parameter); the
// engine's real timing on this CPU is checked for what it must hold whatever the CPU: a choice per model, one of
// the two files, loaded, and reported by backend() and the capabilities route.
import { describe, expect, it } from 'vitest';
import type { Precision } from '../src/engine/types.js';
import { choosePrecisions, fasterForm, type FormTimer } from '../src/engine/precision-choice.js';
import { capabilitiesRoutes } from '../src/server/routes/capabilities.js';
import https from 'node:https';
import { startServerProcess } from '../testkit/server-process.js';
import { httpsRequest, openEngine, photo, useTempDirs } from './helpers.js';

/** A timer whose forms take these milliseconds (no waiting), counting its calls. */
function forcedTimer(ms: Record<string, Record<Precision, number>>): FormTimer & { calls: string[] } {
  const calls: string[] = [];
  const timer = async (model: string, precision: Precision) => {
    calls.push(`${model}:${precision}`);
    return ms[model]![precision];
  };
  return Object.assign(timer, { calls });
}

describe('precision auto: the choice', () => {
  it('picks the faster form of each model, on the medians of interleaved runs', async () => {
    const timer = forcedTimer({ movenet: { int8: 22.5, fp32: 20.9 }, yolo: { int8: 37.2, fp32: 28.9 * 2 } });
    const chosen = await choosePrecisions(['movenet', 'yolo'], timer, { warmUpRuns: 1, runs: 5, budgetMs: 10_000 });
    expect(chosen['movenet']).toEqual({ int8Ms: 22.5, fp32Ms: 20.9, runs: 5, chosen: 'fp32' });
    expect(chosen['yolo']).toEqual({ int8Ms: 37.2, fp32Ms: 57.8, runs: 5, chosen: 'int8' });
    // each model: 1 warm-up run of each form, then 5 of each, the two forms taking turns
    expect(timer.calls.filter((c) => c.startsWith('movenet:')).length).toBe(12);
    expect(timer.calls.slice(2, 6)).toEqual(['movenet:int8', 'movenet:fp32', 'movenet:fp32', 'movenet:int8']);
  });

  it('goes by the median, not by one slow run', async () => {
    let n = 0;
    // int8 is faster but one of its runs is disturbed (a slow outlier): the median still picks it
    const timer: FormTimer = async (_model, precision) => (precision === 'int8' ? (++n === 4 ? 500 : 10) : 12);
    const chosen = await choosePrecisions(['m'], timer, { warmUpRuns: 0, runs: 5, budgetMs: 10_000 });
    expect(chosen['m']!.chosen).toBe('int8');
    expect(chosen['m']!.int8Ms).toBe(10);
  });

  it('stops timing a model at its time bound, after at least 3 runs of each form', async () => {
    const timer: FormTimer = async () => {
      const t = performance.now();
      while (performance.now() - t < 5); // each run 5 ms of real time
      return 5;
    };
    const chosen = await choosePrecisions(['m'], timer, { warmUpRuns: 0, runs: 100, budgetMs: 1 });
    expect(chosen['m']!.runs).toBe(3);
  });

  it('keeps int8 on a tie', () => {
    expect(fasterForm(10, 10)).toBe('int8');
    expect(fasterForm(10, 9.9)).toBe('fp32');
    expect(fasterForm(9.9, 10)).toBe('int8');
  });
});

describe('precision auto: the engine on this CPU', () => {
  it('times each model with both files, loads the one chosen and reports it in backend() and capabilities', async () => {
    const engine = await openEngine({ precision: 'auto', workers: 1, objectDetector: null, personDetector: 'yolov5s-320' });
    try {
      const { precisions, precisionTimings } = engine.backend();
      expect(precisionTimings).toBeDefined();
      // movenet-multipose, yolov5s-320 and faceres have both files (movenet's int8 only on x64)
      const expected = process.arch === 'x64' ? ['faceEmbedder', 'personDetector', 'poseEstimator'] : ['faceEmbedder', 'personDetector'];
      expect(Object.keys(precisionTimings!).sort()).toEqual(expected);
      for (const [key, t] of Object.entries(precisionTimings!)) {
        expect(['int8', 'fp32']).toContain(t.chosen);
        expect(precisions[key]).toBe(t.chosen);
        expect(t.chosen).toBe(fasterForm(t.int8Ms, t.fp32Ms));
        expect(t.int8Ms).toBeGreaterThan(0);
        expect(t.fp32Ms).toBeGreaterThan(0);
        expect(t.runs).toBeGreaterThanOrEqual(3);
      }
      expect(precisions['faceDetector']).toBe('fp32'); // no int8 file: not timed
      // the chosen files are the ones loaded, and they answer
      expect((await engine.detectPoses(photo('darknet/person.jpg'))).poses.length).toBeGreaterThan(0);
      const caps = (await (await capabilitiesRoutes({ engine }).request('/')).json()) as {
        models: Record<string, { precision: string; precision_timing?: { int8_ms: number; fp32_ms: number } }>;
      };
      expect(caps.models['pose']!.precision).toBe(precisions['poseEstimator']);
      expect(caps.models['pose_persons']!.precision_timing).toEqual({
        int8_ms: Math.round(precisionTimings!['personDetector']!.int8Ms * 100) / 100,
        fp32_ms: Math.round(precisionTimings!['personDetector']!.fp32Ms * 100) / 100,
      });
      expect(caps.models['face_detection']!.precision_timing).toBeUndefined();
    } finally {
      await engine.close();
    }
  });

  it('reports no timings at a fixed precision', async () => {
    const engine = await openEngine({ precision: 'int8', workers: 1, objectDetector: null, poseModel: null });
    try {
      expect(engine.backend().precisionTimings).toBeUndefined();
      expect(engine.backend().precisions['faceEmbedder']).toBe('int8');
    } finally {
      await engine.close();
    }
  });
});

describe('edgecv serve --precision auto', () => {
  const tempDir = useTempDirs();

  it('says each choice and its timings in the start-up log and /server/capabilities/', async () => {
    const server = await startServerProcess(['--data-dir', tempDir(), '--workers', '1', '--precision', 'auto']);
    try {
      const agent = new https.Agent({ rejectUnauthorized: false });
      const caps = JSON.parse((await httpsRequest(`${server.url}server/capabilities/`, { agent })).text) as {
        models: Record<string, { name: string; precision: string; precision_timing?: { int8_ms: number; fp32_ms: number } }>;
      };
      // the server's default models with both files: faceres, yolov5s, yolov5s-320 (and movenet-multipose on x64)
      const timed = Object.entries(caps.models).filter(([, m]) => m.precision_timing);
      expect(timed.map(([role]) => role).sort()).toEqual(
        process.arch === 'x64' ? ['face_recognition', 'objects', 'pose', 'pose_persons'] : ['face_recognition', 'objects', 'pose_persons'],
      );
      const log = server.output();
      expect(log).toMatch(/edgecv: precision auto, the faster file of each model on this CPU/);
      for (const [, m] of timed) {
        const t = m.precision_timing!;
        expect(m.precision).toBe(t.int8_ms <= t.fp32_ms ? 'int8' : 'fp32');
      }
      const line = log.split('\n').find((l) => l.includes('precision auto'))!;
      for (const [role, m] of Object.entries(caps.models).filter(([, m]) => m.precision_timing)) {
        const key = { face_recognition: 'faceEmbedder', objects: 'objectDetector', pose: 'poseEstimator', pose_persons: 'personDetector' }[role]!;
        expect(line).toMatch(new RegExp(`${key} ${m.precision} \\(int8 [0-9.]+ ms, fp32 [0-9.]+ ms\\)`));
      }
    } finally {
      await server.stop();
    }
  });
});
