// Runs generated hostile requests against a running server and reports what came back: statuses per class,
// time per class, answers that were not JSON, 5xx answers, peak RSS of the server process, and whether it is
// still alive. Used by `npm run fuzz` (bench/fuzz/fuzz.ts) and by test/fuzz.test.ts (a short seeded run).

import fs from 'node:fs';
import path from 'node:path';
import { generateCases, type FuzzCase } from './cases.js';
import type { ChannelEmbedder } from './redis-channel.js';
import { sendRaw } from './raw-client.js';
import { rssOf, sampleRss } from './rss.js';
import { percentile } from '../../src/metrics/percentiles.js';

export interface FuzzOptions {
  host: string;
  port: number;
  /** The server's pid, for RSS sampling and the liveness check. */
  pid: number;
  seed: number;
  cases: number;
  concurrency: number;
  photos: Buffer[];
  adminKey: string;
  /** The server's --api-key, if it has one (the DeepStack routes' key cases expect 401 without it). */
  apiKey?: string;
  /** Per request; an answer slower than this counts as a timeout. Default 30 s. */
  timeoutMs?: number;
  /** Called after every case (progress output). */
  onCase?: (done: number) => void;
}

export interface KindReport {
  cases: number;
  statuses: Record<string, number>;
  p50Ms: number;
  maxMs: number;
}

export interface FuzzReport {
  seed: number;
  cases: number;
  wallMs: number;
  /** Answers by status ('closed', 'reset', 'timeout' for none). */
  statuses: Record<string, number>;
  byKind: Record<string, KindReport>;
  /** Cases answered 5xx other than 503 (overload), with their labels. */
  serverErrors: string[];
  /** Answers with a body that is not the JSON error/result shape. */
  notJson: string[];
  /** Cases the server closed (or reset, or let time out) without an answer. */
  noAnswer: string[];
  /** Cases answered with a status other than the one the server owes them (FuzzCase.expectStatus). */
  unexpected: string[];
  /** The slowest cases. */
  slowest: Array<{ label: string; ms: number }>;
  startRssBytes: number;
  peakRssBytes: number;
  /** The server process still runs after the last case. */
  alive: boolean;
}

/** Small real photos from test/data to mutate (the first `max` under 400 KB, in name order). */
export function fuzzPhotos(dataDir: string, max = 8): Buffer[] {
  const files: string[] = [];
  const walk = (d: string) => {
    for (const f of fs.readdirSync(d, { withFileTypes: true }).sort((a, b) => a.name.localeCompare(b.name))) {
      const p = path.join(d, f.name);
      if (f.isDirectory()) walk(p);
      else if (/\.(png|jpe?g)$/i.test(f.name) && fs.statSync(p).size < 400_000) files.push(p);
    }
  };
  walk(dataDir);
  if (files.length === 0) throw new Error(`no photos under ${dataDir}: run \`node scripts/setup/setup.mjs --test\``);
  // Spread the picks over the folders rather than taking one folder's first files.
  const step = Math.max(1, Math.floor(files.length / max));
  return files
    .filter((_, i) => i % step === 0)
    .slice(0, max)
    .map((f) => fs.readFileSync(f));
}

function isJsonAnswer(body: Buffer): boolean {
  try {
    const v: unknown = JSON.parse(body.toString('utf8'));
    return typeof v === 'object' && v !== null;
  } catch {
    return false;
  }
}

/** The server's embedding model from GET /server/capabilities/ (null when it has no gallery). */
async function serverEmbedder(host: string, port: number, timeoutMs: number): Promise<ChannelEmbedder | null> {
  const a = await sendRaw(host, port, Buffer.from(`GET /server/capabilities/ HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n\r\n`), timeoutMs);
  try {
    return (JSON.parse(a.body.toString('utf8')) as { gallery?: { embedder?: ChannelEmbedder } }).gallery?.embedder ?? null;
  } catch {
    return null;
  }
}

export async function runFuzz(opts: FuzzOptions): Promise<FuzzReport> {
  const timeoutMs = opts.timeoutMs ?? 30_000;
  const startRss = rssOf(opts.pid) ?? 0;
  const rss = sampleRss(opts.pid, 50);
  const t0 = performance.now();
  const statuses: Record<string, number> = {};
  const times = new Map<string, number[]>();
  const kindStatuses = new Map<string, Record<string, number>>();
  const serverErrors: string[] = [];
  const notJson: string[] = [];
  const noAnswer: string[] = [];
  const unexpected: string[] = [];
  const all: Array<{ label: string; ms: number }> = [];
  const embedder = await serverEmbedder(opts.host, opts.port, timeoutMs);
  const cases = generateCases(opts.seed, opts.cases, {
    photos: opts.photos,
    adminKey: opts.adminKey,
    ...(opts.apiKey !== undefined ? { apiKey: opts.apiKey } : {}),
    ...(embedder ? { embedder } : {}),
  });
  let done = 0;

  const runOne = async (c: FuzzCase) => {
    const a = await sendRaw(opts.host, opts.port, c.wire, timeoutMs);
    const key = a.outcome === 'answered' ? String(a.status) : a.outcome;
    statuses[key] = (statuses[key] ?? 0) + 1;
    const ks = kindStatuses.get(c.kind) ?? {};
    ks[key] = (ks[key] ?? 0) + 1;
    kindStatuses.set(c.kind, ks);
    const kindTimes = times.get(c.kind) ?? [];
    kindTimes.push(a.ms);
    times.set(c.kind, kindTimes);
    all.push({ label: `${c.kind}: ${c.label}`, ms: a.ms });
    if (a.outcome !== 'answered') noAnswer.push(`${a.outcome} ${c.kind}: ${c.label}`);
    if (c.expectStatus && !c.expectStatus.includes(a.status)) unexpected.push(`${key} (expected ${c.expectStatus.join('/')}) ${c.kind}: ${c.label}`);
    if (a.status >= 500 && a.status !== 503) serverErrors.push(`${a.status} ${c.kind}: ${c.label}`);
    const plainOk = c.plainWhenOk === true && a.outcome === 'answered' && a.status >= 200 && a.status < 300;
    if (a.outcome === 'answered' && c.expectsBody && !plainOk && a.status !== 204 && !isJsonAnswer(a.body)) {
      notJson.push(`${a.status} ${c.kind}: ${c.label}: ${a.body.subarray(0, 80).toString('latin1')}`);
    }
    opts.onCase?.(++done);
  };

  // A fixed pool of `concurrency` loops pulling from the one generator.
  await Promise.all(
    Array.from({ length: opts.concurrency }, async () => {
      for (let next = cases.next(); !next.done; next = cases.next()) await runOne(next.value);
    }),
  );
  rss.stop();

  const byKind: Record<string, KindReport> = {};
  for (const [kind, ms] of times) {
    const sorted = [...ms].sort((a, b) => a - b);
    byKind[kind] = { cases: ms.length, statuses: kindStatuses.get(kind) ?? {}, p50Ms: percentile(sorted, 50), maxMs: sorted.at(-1) ?? 0 };
  }
  return {
    seed: opts.seed,
    cases: opts.cases,
    wallMs: performance.now() - t0,
    statuses,
    byKind,
    serverErrors,
    notJson,
    noAnswer,
    unexpected,
    slowest: all.sort((a, b) => b.ms - a.ms).slice(0, 10),
    startRssBytes: startRss,
    peakRssBytes: Math.max(rss.peak(), startRss),
    alive: rssOf(opts.pid) !== null,
  };
}
