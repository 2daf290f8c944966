// Resident memory of another process, sampled from /proc/<pid>/status (Linux): peak and the samples taken.

import fs from 'node:fs';

/** VmRSS of `pid` in bytes, or null when the process is gone (or this is not Linux). */
export function rssOf(pid: number): number | null {
  try {
    const m = /^VmRSS:\s+(\d+) kB/m.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) * 1024 : null;
  } catch {
    return null;
  }
}

export interface RssSampler {
  /** Highest RSS seen so far, bytes (0 before the first sample). */
  peak(): number;
  /** Every sample: [ms since start, bytes]. */
  samples(): Array<[number, number]>;
  stop(): void;
}

export function sampleRss(pid: number, everyMs = 100): RssSampler {
  const t0 = Date.now();
  const taken: Array<[number, number]> = [];
  let peak = 0;
  const take = () => {
    const rss = rssOf(pid);
    if (rss === null) return;
    peak = Math.max(peak, rss);
    taken.push([Date.now() - t0, rss]);
  };
  take();
  const timer = setInterval(take, everyMs);
  timer.unref();
  return { peak: () => peak, samples: () => taken, stop: () => clearInterval(timer) };
}
