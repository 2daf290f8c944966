// Trying a failing step again with a doubling wait, for the gallery's first load (a store that is not up yet).

export interface RetryOptions {
  /** Longest wait between two tries. */
  maxWaitMs: number;
  /** True once the caller gave up: the wait ends early and no further try is made. */
  closed: () => boolean;
  /** Told of each failure before its wait. */
  failed: (attempt: number, waitMs: number, error: Error) => void;
}

/** Runs `step` until it succeeds (1 s, 2 s, 4 s ... apart, at most maxWaitMs); rejects when closed first. */
export async function retryUntilDone(step: () => Promise<void>, options: RetryOptions): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    try {
      await step();
      return;
    } catch (e) {
      if (options.closed()) throw e;
      const wait = Math.min(1000 * 2 ** (attempt - 1), options.maxWaitMs);
      options.failed(attempt, wait, e as Error);
      await sleepUnless(wait, options.closed);
      if (options.closed()) throw new Error('closed before the gallery could be loaded');
    }
  }
}

/** Waits `ms`, or less once `stop()` turns true (checked every 100 ms at most). */
function sleepUnless(ms: number, stop: () => boolean): Promise<void> {
  return new Promise((resolve) => {
    const started = Date.now();
    const tick = setInterval(
      () => {
        if (stop() || Date.now() - started >= ms) {
          clearInterval(tick);
          resolve();
        }
      },
      Math.min(ms, 100),
    );
  });
}
