// Metrics section of `npm run bench`: the SQLite store filled with a full default retention (48 h at the
// 10 s default interval), the query's cost over it, one collector sample, and what the request trace and
// audit line add to a trivial request (GET /test/ with and without the operator services).
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import autocannon from 'autocannon';
import { AuditLog } from '../src/audit/audit-log.js';
import { AuthService } from '../src/auth/auth-service.js';
import type { Engine } from '../src/index.js';
import { MetricsCollector } from '../src/metrics/collector.js';
import { resolveIdentity } from '../src/metrics/identity.js';
import { answerMetricsApp, parseMetricsAppQuery } from '../src/metrics/query.js';
import { MetricsQueryRunner } from '../src/metrics/query-runner.js';
import { MetricsStore, type MetricsSample } from '../src/metrics/store.js';
import { nowNs } from '../src/metrics/time.js';
import { TrafficMeter } from '../src/metrics/traffic.js';
import { createApp } from '../src/server/app.js';
import { startServer } from '../src/server/server.js';
import { generateSelfSigned } from '../src/server/tls.js';

type Row = Record<string, string | number>;

function p50(samples: number[]): number {
  const s = [...samples].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
}

function timeSync(n: number, fn: () => unknown): number {
  const out: number[] = [];
  for (let i = 0; i < n; i++) {
    const t = performance.now();
    fn();
    out.push(performance.now() - t);
  }
  return p50(out);
}

function folderMiB(dir: string): number {
  return fs.readdirSync(dir).reduce((n, f) => n + fs.statSync(path.join(dir, f)).size, 0) / 2 ** 20;
}

export async function benchMetricsStore(quick: boolean): Promise<Row[]> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'edgecv-bench-metrics-'));
  const identity = resolveIdentity({ appOrg: 'bench' });
  const store = MetricsStore.open(dir);
  const rows: Row[] = [];
  try {
    const instance = store.instanceId(identity);
    const samples = (48 * 3600) / 10;
    const start = nowNs() - BigInt(samples) * 10_000_000_000n;
    const t0 = performance.now();
    for (let i = 0; i < samples; i++) {
      const sample: MetricsSample = {
        time: start + BigInt(i) * 10_000_000_000n,
        cpu: 12.5,
        mem: 200_000_000 + i,
        disk: 50_000_000,
        sendBytes: i * 1000,
        recvBytes: i * 2000,
        connections: [
          {
            port: 8008,
            active: 3,
            handled: i,
            accepts: i + 3,
            bytesSent: i * 1000,
            bytesRecvd: i * 2000,
            latencyPercentiles: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10],
          },
        ],
      };
      store.insert(instance, sample);
    }
    const fillMs = performance.now() - t0;
    rows.push({ measure: `insert one sample (all 5 series), mean of ${samples}`, value: (fillMs / samples).toFixed(3), unit: 'ms' });
    rows.push({ measure: 'store size holding 48 h at a 10 s interval', value: folderMiB(dir).toFixed(1), unit: 'MiB' });

    const app = {
      region: identity.region,
      appinst: { app_key: { organization: identity.appOrg, name: identity.appname, version: identity.appvers } },
    };
    const n = quick ? 3 : 10;
    for (const [label, extra] of [
      ['query all 5 series, all 48 h (86400 rows)', {}],
      ['query cpu, all 48 h (17280 rows)', { selector: 'cpu' }],
      ['query all 5 series, last=1', { last: 1 }],
      ['query all 5 series, numsamples=100', { numsamples: 100 }],
    ] as const) {
      const q = parseMetricsAppQuery({ ...app, ...extra });
      const ms = timeSync(n, () => JSON.stringify(answerMetricsApp(store, identity, q)));
      rows.push({ measure: `${label}, answer built and serialized`, value: ms.toFixed(2), unit: 'ms' });
    }

    // What a full query costs the server's event loop: on the calling thread vs on the query worker.
    for (const threaded of [false, true]) {
      const runner = new MetricsQueryRunner(store, identity, { threaded });
      const q = parseMetricsAppQuery(app);
      await runner.answer(q); // warm-up (worker start)
      // a 1 ms ticker: the longest gap between its ticks is the longest time the loop could not run
      let last = performance.now();
      let stall = 0;
      const ticker = setInterval(() => {
        const now = performance.now();
        stall = Math.max(stall, now - last);
        last = now;
      }, 1);
      const t = performance.now();
      for (let i = 0; i < n; i++) {
        await runner.answer(q);
        await new Promise((r) => setTimeout(r, 5));
      }
      const wall = (performance.now() - t) / n - 5;
      clearInterval(ticker);
      await runner.close();
      rows.push({
        measure: `full 48 h query through the runner, ${threaded ? 'worker thread' : 'calling thread'}: wall time / longest event-loop stall`,
        value: `${wall.toFixed(0)} / ${stall.toFixed(0)}`,
        unit: 'ms',
      });
    }

    const collector = new MetricsCollector({ store, identity, traffic: new TrafficMeter(), dataDir: dir, retentionMs: 48 * 3600_000 });
    const sampleMs: number[] = [];
    for (let i = 0; i < n; i++) {
      const t = performance.now();
      await collector.sample();
      sampleMs.push(performance.now() - t);
    }
    rows.push({ measure: 'one collector sample: disk walk, insert, retention prune', value: p50(sampleMs).toFixed(2), unit: 'ms' });
  } finally {
    store.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
  return rows;
}

/** GET /test/ req/s with only the tracid/Prometheus middleware, and with the audit line written per request. */
export async function benchRequestTrace(engine: Engine, quick: boolean): Promise<Row[]> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'edgecv-bench-audit-'));
  const tls = await generateSelfSigned();
  const store = MetricsStore.open(dir);
  const audit = new AuditLog(dir);
  const rows: Row[] = [];
  try {
    for (const withAudit of [false, true]) {
      const ops = withAudit
        ? { identity: resolveIdentity({}), metrics: new MetricsQueryRunner(store, resolveIdentity({})), auth: new AuthService(dir), audit }
        : undefined;
      const server = await startServer({ app: createApp({ engine, config: { bodyLimit: 1 << 20 }, ops }), tls, port: 0, host: '127.0.0.1' });
      try {
        const result = await autocannon({ url: `https://127.0.0.1:${server.port}/test/`, connections: 8, duration: quick ? 3 : 8 });
        rows.push({
          server: withAudit ? 'tracid + Prometheus + audit line' : 'tracid + Prometheus only',
          'req/s': Math.round(result.requests.average),
          'p50 ms': result.latency.p50,
          'p99 ms': result.latency.p99,
          errors: result.errors + result.non2xx,
        });
      } finally {
        await server.close();
      }
    }
  } finally {
    audit.close();
    store.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
  return rows;
}
