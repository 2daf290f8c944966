// `edgecv bench`'s measurement: N clients send images back to back for a duration, over REST or WebSocket, while
// the TCP connect time (network latency) is sampled every second and /server/usage/ is polled. Memory stays bounded:
// latencies go to reservoirs, whatever the frame rate.

import net from 'node:net';
import { apiRequest, ClientError, describeNetworkError, type TlsChoice, tlsOptions } from '../api-client.js';
import { LatencyReservoir, percentile } from '../../metrics/percentiles.js';
import type { BenchImage } from './images.js';
import { restSender, webSocketSender, type Sender } from './transports.js';

export const BENCH_ROUTES = {
  detector: '/detector/detect/',
  recognizer: '/recognizer/predict/',
  pose: '/pose/detect/',
  object: '/object/detect/',
} as const;
export type BenchRoute = keyof typeof BENCH_ROUTES;
export type BenchTransport = 'rest' | 'ws';

export interface BenchOptions {
  addr: string;
  route: BenchRoute;
  transport: BenchTransport;
  clients: number;
  durationMs: number;
  images: BenchImage[];
  tls: TlsChoice;
  /** Called about twice a second while it runs (the live progress line). */
  onProgress?: (p: BenchProgress) => void;
}

export interface BenchProgress {
  elapsedMs: number;
  frames: number;
  errors: number;
  fps: number;
  roundTripP50: number;
}

export interface Percentiles {
  p50: number;
  p90: number;
  p99: number;
  mean: number;
  samples: number;
}

export interface BenchReport {
  addr: string;
  route: string;
  transport: BenchTransport;
  clients: number;
  durationS: number;
  images: number;
  /** Answers with status 200. */
  frames: number;
  /** Failed frames by status ('network' for a transport failure). */
  errors: Record<string, number>;
  fps: { total: number; perClient: number[] };
  /** Milliseconds. */
  roundTrip: Percentiles;
  /** Server processing time the answers report (serverprocessingtime), milliseconds. */
  serverTime: Percentiles;
  /** TCP connect time sampled each second, milliseconds. */
  networkLatency: Percentiles;
  /** /server/usage/ polled each second: means and maxima of its numeric fields (absent when the server has no such route). */
  usage?: Record<string, { mean: number; max: number }>;
}

function summary(r: LatencyReservoir, count: number, sum: number): Percentiles {
  const sorted = [...r.values()].sort((a, b) => a - b);
  const round = (n: number) => Math.round(n * 1000) / 1000;
  return {
    p50: round(percentile(sorted, 50)),
    p90: round(percentile(sorted, 90)),
    p99: round(percentile(sorted, 99)),
    mean: round(count ? sum / count : 0),
    samples: count,
  };
}

class Series {
  readonly reservoir = new LatencyReservoir(20_000);
  count = 0;
  sum = 0;
  add(ms: number): void {
    this.reservoir.add(ms);
    this.count++;
    this.sum += ms;
  }
  summary(): Percentiles {
    return summary(this.reservoir, this.count, this.sum);
  }
}

/** Milliseconds to open a TCP connection to the server (closed at once); undefined if it fails. */
function connectTime(host: string, port: number): Promise<number | undefined> {
  return new Promise((resolve) => {
    const t0 = performance.now();
    const socket = net.connect({ host, port, timeout: 5000 });
    socket.once('connect', () => {
      resolve(performance.now() - t0);
      socket.destroy();
    });
    socket.once('timeout', () => socket.destroy());
    socket.once('error', () => resolve(undefined));
    socket.once('close', () => resolve(undefined));
  });
}

/** The server time an answer reports: its timings' total if it has one, else serverprocessingtime. */
export function reportedServerMs(text: string): number | undefined {
  try {
    const json = JSON.parse(text) as { timings?: { totalMs?: unknown }; serverprocessingtime?: unknown };
    const t = typeof json.timings?.totalMs === 'number' ? json.timings.totalMs : Number(json.serverprocessingtime);
    return Number.isFinite(t) ? t : undefined;
  } catch {
    return undefined;
  }
}

/** Every client connects before the clock starts: connection set-up is not part of the frames' round trip. */
async function connectSenders(opts: BenchOptions, path: string): Promise<Sender[]> {
  const senderOpts = { addr: opts.addr, path, tls: tlsOptions(opts.tls), timeoutMs: 30_000 };
  const senders: Sender[] = [];
  try {
    for (let i = 0; i < opts.clients; i++) senders.push(opts.transport === 'ws' ? await webSocketSender(senderOpts) : restSender(senderOpts));
  } catch (e) {
    for (const s of senders) s.close();
    const err = e as NodeJS.ErrnoException;
    throw err.code ? describeNetworkError(opts.addr, err) : new ClientError(`${opts.addr}: ${err.message}`);
  }
  return senders;
}

/** /server/usage/'s numeric fields, summed and maxed over the polls. */
class UsagePoll {
  private fields = new Map<string, { sum: number; max: number; n: number }>();
  /** An older server has no such route: stop asking. */
  private missing = false;

