// Latency percentiles over one sampling interval.

/** The percentiles of the connections series, in column order. */
export const LATENCY_PERCENTILES = [0, 25, 50, 75, 90, 95, 99, 99.5, 99.9, 100] as const;

/**
 * Percentile p (0..100) of ascending `sorted`, linearly interpolated between the closest ranks (P0 = min,
 * P100 = max). 0 for an empty list: an interval without requests has no latency to report.
 */
export function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return 0;
  const rank = (p / 100) * (sorted.length - 1);
  const lo = Math.floor(rank);
  const hi = Math.ceil(rank);
  return sorted[lo]! + (sorted[hi]! - sorted[lo]!) * (rank - lo);
}

/** The median (P50, the mean of the two middle values of an even count); 0 for an empty list. */
export function median(values: readonly number[]): number {
  return percentile(
    [...values].sort((a, b) => a - b),
    50,
  );
}

export function latencyPercentiles(values: readonly number[]): number[] {
  const sorted = [...values].sort((a, b) => a - b);
  return LATENCY_PERCENTILES.map((p) => percentile(sorted, p));
}

/**
 * Request latencies of the current interval. Under heavy load it keeps a uniform random sample of at most
 * `capacity` values (reservoir sampling), so memory stays bounded whatever the request rate.
 */
export class LatencyReservoir {
  #values: number[] = [];
  #seen = 0;
  constructor(readonly capacity = 10_000) {}

  add(ms: number): void {
    this.#seen++;
    if (this.#values.length < this.capacity) {
      this.#values.push(ms);
      return;
    }
    const j = Math.floor(Math.random() * this.#seen);
    if (j < this.capacity) this.#values[j] = ms;
  }

  /** The values kept so far, without starting a new interval. */
  values(): readonly number[] {
    return this.#values;
  }

  /** The interval's values; starts a new interval. */
  drain(): number[] {
    const out = this.#values;
    this.#values = [];
    this.#seen = 0;
    return out;
  }
}
