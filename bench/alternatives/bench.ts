// Bench section "edgecv vs the Node alternatives": per route, the same photo and model through edgecv and through
// what a Node developer would otherwise write (runners.ts), end to end from the photo's bytes to boxes. First a
// check that every alternative finds about the same boxes as edgecv (else the timings would compare different
// work), then latency (one call at a time, the alternatives interleaved call by call in a rotating order, so a
// busy moment hits all alike), images/s with 2 calls in flight (interleaved bursts), and peak RSS of each
// alternative alone in a child process.
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { agreement, type Box } from '../../testkit/alternative-decode.js';
import { ALTERNATIVES, openRunner, ROUTE_MODELS, ROUTES, TFJS_NODE_REASON, type Alternative, type Route, type Runner } from './runners.js';

type Row = Record<string, string | number>;

export interface AlternativesContext {
  root: string;
  quick: boolean;
  stats(samples: number[]): { p50: number; p99: number };
}

export interface AlternativesResult {
  rows: Row[];
  checks: Row[];
  notes: string[];
}

const CONCURRENCY = 2;
const BURST_CALLS = 8;

/** `calls` calls with CONCURRENCY in flight; milliseconds taken. */
async function burst(runner: Runner, bytes: Buffer, calls: number): Promise<number> {
  let next = 0;
  const t = performance.now();
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next++ < calls) await runner.detect(bytes);
    }),
  );
  return performance.now() - t;
}

/** Peak RSS (MB) of a fresh process running only this alternative (rss-probe.ts), or why not. */
function peakRss(route: Route, alternative: Alternative): number | string {
  const probe = fileURLToPath(new URL('./rss-probe.js', import.meta.url));
  const r = spawnSync(process.execPath, [probe, route, alternative], { encoding: 'utf8', timeout: 300_000 });
  if (r.status !== 0) return `n/a (${(r.stderr || r.error?.message || 'failed').trim().split('\n').pop()})`;
  return (JSON.parse(r.stdout.trim().split('\n').pop()!) as { maxRssMb: number }).maxRssMb;
}

function describe(boxes: Box[]): string {
  const counts = new Map<string, number>();
  for (const b of boxes) counts.set(b.label, (counts.get(b.label) ?? 0) + 1);
  return [...counts].map(([label, n]) => `${n} ${label}`).join(', ') || 'none';
}

async function benchRoute(ctx: AlternativesContext, route: Route, out: AlternativesResult): Promise<void> {
  const { model, photo } = ROUTE_MODELS[route];
  const bytes = readFileSync(join(ctx.root, 'test', 'data', photo));
  const runners: { alternative: Alternative; runner: Runner }[] = [];
  const alternatives = ALTERNATIVES.filter((a) => a !== 'opencv4nodejs Haar' || route === 'faces');
  for (const alternative of alternatives) {
    const opened = await openRunner(ctx.root, alternative, route);
    if (opened.ok) runners.push({ alternative, runner: opened.runner });
    else
      out.rows.push({
        route,
        alternative,
        runtime: '',
        model: '',
        boxes: '',
        'p50 ms': '',
        'p99 ms': '',
        'images/s (2 in flight)': '',
        'peak RSS MB': '',
        'p50 x edgecv': '',
        'images/s / edgecv': '',
        note: `not measured: ${opened.reason}`,
      });
  }
  try {
    const edgecv = runners.find((r) => r.alternative === 'edgecv');
    if (!edgecv) throw new Error(`edgecv did not open for ${route}`);
    // Warm-up, and the answers compared with edgecv's.
    const reference = await edgecv.runner.detect(bytes);
    const answers = new Map<Alternative, Box[]>();
    for (const { alternative, runner } of runners) {
      for (let i = 0; i < 2; i++) await runner.detect(bytes);
      const boxes = await runner.detect(bytes);
      answers.set(alternative, boxes);
      const a = agreement(reference, boxes);
      out.checks.push({
        route,
        photo,
        alternative,
        boxes: describe(boxes),
        'edgecv boxes matched (IoU >= 0.5)': `${a.matched}/${reference.length}`,
        'mean best IoU': a.meanBestIou,
      });
    }

    const iterations = ctx.quick ? 6 : 30;
    const latency = new Map<Alternative, number[]>(runners.map((r) => [r.alternative, []]));
    for (let i = 0; i < iterations; i++) {
      for (let k = 0; k < runners.length; k++) {
        const { alternative, runner } = runners[(i + k) % runners.length]!;
        const t = performance.now();
        await runner.detect(bytes);
        latency.get(alternative)!.push(performance.now() - t);
      }
    }
    const rounds = ctx.quick ? 1 : 4;
    const busyMs = new Map<Alternative, number>(runners.map((r) => [r.alternative, 0]));
    for (let i = 0; i < rounds; i++) {
      for (let k = 0; k < runners.length; k++) {
        const { alternative, runner } = runners[(i + k) % runners.length]!;
        busyMs.set(alternative, busyMs.get(alternative)! + (await burst(runner, bytes, BURST_CALLS)));
      }
    }

    const base = ctx.stats(latency.get('edgecv')!).p50;
    const baseRate = (rounds * BURST_CALLS) / (busyMs.get('edgecv')! / 1000);
    for (const { alternative, runner } of runners) {
      const s = ctx.stats(latency.get(alternative)!);
      const rate = (rounds * BURST_CALLS) / (busyMs.get(alternative)! / 1000);
      out.rows.push({
        route,
        alternative,
        runtime: runner.runtime,
        model: runner.model,
        boxes: describe(answers.get(alternative)!),
        'p50 ms': s.p50,
        'p99 ms': s.p99,
        'images/s (2 in flight)': rate,
        'peak RSS MB': peakRss(route, alternative),
        'p50 x edgecv': s.p50 / base,
        'images/s / edgecv': rate / baseRate,
        note: alternative === 'opencv4nodejs Haar' ? "the seed server's detector (not the same model)" : '',
      });
    }
    console.log(`[alternatives] ${route}: ${model} on ${photo}, ${iterations} interleaved calls each, ${rounds} x ${BURST_CALLS} in bursts`);
  } finally {
    for (const { runner } of runners) await runner.close();
  }
}

export async function benchAlternatives(ctx: AlternativesContext): Promise<AlternativesResult> {
  const out: AlternativesResult = { rows: [], checks: [], notes: [`tfjs-node: ${TFJS_NODE_REASON}`] };
  for (const route of ROUTES) await benchRoute(ctx, route, out);
  return out;
}
