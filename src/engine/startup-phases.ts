// Engine.open's phases, each timed as it ends, for EngineOptions.onStartupPhase: where an open's time goes. It is
// seconds on a server CPU and minutes on a small board or under emulation (docs/deploy.md, "arm64"), where an
// operator waiting for /health/ready should see which phase it is in and what each one cost.

import type { GpuPlan } from './gpu-check.js';
import { hashedSoFar } from './model-integrity.js';
import type { StartupPhase, StartupPhaseName } from './types.js';

export class PhaseClock {
  #at = performance.now();
  #hashed = hashedSoFar();
  readonly #report: ((phase: StartupPhase) => void) | undefined;

  constructor(report: ((phase: StartupPhase) => void) | undefined) {
    this.#report = report;
  }

  /** ms since the last lap (or the start). */
  sinceLap(): number {
    return performance.now() - this.#at;
  }

  /** Ends the phase running since the last call: reports it, or only restarts the clock where `detail` is null. */
  lap(name: StartupPhaseName, detail: string | null, ms = performance.now() - this.#at): void {
    this.#at = performance.now();
    if (detail !== null) this.#report?.({ name, ms, detail });
  }

  /** Ends the native engine's creation: its load, less the warm-up it made (native stats), and the warm-up. */
  loaded(warm: { runs: number; ms: number }, names: Record<string, string | undefined>, workers: number, warmedUp: boolean): void {
    const models = Object.values(names).filter((n) => n !== undefined).length;
    this.lap('models loaded', `${models} models, a copy on each of ${workers} worker${workers === 1 ? '' : 's'}`, this.sinceLap() - warm.ms);
    if (warmedUp) this.lap('warm-up', `${warm.runs} runs: every model at each input shape it takes, every route's path once per worker`, warm.ms);
  }

  /** The model files' check since the clock started: how many were hashed, and how many known from the cache. */
  modelFiles(): string {
    const now = hashedSoFar();
    const [files, bytes, known] = [now.files - this.#hashed.files, now.bytes - this.#hashed.bytes, now.known - this.#hashed.known];
    this.#hashed = now;
    const hashed = files > 0 ? `${files} hashed (${(bytes / 1e6).toFixed(0)} MB)` : 'none hashed';
    return `manifest read; model files checked against its sha256: ${hashed}, ${known} known by size and mtime`;
  }
}

/** The GPU check's verdict in words: where no usable adapter (or no WebGPU provider) was found, why. */
export function gpuVerdict(plan: GpuPlan, onGpu: number): string {
  if (plan.adapter === null) return 'CUDA: every net there';
  if (!plan.adapter.usable) return `no GPU: ${plan.adapter.why ?? 'none found'}`;
  return `${onGpu} of ${Object.keys(plan.nets).length} nets on ${plan.adapter.device ?? 'the GPU'}`;
}
