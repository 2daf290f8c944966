// The first request after start against the ones after it: a fresh `edgecv serve` (default models) per round,
// once it says it is ready (/health/ready), then each of the four routes on a 640x480 photo: its first request, then
// NEXT more, one at a time on one keep-alive HTTPS connection that /health/ready opened (so no request pays the TLS
// handshake). Server time (the answer's server_processing_time) and round trip; ratio = first / p50 of the next.
// The routes take turns at going first, round by round. `--base DIR`: rounds alternate between this checkout and
// the one in DIR (its dist/src/cli.js), so load on the machine hits both alike. Each round ends with the engine's
// count of cold runs (GET /metrics: runs at a shape their session had not been warmed at).
//   node dist/bench/run.js --first-request [--rounds 4] [--base DIR]   (or node dist/bench/first-request.js ...)
// docs/performance.md ("The first request") reports a run.

import fs from 'node:fs';
import https from 'node:https';
import os from 'node:os';
import path from 'node:path';
import { median } from '../src/metrics/percentiles.js';
import { startServerProcess, writeResult, REPO_ROOT } from '../testkit/server-process.js';
import { argValue } from '../testkit/args.js';
import { VGA_FACE_PHOTO, VGA_SCENE_PHOTO, vgaJpeg } from '../testkit/vga-photos.js';
import { table } from '../testkit/table.js';
import { runAsProgram } from './entry.js';

const NEXT = 10;
const READY_TIMEOUT_MS = 120_000;

type Timed = { serverMs: number; roundTripMs: number };
type RouteRow = {
  build: string;
  route: string;
  rounds: number;
  'cold runs (all routes)': string;
  'first ms (server)': string;
  'p50 next ms (server)': string;
  'first / p50 (server)': string;
  'first / p50 (round trip)': string;
};

function request(agent: https.Agent, url: URL, method: 'GET' | 'POST', body?: Buffer): Promise<{ status: number; text: string; ms: number }> {
  const t0 = performance.now();
  return new Promise((resolve, reject) => {
    const req = https.request(
      url,
      {
        method,
        agent,
        rejectUnauthorized: false,
        timeout: 30_000,
        headers: body ? { 'content-type': 'image/jpeg', 'content-length': body.length } : {},
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (d: Buffer) => chunks.push(d));
        res.on('error', reject);
        res.on('end', () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8'), ms: performance.now() - t0 }));
      },
    );
    req.on('timeout', () => req.destroy(new Error(`${method} ${url.pathname}: no answer in 30 s`)));
    req.on('error', reject);
    req.end(body);
  });
}

async function untilReady(agent: https.Agent, base: string): Promise<void> {
  const end = Date.now() + READY_TIMEOUT_MS;
  while (Date.now() < end) {
    if ((await request(agent, new URL('/health/ready', base), 'GET')).status === 200) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`${base} not ready in ${READY_TIMEOUT_MS} ms`);
}

async function post(agent: https.Agent, base: string, route: string, body: Buffer): Promise<Timed> {
  const r = await request(agent, new URL(route, base), 'POST', body);
  if (r.status !== 200) throw new Error(`POST ${route}: HTTP ${r.status} ${r.text.slice(0, 200)}`);
  const serverMs = Number((JSON.parse(r.text) as { server_processing_time?: string }).server_processing_time ?? Number.NaN);
  return { serverMs, roundTripMs: r.ms };
}

/**
 * A data folder with one subject enrolled (recognition answers 409 without one), made once by a server of its own:
 * each round's server starts from a copy, so its first recognition request is its first use of the models.
 */
async function enrolledDataDir(face: Buffer): Promise<string> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'edgecv-first-'));
  const server = await startServerProcess(['--data-dir', dataDir], READY_TIMEOUT_MS);
  const agent = new https.Agent({ keepAlive: true, maxSockets: 1 });
  try {
    await untilReady(agent, server.url);
    await post(agent, server.url, '/trainer/add/?subject=astronaut', face);
  } finally {
    agent.destroy();
    await server.stop();
  }
  return dataDir;
}

/** One fresh server: each route's first request and NEXT more, routes in `order`. */
/** The engine's count of cold runs from GET /metrics (runtime/shape_runs.h); '-' for a build that has none. */
async function coldRuns(agent: https.Agent, base: string): Promise<string> {
  const r = await request(agent, new URL('/metrics', base), 'GET');
  return /^edgecv_engine_cold_runs_total (\d+)/m.exec(r.text)?.[1] ?? '-';
}

