// One alternative alone in a fresh process: open it, run the route's photo a few times, print its peak RSS.
// The bench runs every alternative in one process (interleaved, for fair ratios), where memory cannot be told
// apart, so memory is measured here, one child process per alternative.
//   node dist/bench/alternatives/rss-probe.js <route> <alternative>
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { findRoot } from '../../models/model-packages.js';
import { ALTERNATIVES, openRunner, ROUTE_MODELS, ROUTES, type Alternative, type Route } from './runners.js';

const CALLS = 10;

async function main(): Promise<void> {
  const [route, alternative] = process.argv.slice(2) as [Route, Alternative];
  if (!ROUTES.includes(route) || !ALTERNATIVES.includes(alternative)) throw new Error('usage: rss-probe.js <route> <alternative>');
  const root = findRoot();
  const opened = await openRunner(root, alternative, route);
  if (!opened.ok) throw new Error(opened.reason);
  const bytes = readFileSync(join(root, 'test', 'data', ROUTE_MODELS[route].photo));
  // Two calls in flight, as in the throughput figure: both lanes' buffers count.
  for (let i = 0; i < CALLS / 2; i++) await Promise.all([opened.runner.detect(bytes), opened.runner.detect(bytes)]);
  await opened.runner.close();
  // VmHWM, the peak RSS of this process image: getrusage's maxRSS would start at the parent's RSS (Linux keeps it
  // across fork and exec), i.e. at the size of the bench process.
  const hwm = /VmHWM:\s+(\d+) kB/.exec(readFileSync('/proc/self/status', 'utf8'));
  if (!hwm) throw new Error('no VmHWM in /proc/self/status');
  console.log(JSON.stringify({ maxRssMb: Number(hwm[1]) / 1024 }));
}

main().catch((err: unknown) => {
  console.error(err instanceof Error ? err.message : String(err));
  process.exit(1);
});
