// precision 'auto': each model with an int8 and an fp32 file runs whichever is faster on this CPU, measured at
// Engine.open. An int8 file is not faster everywhere: on CPUs without VNNI its 8-bit weights run onnxruntime's
// exact kernels, and movenet-multipose's int8 file gained nothing on a VNNI EPYC (docs/int8.md). The two forms take
// turns run by run after their warm-up, each model within a time bound, and the faster median wins.
//
// The timer is a parameter: the engine times real runs on a worker (nativeFormTimer); a caller can pass another.

import type { Precision, PrecisionTiming } from './types.js';

/** Milliseconds of one forward pass of `model`'s file at `precision`. */
export type FormTimer = (model: string, precision: Precision) => Promise<number>;

export interface PrecisionChoiceLimits {
  /** Untimed runs of each form first (session set-up, the first allocations). */
  warmUpRuns: number;
  /** Timed runs of each form, at most. */
  runs: number;
  /** Stop timing a model after this long (at least 3 runs of each form are timed). */
  budgetMs: number;
}

export const PRECISION_CHOICE_LIMITS: PrecisionChoiceLimits = { warmUpRuns: 2, runs: 7, budgetMs: 1500 };
const MIN_RUNS = 3;

function median(values: readonly number[]): number {
  const s = [...values].sort((a, b) => a - b);
  const mid = s.length >> 1;
  return s.length % 2 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
}

/** The faster form by median; a tie keeps int8 (the smaller file, the default). */
export function fasterForm(int8Ms: number, fp32Ms: number): Precision {
  return fp32Ms < int8Ms ? 'fp32' : 'int8';
}

/** Times both forms of each model, one model after another, and chooses the faster for each. */
export async function choosePrecisions(
  models: readonly string[],
  timeRun: FormTimer,
  limits: PrecisionChoiceLimits = PRECISION_CHOICE_LIMITS,
): Promise<Record<string, PrecisionTiming>> {
  const out: Record<string, PrecisionTiming> = {};
  for (const model of new Set(models)) {
    for (let i = 0; i < limits.warmUpRuns; i++) {
      await timeRun(model, 'int8');
      await timeRun(model, 'fp32');
    }
    const int8: number[] = [];
    const fp32: number[] = [];
    const start = performance.now();
    // int8 first on even rounds, fp32 on odd: neither always runs right after the other's.
    for (let round = 0; round < limits.runs; round++) {
      if (round >= MIN_RUNS && performance.now() - start > limits.budgetMs) break;
      const order: Precision[] = round % 2 === 0 ? ['int8', 'fp32'] : ['fp32', 'int8'];
      for (const p of order) (p === 'int8' ? int8 : fp32).push(await timeRun(model, p));
    }
    const int8Ms = median(int8);
    const fp32Ms = median(fp32);
    out[model] = { int8Ms, fp32Ms, runs: int8.length, chosen: fasterForm(int8Ms, fp32Ms) };
  }
  return out;
}
