// GET /server/usage/ with the real engine (CPU backend here: no GPU fields), and the nvidia-smi line it reads on a
// CUDA backend.

import os from 'node:os';
import { beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_BODY_LIMIT } from '../src/config.js';
import type { Engine } from '../src/index.js';
import { createApp } from '../src/server/app.js';
import { CpuSampler, parseNvidiaSmi } from '../src/server/usage/system-usage.js';
import { sharedEngine } from './helpers.js';

let engine: Engine;
beforeAll(async () => {
  engine = await sharedEngine({ workers: 1 });
});

describe('/server/usage/', () => {
  it('answers CPU and memory use in percent, and no GPU fields without a GPU', async () => {
    const app = createApp({ engine, config: { bodyLimit: DEFAULT_BODY_LIMIT } });
    expect(engine.backend().backend).not.toBe('cuda');
    for (const path of ['/server/usage/', '/server/usage']) {
      const res = await app.request(path);
      expect(res.status).toBe(200);
      const body = (await res.json()) as Record<string, unknown>;
      expect(Object.keys(body)).toEqual(['success', 'cpu_util', 'mem_util']);
      expect(body['success']).toBe('true');
      for (const key of ['cpu_util', 'mem_util']) {
        expect(typeof body[key]).toBe('number');
        expect(body[key]).toBeGreaterThanOrEqual(0);
        expect(body[key]).toBeLessThanOrEqual(100);
      }
      // a machine running this test uses some memory
      expect(body['mem_util']).toBeGreaterThan(0);
    }
    expect((await app.request('/server/usage/', { method: 'POST' })).status).toBe(405);
  });

  it('measures CPU use over a window: a busy loop shows up', () => {
    const sampler = new CpuSampler(50);
    sampler.read();
    const until = performance.now() + 300;
    let x = 0;
    while (performance.now() < until) x += Math.sqrt(x + 1);
    expect(x).toBeGreaterThan(0);
    // one of the machine's cores was busy the whole window: at least a share of 100 / cores (minus tick rounding)
    // os.cpus() is what the sampler sums over (Node 20 has no navigator.hardwareConcurrency)
    const cores = os.cpus().length;
    expect(sampler.read()).toBeGreaterThan(100 / cores / 2);
  });

  it('reads the GPU fields from the nvidia-smi query line', () => {
    expect(parseNvidiaSmi('37, 12, 81559, 1234, 80325\n')).toEqual({
      gpu_util: '37',
      gpu_mem_util: '12',
      gpu_memory_total: '81559',
      gpu_memory_used: '1234',
      gpu_memory_free: '80325',
    });
    expect(parseNvidiaSmi('NVIDIA-SMI has failed because it could not communicate with the NVIDIA driver.')).toBeUndefined();
    expect(parseNvidiaSmi('[N/A], 12, 81559, 1234, 80325')).toBeUndefined();
  });
});
