// GET /server/usage/ : how busy the machine is, as the original server answered it.
//   {"success":"true","cpu_util":12.5,"mem_util":41.3}                       (percent, floats)
//   + "gpu_util","gpu_mem_util" (percent), "gpu_memory_total","gpu_memory_used","gpu_memory_free" (MiB), strings,
//     only when the engine runs on a GPU (CUDA backend) and nvidia-smi answers.
//   + "metrics_sink": {"url","lagSeconds","backlogSamples","errors","lastError","ackedUpTo","pointsWritten","pointsRefused","lastRefusal"}
//     only with --metrics-sink (src/metrics/influx-sink.ts).

import { Hono } from 'hono';
import type { SinkStatus } from '../../metrics/influx-sink.js';
import type { FaceEngine } from '../engine-types.js';
import { CpuSampler, memoryUtil, readGpuUsage } from '../usage/system-usage.js';

/** Mounted at /server/usage. */
export function usageRoutes(deps: { engine: FaceEngine; ops?: { sink?: { status(): SinkStatus } } }): Hono {
  const cpu = new CpuSampler();
  return new Hono().get('/', async (c) => {
    const round = (n: number) => Math.round(n * 100) / 100;
    const body = { success: 'true', cpu_util: round(cpu.read()), mem_util: round(memoryUtil()) };
    const gpu = deps.engine.backend().backend === 'cuda' ? await readGpuUsage() : undefined;
    const sink = deps.ops?.sink;
    return c.json({ ...body, ...gpu, ...(sink ? { metrics_sink: sink.status() } : {}) });
  });
}
