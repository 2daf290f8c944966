// `node dist/bench/run.js --console-large-answer [--mb 150]` (or `node dist/bench/console-large-answer.js [--mb 150]`):
// what a huge InfluxDB answer costs the console (docs/fleet-metrics.md). A fake
// InfluxDB in a child process streams --mb MB of chunked answer lines (1,000 rows of 41 columns each) to a
// FleetMetrics in this process, whose row limit is lifted so that the byte cap (64 MiB) is what stops it.
// Prints the outcome and its time, the peak RSS, and how long the event loop was held (what every other
// request of the console would wait).

import { fork } from 'node:child_process';
import http from 'node:http';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { FleetMetrics } from '../src/console/fleet-metrics.js';
import { InfluxClient, parseInfluxUrl } from '../src/metrics/influx-client.js';
import { parseMetricsAppQuery } from '../src/metrics/query.js';
import { HttpError } from '../src/server/errors.js';
import { isProgram, runAsProgram } from './entry.js';
import { numericFlags } from './fuzz/cli-args.js';

const MIB = 2 ** 20;

/** The fake InfluxDB: answers every request with `bytes` of chunked lines, then ends. */
function serveHugeAnswer(bytes: number): void {
  const columns = ['time', ...Array.from({ length: 40 }, (_, i) => `f${i}`)];
  const row = JSON.stringify(['2026-11-21T10:00:00Z', ...Array.from({ length: 40 }, (_, i) => i + 0.123456)]);
  const line = `{"results":[{"statement_id":0,"series":[{"name":"appinst-cpu","tags":{"app":"svc"},"columns":${JSON.stringify(columns)},"values":[${Array<string>(1000).fill(row).join(',')}]}],"partial":true}]}\n`;
  const server = http.createServer((_req, res) => {
    res.writeHead(200, { 'Content-Type': 'application/json' });
    let sent = 0;
    res.on('close', () => (sent = bytes));
    const more = (): void => {
      while (sent < bytes) {
        sent += line.length;
        if (!res.write(line)) {
          res.once('drain', more);
          return;
        }
      }
      res.end();
    };
    more();
  });
  server.listen(0, '127.0.0.1', () => process.send?.((server.address() as { port: number }).port));
}

/** The bench: `argv` holds its flags (--mb). The fake InfluxDB is this file again, run with --serve. */
export async function consoleLargeAnswer(argv: string[]): Promise<void> {
  const flags = numericFlags({ mb: 150 }, argv);
  const child = fork(fileURLToPath(import.meta.url), ['--serve', String(flags.mb * 1e6)], { stdio: 'inherit' });
  const port = await new Promise<number>((resolve) => child.once('message', (m) => resolve(Number(m))));
  const fleet = new FleetMetrics(new Map([['eu', new InfluxClient(parseInfluxUrl(`http://127.0.0.1:${port}/db`), { timeoutMs: 60_000 })]]), {
    log: () => {},
    maxAnswerRows: 1e12,
  });
  const delay = monitorEventLoopDelay({ resolution: 10 });
  delay.enable();
  const rssBefore = process.memoryUsage().rss;
  let peak = rssBefore;
  const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss)), 20);
  const t0 = Date.now();
  const q = parseMetricsAppQuery({
    region: 'eu',
    appinst: { app_key: { organization: 'acme', name: 'svc', version: '1' } },
    selector: 'cpu',
    last: 1,
  });
  const outcome = await fleet.answer(q).then(
    (text) => `answered (${(text.length / MIB).toFixed(0)} MiB)`,
    (e: unknown) => (e instanceof HttpError ? `${e.status} ${e.message}` : String(e)),
  );
  clearInterval(sampler);
  delay.disable();
  console.log(`${flags.mb} MB answer: ${outcome} after ${Date.now() - t0} ms`);
  console.log(
    `RSS ${(rssBefore / MIB).toFixed(0)} -> peak ${(peak / MIB).toFixed(0)} MiB; event loop delay p99 ${(delay.percentile(99) / 1e6).toFixed(0)} ms, max ${(delay.max / 1e6).toFixed(0)} ms`,
  );
  fleet.close();
  child.kill();
}

if (isProgram(import.meta.url) && process.argv[2] === '--serve') serveHugeAnswer(Number(process.argv[3]));
else await runAsProgram(import.meta.url, consoleLargeAnswer);
