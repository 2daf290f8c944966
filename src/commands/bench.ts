// `edgecv bench --addr https://host:8008 --route detector|recognizer|pose|object --transport rest|ws --clients N
//  --duration 30s --images DIR|FILE [--resize 240] [--insecure | --cacert F] [--json]`: measures a server from
// outside, like the original multi_client: round trip, server time, network latency, FPS, errors, server usage.

import path from 'node:path';
import { apiRequest, ClientError, normalizeAddr, type TlsChoice } from '../client/api-client.js';
import { loadBenchImages } from '../client/bench/images.js';
import {
  BENCH_ROUTES,
  runBench,
  type BenchProgress,
  type BenchReport,
  type BenchRoute,
  type BenchTransport,
  type Percentiles,
} from '../client/bench/run-bench.js';
import { ConfigError } from '../config.js';
import { parseCommandArgs, requiredFlag, stringFlag } from './args.js';

export const BENCH_USAGE = `usage: edgecv bench --addr https://host:8008 --images DIR|FILE
         [--route detector|recognizer|pose|object] [--transport rest|ws] [--clients N] [--duration 30s]
         [--resize WIDTH] [--cacert FILE | --insecure] [--json]

Sends the images (JPEG/PNG, round robin) from N clients back to back for the duration, each client on its own
keep-alive HTTPS connection (rest) or WebSocket (ws), and reports the round trip, the server time the answers
report, the network latency (TCP connect time, sampled each second), FPS per client and in total, errors by status,
p50/p90/p99, and the server's /server/usage/. --resize scales every image to WIDTH pixels wide (JPEG) first.
Defaults: --route detector --transport rest --clients 1 --duration 30s.`;

/** '30s', '2.5s', '500ms', '1m', or a number of seconds -> milliseconds. */
export function parseDuration(text: string): number {
  const m = /^(\d+(?:\.\d+)?)(ms|s|m)?$/.exec(text.trim());
  if (!m) throw new ConfigError(`--duration ${JSON.stringify(text)}: give e.g. 30s, 500ms or 2m`);
  const ms = Number(m[1]) * (m[2] === 'ms' ? 1 : m[2] === 'm' ? 60_000 : 1000);
  if (ms < 100 || ms > 24 * 3600_000) throw new ConfigError(`--duration ${text}: from 100ms to 24h`);
  return ms;
}

function positiveInt(p: ReturnType<typeof parseCommandArgs>, name: string, fallback: number, max: number): number {
  const v = stringFlag(p, name);
  if (v === undefined) return fallback;
  if (!/^\d+$/.test(v) || Number(v) < 1 || Number(v) > max) throw new ConfigError(`--${name} must be an integer from 1 to ${max} (got '${v}')`);
  return Number(v);
}

function oneOf<T extends string>(value: string, allowed: readonly T[], flag: string): T {
  if (!(allowed as readonly string[]).includes(value)) throw new ConfigError(`--${flag} ${value}: expected one of ${allowed.join(', ')}`);
  return value as T;
}

const row = (label: string, p: Percentiles) =>
  `  ${label.padEnd(22)}${[p.p50, p.p90, p.p99, p.mean].map((n) => n.toFixed(2).padStart(10)).join('')}${String(p.samples).padStart(10)}`;

export function formatReport(r: BenchReport): string {
  const errors = Object.entries(r.errors);
  const lines = [
    `edgecv bench: ${r.addr}${r.route} over ${r.transport === 'ws' ? 'WebSocket' : 'REST'}, ${r.clients} client${r.clients > 1 ? 's' : ''}, ${r.durationS} s, ${r.images} image${r.images > 1 ? 's' : ''}`,
    `  ${'ms'.padEnd(22)}${['p50', 'p90', 'p99', 'mean', 'samples'].map((h) => h.padStart(10)).join('')}`,
    row('round trip', r.roundTrip),
    row('server time', r.serverTime),
    row('network latency', r.networkLatency),
    `  frames: ${r.frames} answered, ${errors.length ? errors.map(([s, n]) => `${n} × ${s}`).join(', ') : 'no errors'}`,
    `  FPS: ${r.fps.total} total; per client ${r.fps.perClient.join(', ')}`,
  ];
  if (r.usage)
    lines.push(
      `  server usage (mean / max): ${Object.entries(r.usage)
        .map(([k, u]) => `${k} ${u.mean} / ${u.max}`)
        .join(', ')}`,
    );
  return lines.join('\n');
}

function progressLine(p: BenchProgress, totalMs: number): string {
  return `\r  ${(p.elapsedMs / 1000).toFixed(1)}/${(totalMs / 1000).toFixed(0)} s  ${p.frames} frames  ${p.fps.toFixed(1)} FPS  round trip p50 ${p.roundTripP50.toFixed(1)} ms  ${p.errors} errors `;
}

export async function runBenchCommand(args: string[]): Promise<number> {
  const p = parseCommandArgs(
    args,
    {
      addr: { type: 'string' },
      route: { type: 'string' },
      transport: { type: 'string' },
      clients: { type: 'string' },
      duration: { type: 'string' },
      images: { type: 'string' },
      resize: { type: 'string' },
      cacert: { type: 'string' },
      insecure: { type: 'boolean' },
      json: { type: 'boolean' },
    },
    [],
  );
  const route = oneOf(stringFlag(p, 'route') ?? 'detector', Object.keys(BENCH_ROUTES) as BenchRoute[], 'route');
  const transport = oneOf(stringFlag(p, 'transport') ?? 'rest', ['rest', 'ws'] as BenchTransport[], 'transport');
  const clients = positiveInt(p, 'clients', 1, 1000);
  const durationMs = parseDuration(stringFlag(p, 'duration') ?? '30s');
  const resize = stringFlag(p, 'resize') === undefined ? undefined : positiveInt(p, 'resize', 0, 8192);
  const imagesArg = requiredFlag(p, 'images');
  const cacert = stringFlag(p, 'cacert');
  if (cacert !== undefined && p.flags['insecure'] === true) throw new ConfigError('--cacert and --insecure: choose one');
  const tls: TlsChoice = p.flags['insecure'] === true ? { insecure: true } : cacert !== undefined ? { cacert: path.resolve(cacert) } : {};
  const json = p.flags['json'] === true;

  try {
    const addr = normalizeAddr(requiredFlag(p, 'addr'));
    const images = loadBenchImages(path.resolve(imagesArg), resize);
    // reachable and trusted? ClientError says which, before any client starts
    await apiRequest({ addr, method: 'GET', path: '/test/', tls, timeoutMs: 10_000 });
    const live = !json && process.stderr.isTTY;
    const report = await runBench({
      addr,
      route,
      transport,
      clients,
      durationMs,
      images,
      tls,
      onProgress: live ? (pr) => process.stderr.write(progressLine(pr, durationMs)) : undefined,
    });
    if (live) process.stderr.write('\r\x1b[K');
    console.log(json ? JSON.stringify(report, null, 2) : formatReport(report));
    return 0;
  } catch (e) {
    if (!(e instanceof ClientError)) throw e;
    console.error(`edgecv bench: ${e.message}`);
    return 1;
  }
}
