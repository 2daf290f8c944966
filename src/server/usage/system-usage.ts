// What /server/usage/ reports: whole-machine CPU and memory use in percent, and the GPU's use read from the driver
// (nvidia-smi) when the engine runs on CUDA.

import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';

interface CpuSnapshot {
  idle: number;
  total: number;
}

function cpuSnapshot(): CpuSnapshot {
  let idle = 0;
  let total = 0;
  for (const cpu of os.cpus()) {
    const t = cpu.times;
    idle += t.idle;
    total += t.user + t.nice + t.sys + t.idle + t.irq;
  }
  return { idle, total };
}

/**
 * CPU use of the whole machine between two readings (percent, 0..100). A reading less than minWindowMs after the
 * previous one returns the previous value, so that clients polling fast do not get noise from a few ticks.
 */
export class CpuSampler {
  #last = cpuSnapshot();
  #lastAt = performance.now();
  #value: number;

  constructor(private readonly minWindowMs = 250) {
    // until a first window has passed: the average since boot
    this.#value = this.#last.total > 0 ? (100 * (this.#last.total - this.#last.idle)) / this.#last.total : 0;
  }

  read(): number {
    const now = performance.now();
    if (now - this.#lastAt >= this.minWindowMs) {
      const next = cpuSnapshot();
      const total = next.total - this.#last.total;
      if (total > 0) this.#value = (100 * (total - (next.idle - this.#last.idle))) / total;
      this.#last = next;
      this.#lastAt = now;
    }
    return Math.min(100, Math.max(0, this.#value));
  }
}

/** Memory in use (percent): total minus MemAvailable from /proc/meminfo (os.freemem() elsewhere, which counts caches as used). */
export function memoryUtil(): number {
  const total = os.totalmem();
  let available = os.freemem();
  try {
    const m = /^MemAvailable:\s+(\d+) kB$/m.exec(fs.readFileSync('/proc/meminfo', 'utf8'));
    if (m) available = Number(m[1]) * 1024;
  } catch {
    // not Linux: os.freemem()
  }
  return (100 * (total - available)) / total;
}

export interface GpuUsage {
  gpu_util: string;
  gpu_mem_util: string;
  gpu_memory_total: string;
  gpu_memory_used: string;
  gpu_memory_free: string;
}

export const NVIDIA_SMI_ARGS = [
  '--query-gpu=utilization.gpu,utilization.memory,memory.total,memory.used,memory.free',
  '--format=csv,noheader,nounits',
];

/** The first GPU's line of `nvidia-smi ${NVIDIA_SMI_ARGS}` (e.g. "37, 12, 81559, 1234, 80325"); undefined if it is not that. */
export function parseNvidiaSmi(stdout: string): GpuUsage | undefined {
  const fields = (stdout.split('\n')[0] ?? '').split(',').map((f) => f.trim());
  if (fields.length !== 5 || fields.some((f) => !/^\d+(\.\d+)?$/.test(f))) return undefined;
  const [util, memUtil, total, used, free] = fields as [string, string, string, string, string];
  return { gpu_util: util, gpu_mem_util: memUtil, gpu_memory_total: total, gpu_memory_used: used, gpu_memory_free: free };
}

/** The GPU's use from nvidia-smi (2 s at most); undefined when it is missing or says something else. */
export function readGpuUsage(): Promise<GpuUsage | undefined> {
  return new Promise((resolve) => {
    execFile('nvidia-smi', NVIDIA_SMI_ARGS, { timeout: 2000, encoding: 'utf8' }, (err, stdout) => {
      resolve(err ? undefined : parseNvidiaSmi(stdout));
    });
  });
}
