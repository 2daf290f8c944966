// Sample timestamps: integer nanoseconds since the Unix epoch (bigint, as stored), and their RFC 3339 form
// with exactly 9 fraction digits and a trailing Z, the format the metrics query answers with.

const NS_PER_MS = 1_000_000n;
const NS_PER_S = 1_000_000_000n;

// The wall clock has millisecond resolution; hrtime gives the nanoseconds in between. The anchor is taken
// again when the two drift apart by more than a few ms (an NTP step), so timestamps follow the wall clock.
let anchorWallNs = BigInt(Date.now()) * NS_PER_MS;
let anchorHr = process.hrtime.bigint();
const MAX_DRIFT_NS = 5n * NS_PER_MS;

/** Now, in nanoseconds since the epoch. */
export function nowNs(): bigint {
  const hr = process.hrtime.bigint();
  const wall = BigInt(Date.now()) * NS_PER_MS;
  let t = anchorWallNs + (hr - anchorHr);
  const drift = t - wall;
  if (drift > MAX_DRIFT_NS || drift < -MAX_DRIFT_NS) {
    anchorWallNs = wall;
    anchorHr = hr;
    t = wall;
  }
  return t;
}

export function msToNs(ms: number): bigint {
  return BigInt(Math.round(ms)) * NS_PER_MS;
}

/** 1_700_000_000_123_456_789n -> "2023-11-14T22:13:20.123456789Z" */
export function formatRfc3339Nano(ns: bigint): string {
  const seconds = ns >= 0n ? ns / NS_PER_S : (ns - NS_PER_S + 1n) / NS_PER_S;
  const fraction = ns - seconds * NS_PER_S;
  return `${wholeSeconds(Number(seconds))}.${fraction.toString().padStart(9, '0')}Z`;
}

// Answers list rows in time order, often several in the same second: remember the last second formatted.
let cachedSecond = NaN;
let cachedText = '';
function wholeSeconds(seconds: number): string {
  if (seconds !== cachedSecond) {
    cachedText = new Date(seconds * 1000).toISOString().slice(0, 19);
    cachedSecond = seconds;
  }
  return cachedText;
}

const RFC3339 = /^(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2}):(\d{2})(?:\.(\d+))?(?:([Zz])|([+-])(\d{2}):(\d{2}))$/;

/** RFC 3339 date-time (any offset, up to nanosecond fraction; more digits are truncated) -> ns, or null. */
export function parseRfc3339(text: string): bigint | null {
  const m = RFC3339.exec(text);
  if (!m) return null;
  const [year, month, day, hour, minute, second] = m.slice(1, 7).map(Number) as [number, number, number, number, number, number];
  if (month < 1 || month > 12 || hour > 23 || minute > 59 || second > 60) return null;
  const ms = Date.UTC(year, month - 1, day, hour, minute, Math.min(second, 59));
  const check = new Date(ms);
  if (check.getUTCFullYear() !== year || check.getUTCMonth() !== month - 1 || check.getUTCDate() !== day) return null;
  let offsetMin = 0;
  if (m[9] !== undefined) {
    const oh = Number(m[10]);
    const om = Number(m[11]);
    if (oh > 23 || om > 59) return null;
    offsetMin = (m[9] === '-' ? -1 : 1) * (oh * 60 + om);
  }
  const fraction = BigInt((m[7] ?? '').slice(0, 9).padEnd(9, '0'));
  // A leap second (:60) counts as the last nanosecond of :59.
  const leap = second === 60 ? NS_PER_S - 1n : 0n;
  return BigInt(ms - offsetMin * 60_000) * NS_PER_MS + (second === 60 ? leap : fraction);
}