  async poll(opts: BenchOptions): Promise<void> {
    if (this.missing) return;
    try {
      const u = (await apiRequest({ addr: opts.addr, method: 'GET', path: '/server/usage/', tls: opts.tls, timeoutMs: 5000 })) as Record<
        string,
        unknown
      >;
      for (const [key, value] of Object.entries(u)) {
        const n = typeof value === 'number' ? value : typeof value === 'string' && key !== 'success' ? Number(value) : NaN;
        if (!Number.isFinite(n)) continue;
        const s = this.fields.get(key) ?? { sum: 0, max: -Infinity, n: 0 };
        s.sum += n;
        s.max = Math.max(s.max, n);
        s.n++;
        this.fields.set(key, s);
      }
    } catch (e) {
      if ((e as { status?: number }).status === 404) this.missing = true; // an older server
    }
  }

  /** Means and maxima, rounded; undefined when no poll answered. */
  summary(round2: (n: number) => number): Record<string, { mean: number; max: number }> | undefined {
    if (this.fields.size === 0) return undefined;
    return Object.fromEntries([...this.fields].map(([k, s]) => [k, { mean: round2(s.sum / s.n), max: round2(s.max) }]));
  }
}

/** What one run measures while its clients send. */
class BenchRun {
  readonly roundTrip = new Series();
  readonly serverTime = new Series();
  readonly network = new Series();
  readonly usage = new UsagePoll();
  readonly errors: Record<string, number> = {};
  readonly perClient: number[];
  readonly t0 = performance.now();
  readonly end: number;
  stopped = false;

  constructor(private opts: BenchOptions) {
    this.perClient = new Array<number>(opts.clients).fill(0);
    this.end = this.t0 + opts.durationMs;
  }

  private running(): boolean {
    return performance.now() < this.end && !this.stopped;
  }

  /** One client: images back to back, each answer's round trip and reported server time recorded. */
  async client(index: number, sender: Sender): Promise<void> {
    const images = this.opts.images;
    let i = index % images.length;
    while (this.running()) {
      const image = images[i]!;
      i = (i + 1) % images.length;
      const sent = performance.now();
      try {
        const answer = await sender.send(image);
        if (answer.status === 200) {
          this.roundTrip.add(performance.now() - sent);
          this.perClient[index]!++;
          const ms = reportedServerMs(answer.text);
          if (ms !== undefined) this.serverTime.add(ms);
        } else {
          this.errors[String(answer.status)] = (this.errors[String(answer.status)] ?? 0) + 1;
        }
      } catch {
        this.errors['network'] = (this.errors['network'] ?? 0) + 1;
        await new Promise((r) => setTimeout(r, 100)); // a dead server: do not spin
      }
    }
  }

  /** Each second until the end: the TCP connect time, and /server/usage/. */
  async sample(host: string, port: number): Promise<void> {
    while (this.running()) {
      const next = performance.now() + 1000;
      const ms = await connectTime(host, port);
      if (ms !== undefined) this.network.add(ms);
      await this.usage.poll(this.opts);
      await new Promise((r) => setTimeout(r, Math.max(0, Math.min(next, this.end) - performance.now())));
    }
  }

  frames(): number {
    return this.perClient.reduce((a, b) => a + b, 0);
  }

  progress(): BenchProgress {
    const elapsed = performance.now() - this.t0;
    const frames = this.frames();
    return {
      elapsedMs: elapsed,
      frames,
      errors: Object.values(this.errors).reduce((a, b) => a + b, 0),
      fps: frames / (elapsed / 1000),
      roundTripP50: this.roundTrip.summary().p50,
    };
  }

  report(path: string): BenchReport {
    const { opts } = this;
    const seconds = (performance.now() - this.t0) / 1000;
    const round2 = (n: number) => Math.round(n * 100) / 100;
    const report: BenchReport = {
      addr: opts.addr,
      route: path,
      transport: opts.transport,
      clients: opts.clients,
      durationS: round2(seconds),
      images: opts.images.length,
      frames: this.frames(),
      errors: this.errors,
      fps: { total: round2(this.frames() / seconds), perClient: this.perClient.map((n) => round2(n / seconds)) },
      roundTrip: this.roundTrip.summary(),
      serverTime: this.serverTime.summary(),
      networkLatency: this.network.summary(),
    };
    const usage = this.usage.summary(round2);
    if (usage) report.usage = usage;
    return report;
  }
}

export async function runBench(opts: BenchOptions): Promise<BenchReport> {
  const url = new URL(opts.addr);
  const host = url.hostname.replace(/^\[|\]$/g, '');
  const port = Number(url.port || 443);
  const path = BENCH_ROUTES[opts.route];
  const senders = await connectSenders(opts, path);
  const run = new BenchRun(opts);
  const sampler = run.sample(host, port);
  const progress = opts.onProgress ? setInterval(() => opts.onProgress!(run.progress()), 500) : undefined;
  try {
    await Promise.all(senders.map((s, i) => run.client(i, s)));
  } finally {
    run.stopped = true;
    if (progress) clearInterval(progress);
    await sampler;
    for (const s of senders) s.close();
  }
  return run.report(path);
}
