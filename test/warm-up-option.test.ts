// Engine.open({ warmUp: false }) skips the warm-up at open (native/jobs/warm_up.cc): for tests and tools that do
// not measure the first request. The engine answers the same; what it skipped shows as runs it did not make at open
// and as cold runs later (stats()). Bad values are refused like every other option. `edgecv serve --no-warm-up`
// sets it.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Engine, StartupPhase } from '../src/index.js';
import { parseServerConfig } from '../src/config.js';
import { engineOptionsFromConfig } from '../src/server/engine-options.js';
import { openEngine, photo, ROOT } from './helpers.js';

const OPTIONS = { workers: 1, poseModel: null, faceEmbedder: null } as const;
const SCENE = 'darknet/dog.jpg'; // 768x576: yolov5s runs it at 640x480, one of the camera shapes warm-up covers

describe('warmUp: false', () => {
  let warm: Engine;
  let cold: Engine;
  const phases: Record<'warm' | 'cold', StartupPhase[]> = { warm: [], cold: [] };
  beforeAll(async () => {
    warm = await openEngine({ ...OPTIONS, onStartupPhase: (p) => phases.warm.push(p) });
    cold = await openEngine({ ...OPTIONS, warmUp: false, onStartupPhase: (p) => phases.cold.push(p) });
  });
  afterAll(async () => {
    await Promise.all([warm?.close(), cold?.close()]);
  });

  it('makes no warm-up run at open, and pays for it as cold runs; the answers are the same', async () => {
    // the runs at open that remain are each model's at its own input size, made when it loads either way
    expect(cold.stats().warmUp.runs).toBeLessThan(warm.stats().warmUp.runs);
    expect(warm.stats().warmUp.ms).toBeGreaterThan(0);
    expect(cold.stats().warmUp.ms).toBe(0);
    const [a, b] = [await warm.detectObjects(photo(SCENE)), await cold.detectObjects(photo(SCENE))];
    expect(b.objects.map((o) => o.className)).toEqual(a.objects.map((o) => o.className));
    b.objects.forEach((o, i) => expect(o.score).toBeCloseTo(a.objects[i]!.score, 5));
    expect(warm.stats().coldRuns).toBe(0);
    expect(cold.stats().coldRuns).toBeGreaterThan(0);
  });

  it('reports each phase of open as it ends, with its time; no warm-up phase without the warm-up', () => {
    // the GPU check runs where onnxruntime is loaded with backend auto (docs/gpu.md); the other phases always
    const names = (list: StartupPhase[]) => list.map((p) => p.name).filter((n) => n !== 'GPU check');
    expect(names(phases.warm)).toEqual(['model files', 'models loaded', 'warm-up']);
    expect(names(phases.cold)).toEqual(['model files', 'models loaded']);
    for (const p of [...phases.warm, ...phases.cold]) expect(p.ms, p.name).toBeGreaterThanOrEqual(0);
    expect(phases.warm[0]!.detail).toMatch(/sha256: .*\d+ known by size and mtime/);
    const warmUp = phases.warm.find((p) => p.name === 'warm-up')!;
    expect(warmUp.ms).toBe(warm.stats().warmUp.ms);
    expect(warmUp.detail).toContain(`${warm.stats().warmUp.runs} runs`);
  });

  it('is what `edgecv serve --no-warm-up` (EDGECV_NO_WARM_UP) asks for; without it the engine warms up', () => {
    const warmUpOf = (args: string[], env: Record<string, string> = {}) => engineOptionsFromConfig(parseServerConfig(args, env, ROOT)).warmUp;
    expect(warmUpOf(['--no-warm-up'])).toBe(false);
    expect(warmUpOf([], { EDGECV_NO_WARM_UP: '1' })).toBe(false);
    expect(warmUpOf([], { EDGECV_NO_WARM_UP: 'false' })).toBe(true);
    expect(warmUpOf([])).toBeUndefined(); // the engine's default: warm up
  });

  it('refuses a value that is not a boolean', async () => {
    await expect(openEngine({ ...OPTIONS, warmUp: 'no' as unknown as boolean })).rejects.toMatchObject({
      code: 'INVALID_ARGUMENT',
      message: expect.stringMatching(/warmUp must be a boolean/),
    });
  });

  it('refuses an onStartupPhase that is not a function', async () => {
    await expect(openEngine({ ...OPTIONS, onStartupPhase: 1 as unknown as () => void })).rejects.toMatchObject({
      code: 'INVALID_ARGUMENT',
      message: expect.stringMatching(/onStartupPhase must be a function/),
    });
  });
});
