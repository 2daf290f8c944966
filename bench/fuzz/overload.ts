// `node dist/bench/fuzz/fuzz.js --overload [--connections 16] [--requests 2000]` (or `node dist/bench/fuzz/overload.js
// ...`): how fast an overloaded server says no.
// A real `edgecv serve` (127.0.0.1, temporary data folder) with 1 worker and a queue of 1 gets `requests` object
// detections over `connections` warm keep-alive HTTPS connections at once; most find the queue full. Reports
// the latency of the 503 answers and of the 200 ones (p50/p99), and writes bench/results/overload.json.
import fs from 'node:fs';
import https from 'node:https';
import path from 'node:path';
import { percentile } from '../../src/metrics/percentiles.js';
import { REPO_ROOT, withTempServer, writeResult } from '../../testkit/server-process.js';
import { runAsProgram } from '../entry.js';
import { numericFlags } from './cli-args.js';

/** The probe: `argv` holds its flags; exit code 0 when it got 503s and nothing but 200s besides. */
export async function overload(argv: string[]): Promise<number> {
  const flags = numericFlags({ connections: 16, requests: 2000 }, argv);
  return withTempServer('edgecv-overload-', ['--workers', '1', '--queue-limit', '1'], async (server) => {
    const url = new URL(server.url);
    const photo = fs.readFileSync(path.join(REPO_ROOT, 'test', 'data', 'darknet', 'dog.jpg'));
    const agent = new https.Agent({ keepAlive: true, maxSockets: flags.connections, rejectUnauthorized: false });
    const post = () =>
      new Promise<{ status: number; ms: number }>((resolve, reject) => {
        const t = performance.now();
        const req = https.request(
          {
            host: url.hostname,
            port: url.port,
            path: '/object/detect/',
            method: 'POST',
            agent,
            headers: { 'content-type': 'image/jpeg', 'content-length': photo.length },
          },
          (res) => {
            res.resume();
            res.on('end', () => resolve({ status: res.statusCode ?? 0, ms: performance.now() - t }));
          },
        );
        req.on('error', reject);
        req.end(photo);
      });
    // Warm every connection (TLS handshake done) before timing.
    await Promise.all(Array.from({ length: flags.connections }, post));
    const byStatus = new Map<number, number[]>();
    let next = 0;
    await Promise.all(
      Array.from({ length: flags.connections }, async () => {
        while (next++ < flags.requests) {
          const { status, ms } = await post();
          byStatus.set(status, [...(byStatus.get(status) ?? []), ms]);
        }
      }),
    );
    agent.destroy();
    const rows = [...byStatus].map(([status, ms]) => {
      const s = ms.sort((a, b) => a - b);
      return { status, count: s.length, 'p50 ms': percentile(s, 50), 'p99 ms': percentile(s, 99) };
    });
    console.table(rows);
    writeResult('overload', { connections: flags.connections, requests: flags.requests, rows });
    const unexpected = rows.filter((r) => r.status !== 200 && r.status !== 503);
    return unexpected.length === 0 && rows.some((r) => r.status === 503) ? 0 : 1;
  });
}

await runAsProgram(import.meta.url, overload, { exit: true });