async function round(
  cli: string,
  enrolled: string,
  order: [string, string, Buffer][],
): Promise<{ samples: Map<string, Timed[]>; warmUpLine: string; cold: string }> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'edgecv-first-'));
  fs.cpSync(enrolled, dataDir, { recursive: true });
  const server = await startServerProcess(['--data-dir', dataDir], READY_TIMEOUT_MS, [], cli);
  const agent = new https.Agent({ keepAlive: true, maxSockets: 1 });
  try {
    await untilReady(agent, server.url);
    const samples = new Map<string, Timed[]>();
    for (const [name, route, body] of order) {
      const timed: Timed[] = [];
      for (let i = 0; i <= NEXT; i++) timed.push(await post(agent, server.url, route, body));
      samples.set(name, timed);
    }
    const warmUpLine = /edgecv: start-up: warm-up[^\n]*/.exec(server.output())?.[0] ?? '(no warm-up line)';
    return { samples, warmUpLine, cold: await coldRuns(agent, server.url) };
  } finally {
    agent.destroy();
    await server.stop();
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}

const fixed = (x: number) => x.toFixed(2);
const spread = (xs: number[]) => (xs.length > 1 ? `${fixed(Math.min(...xs))}-${fixed(Math.max(...xs))}` : fixed(xs[0]!));

/** The bench: `args` holds its flags. */
export async function firstRequest(args: string[]): Promise<void> {
  const option = (name: string) => argValue(args, name);
  const rounds = Number(option('--rounds') ?? 4);
  const base = option('--base');
  const builds: [string, string][] = [['this checkout', path.join(REPO_ROOT, 'dist/src/cli.js')]];
  if (base) builds.push([`base (${base})`, path.resolve(base, 'dist/src/cli.js')]);
  const scene = vgaJpeg(REPO_ROOT, VGA_SCENE_PHOTO);
  const face = vgaJpeg(REPO_ROOT, VGA_FACE_PHOTO);
  const routes: [string, string, Buffer][] = [
    ['pose', '/pose/detect/', scene],
    ['objects', '/object/detect/', scene],
    ['face detection', '/detector/detect/', face],
    ['recognition', '/recognizer/predict/', face],
  ];
  const enrolled = await enrolledDataDir(face);
  const loadBefore = os.loadavg();
  const collected = new Map<string, Map<string, Timed[][]>>();
  const warmUpLines: string[] = [];
  const cold = new Map<string, string[]>();
  for (let r = 0; r < rounds; r++) {
    const order = routes.map((_, i) => routes[(i + r) % routes.length]!);
    for (const [label, cli] of r % 2 ? [...builds].reverse() : builds) {
      const result = await round(cli, enrolled, order);
      const { samples, warmUpLine } = result;
      if (label === 'this checkout') warmUpLines.push(warmUpLine);
      cold.set(label, [...(cold.get(label) ?? []), result.cold]);
      const byRoute = collected.get(label) ?? new Map<string, Timed[][]>();
      for (const [name, timed] of samples) byRoute.set(name, [...(byRoute.get(name) ?? []), timed]);
      collected.set(label, byRoute);
    }
  }
  fs.rmSync(enrolled, { recursive: true, force: true });
  const rows: RouteRow[] = [];
  for (const [label] of builds) {
    for (const [name] of routes) {
      const perRound = collected.get(label)!.get(name)!;
      const firsts = perRound.map((t) => t[0]!.serverMs);
      const p50s = perRound.map((t) => median(t.slice(1).map((x) => x.serverMs)));
      const ratios = perRound.map((t) => t[0]!.serverMs / median(t.slice(1).map((x) => x.serverMs)));
      const tripRatios = perRound.map((t) => t[0]!.roundTripMs / median(t.slice(1).map((x) => x.roundTripMs)));
      rows.push({
        build: label,
        route: name,
        rounds: perRound.length,
        'cold runs (all routes)': cold.get(label)!.join(', '),
        'first ms (server)': spread(firsts),
        'p50 next ms (server)': spread(p50s),
        'first / p50 (server)': spread(ratios),
        'first / p50 (round trip)': spread(tripRatios),
      });
    }
  }
  const machine = { cpu: os.cpus()[0]?.model ?? 'unknown', cores: os.cpus().length, loadavgBefore: loadBefore, loadavgAfter: os.loadavg() };
  table(`First request after start against the next ${NEXT} (fresh server per round; ranges over rounds)`, rows);
  console.log(`\n${warmUpLines.join('\n')}`);
  console.log(
    `${machine.cpu}, ${machine.cores} cores, load ${loadBefore.map(fixed).join(' ')} before, ${machine.loadavgAfter.map(fixed).join(' ')} after`,
  );
  writeResult('first-request', {
    date: new Date().toISOString(),
    command: `node dist/bench/run.js --first-request ${args.join(' ')}`.trim(),
    machine,
    warmUpLines,
    rows,
  });
}

await runAsProgram(import.meta.url, firstRequest);
