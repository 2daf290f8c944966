// Fleet metrics section of `npm run bench` (alone: `node dist/bench/run.js --metrics-platform`, or
// `node dist/bench/metrics-platform.js [--quick]`), with a real influxd on this machine:
//   - ingest: 1,000 simulated instances, each its own SQLite store and InfluxSink, sampling at the default
//     10 s interval (spread over the interval, as unsynchronised instances are): lag from a sample being stored
//     to InfluxDB acknowledging it (p50/p99/max), influxd's CPU, the sinks' CPU;
//   - the console (`edgecv console` in its own process, as deployed, over HTTPS): last=1 over the 1,000 instances, and
//     a 48 h window (10 s samples, all five series) of one instance.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { gzipSync } from 'node:zlib';
import { addUser } from '../src/auth/users.js';
import { DEFAULT_METRICS_INTERVAL_MS } from '../src/metrics/collector.js';
import { InfluxClient, parseInfluxUrl } from '../src/metrics/influx-client.js';
import { lineOf } from '../src/metrics/influx-line.js';
import { InfluxSink } from '../src/metrics/influx-sink.js';
import { MetricsStore, type MetricsSample } from '../src/metrics/store.js';
import { nowNs } from '../src/metrics/time.js';
import { startInfluxd } from '../testkit/influxd.js';
import { REPO_ROOT, writeResult } from '../testkit/server-process.js';
import { table } from '../testkit/table.js';
import { percentile } from '../src/metrics/percentiles.js';

type Row = Record<string, string | number>;

const INSTANCES = 1000;
const APP = { organization: 'bench', name: 'facesvc', version: '1.0.0' };

/** CPU seconds (user + system) a process has used, from /proc. */
function cpuSeconds(pid: number): number {
  const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100; // utime, stime in clock ticks (USER_HZ = 100)
}

function syntheticSample(time: bigint, i: number): MetricsSample {
  return {
    time,
    cpu: 5 + (i % 50) / 3,
    mem: 250_000_000 + i * 1000,
    disk: 40_000_000,
    sendBytes: i * 12_345,
    recvBytes: i * 54_321,
    connections: [
      {
        port: 8008,
        active: 2,
        handled: i,
        accepts: i,
        bytesSent: i * 12_345,
        bytesRecvd: i * 54_321,
        latencyPercentiles: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10],
      },
    ],
  };
}

async function post(url: string, ca: string, body: unknown, token?: string): Promise<{ status: number; text: string; ms: number }> {
  const https = await import('node:https');
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    const data = JSON.stringify(body);
    const req = https.request(
      url,
      { method: 'POST', ca, headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) } },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (d: Buffer) => chunks.push(d));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8'), ms: performance.now() - t0 }));
      },
    );
    req.on('error', reject);
    req.end(data);
  });
}

interface Instance {
  store: MetricsStore;
  id: number;
  sink: InfluxSink;
  n: number;
}

/** The simulated instances, each its own store (pushed to `stores`, to close) and started sink. */
function startInstances(root: string, url: string, stores: MetricsStore[], lags: number[]): Instance[] {
  return Array.from({ length: INSTANCES }, (_, k) => {
    const store = MetricsStore.open(path.join(root, `i${k}`));
    stores.push(store);
    const id = store.instanceId({
      region: 'eu',
      appOrg: APP.organization,
      appname: APP.name,
      appvers: APP.version,
      cluster: 'k1',
      clusterorg: 'bench',
      cloudlet: `cl-${k % 20}`,
      cloudletorg: 'op',
      pod: `pod-${k}`,
    });
    const sink = new InfluxSink({
      store,
      target: parseInfluxUrl(url),
      onAcknowledged: (times) => {
        const now = nowNs();
        for (const t of times) lags.push(Number(now - t) / 1e6);
      },
    });
    sink.start();
    return { store, id, sink, n: 0 };
  });
}

/** Each instance samples for `seconds`, instance k at k/1000 of the interval, then every interval; the samples stored. */
async function sampleFor(instances: Instance[], seconds: number, intervalMs: number): Promise<number> {
  const timers: NodeJS.Timeout[] = [];
  let samples = 0;
  await new Promise<void>((done) => {
    instances.forEach((inst, k) => {
      const first = setTimeout(
        () => {
          const tick = () => {
            inst.store.insert(inst.id, syntheticSample(nowNs(), inst.n++));
            samples++;
            inst.sink.kick();
          };
          tick();
          timers.push(setInterval(tick, intervalMs));
        },
        (k * intervalMs) / INSTANCES,
      );
      timers.push(first);
    });
    setTimeout(done, seconds * 1000);
  });
  for (const t of timers) clearInterval(t);
  // let the last samples be acknowledged
  const deadline = Date.now() + 20_000;
  while (instances.some((i) => i.sink.status().backlogSamples > 0) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
  return samples;
}

/** Ingest: 1,000 instances, each a store and a sink, at the default interval; lag and CPU rows. */
async function benchIngest(root: string, url: string, influxPid: number, seconds: number, stores: MetricsStore[]): Promise<Row[]> {
  const intervalMs = DEFAULT_METRICS_INTERVAL_MS;
  const lags: number[] = [];
  await new InfluxClient(parseInfluxUrl(url)).createDatabase();
  const instances = startInstances(root, url, stores, lags);
  const sinks = instances.map((i) => i.sink);
  // each sink checks its database once at start (CREATE DATABASE): let the 1,000 of them do that before timing
  await new Promise((r) => setTimeout(r, 5000));
  const influxCpu0 = cpuSeconds(influxPid);
  const ownCpu0 = process.cpuUsage();
  const t0 = performance.now();
  const samples = await sampleFor(instances, seconds, intervalMs);
  const wall = (performance.now() - t0) / 1000;
  const influxCpu = cpuSeconds(influxPid) - influxCpu0;
  const own = process.cpuUsage(ownCpu0);
  const sorted = [...lags].sort((a, b) => a - b);
  const errors = sinks.reduce((n, s) => n + s.status().errors, 0);
  await Promise.all(sinks.map((s) => s.stop()));
  return [
    { measure: `samples stored and sent (${INSTANCES} instances, ${intervalMs / 1000} s interval, ${seconds} s)`, value: samples, unit: 'samples' },
    { measure: 'samples acknowledged by InfluxDB', value: lags.length, unit: 'samples' },
    {
      measure: 'lag, stored -> acknowledged: p50 / p99 / max',
      value: `${percentile(sorted, 50).toFixed(1)} / ${percentile(sorted, 99).toFixed(1)} / ${sorted[sorted.length - 1]!.toFixed(1)}`,
      unit: 'ms',
    },
    { measure: 'influxd CPU while ingesting', value: ((100 * influxCpu) / wall).toFixed(1), unit: '% of one core' },
    {
      measure: `the ${INSTANCES} sinks' CPU (one Node process: SQLite reads, line protocol, gzip, HTTP)`,
      value: ((100 * (own.user + own.system)) / 1e6 / wall).toFixed(1),
      unit: '% of one core',
    },
    { measure: 'send errors', value: errors, unit: 'count' },
  ];
}

/** The 48 h window written for the window queries: its sample count, and its start and end (ns). */
interface LongWindow {
  total: number;
  start: bigint;
  now: bigint;
}

/** 48 h of one more instance (another app, so that the window query reads only it), written straight to InfluxDB. */
async function writeLongWindow(url: string): Promise<LongWindow> {
  const intervalMs = DEFAULT_METRICS_INTERVAL_MS;
  const writer = new InfluxClient(parseInfluxUrl(url));
  const now = nowNs();
  const total = (48 * 3600_000) / intervalMs;
  const start = now - BigInt(total) * BigInt(intervalMs) * 1_000_000n;
  const tags = {
    app: 'longsvc',
    ver: '1.0.0',
    cluster: 'k1',
    clusterorg: 'bench',
    cloudlet: 'cl-0',
    cloudletorg: 'op',
    apporg: APP.organization,
    pod: 'pod-long',
  };
  for (let i = 0; i < total; i += 2000) {
    const lines: string[] = [];
    for (let j = i; j < Math.min(total, i + 2000); j++) {
      const s = syntheticSample(start + BigInt(j) * BigInt(intervalMs) * 1_000_000n, j);
      lines.push(
        lineOf('cpu', tags, s.time, [s.cpu]),
        lineOf('mem', tags, s.time, [s.mem]),
        lineOf('disk', tags, s.time, [s.disk]),
        lineOf('network', tags, s.time, [s.sendBytes, s.recvBytes]),
        ...s.connections.map((c) =>
          lineOf('connections', tags, s.time, [c.port, c.active, c.handled, c.accepts, c.bytesSent, c.bytesRecvd, ...c.latencyPercentiles]),
        ),
      );
    }
    await writer.writeGzip(gzipSync(lines.join('\n')));
  }
  writer.close();
  return { total, start, now };
}

/** The console as deployed: `edgecv console` in its own process, over HTTPS, with a user of the bench's app. */
async function startConsole(root: string, url: string): Promise<{ base: string; ca: string; token: string; stop: () => void }> {
  const consoleDir = path.join(root, 'console');
  await addUser(consoleDir, 'bench', 'bench-password', [APP.organization]);
  const consoleProcess = spawn(
    process.execPath,
    [path.join(REPO_ROOT, 'dist/src/cli.js'), 'console', '--port', '0', '--host', '127.0.0.1', '--data-dir', consoleDir, '--region', `eu=${url}`],
    {
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  let consoleOut = '';
  consoleProcess.stdout.on('data', (d) => (consoleOut += d));
  consoleProcess.stderr.on('data', (d) => (consoleOut += d));
  const stop = () => consoleProcess.kill('SIGTERM');
  try {
    const deadline = Date.now() + 30_000;
    let base: string | undefined;
    while (!(base = /listening on (https:\/\/\S+)/.exec(consoleOut)?.[1])) {
      if (consoleProcess.exitCode !== null || Date.now() > deadline) throw new Error(`the console did not start:\n${consoleOut}`);
      await new Promise((r) => setTimeout(r, 100));
    }
    const ca = fs.readFileSync(path.join(consoleDir, 'tls', 'cert.pem'), 'utf8');
    const login = await post(`${base}api/v1/login`, ca, { username: 'bench', password: 'bench-password' });
    const token = (JSON.parse(login.text) as { token: string }).token;
    return { base, ca, token, stop };
  } catch (e) {
    stop();
    throw e;
  }
}

/** The console queries timed: last=1 over every instance, and the 48 h window of one. */
function queryCases({ total, start, now }: LongWindow): [string, Record<string, unknown>][] {
  const long = { ...APP, name: 'longsvc' };
  const starttime = new Date(Number(start / 1_000_000n)).toISOString();
  const endtime = new Date(Number(now / 1_000_000n)).toISOString();
  return [
    [`last=1 over ${INSTANCES} instances, all 5 series`, { appinst: { app_key: APP }, last: 1 }],
    [`last=1 over ${INSTANCES} instances, cpu`, { appinst: { app_key: APP }, last: 1, selector: 'cpu' }],
    [`48 h window of one instance (${total} samples), all 5 series`, { appinst: { app_key: long }, starttime, endtime }],
    ['48 h window of one instance, cpu', { appinst: { app_key: long }, selector: 'cpu', starttime, endtime }],
    ['48 h window of one instance, numsamples=100, all 5 series', { appinst: { app_key: long }, numsamples: 100, starttime }],
  ];
}

/** One query, a warm-up then `runs` timed: its rows, answer size and p50/p90. */
async function timeQuery(
  server: { base: string; ca: string; token: string },
  label: string,
  body: Record<string, unknown>,
  runs: number,
): Promise<Row> {
  const times: number[] = [];
  let rows = 0;
  let bytes = 0;
  for (let i = 0; i < runs + 1; i++) {
    const res = await post(`${server.base}api/v1/auth/metrics/app`, server.ca, { region: 'eu', ...body }, server.token);
    if (res.status !== 200) throw new Error(`${label}: ${res.status} ${res.text.slice(0, 300)}`);
    if (i === 0) {
      const answer = JSON.parse(res.text) as { data: { Series: { values: unknown[] }[] }[] };
      rows = answer.data[0]!.Series.reduce((n, s) => n + s.values.length, 0);
      bytes = res.text.length;
      continue; // warm-up
    }
    times.push(res.ms);
  }
  const sorted = times.sort((a, b) => a - b);
  return { query: label, rows, 'answer MiB': (bytes / 2 ** 20).toFixed(2), 'p50 ms': percentile(sorted, 50), 'p90 ms': percentile(sorted, 90), runs };
}

export async function benchMetricsPlatform(quick: boolean): Promise<{ ingest: Row[]; queries: Row[] }> {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'edgecv-bench-fleet-'));
  const influx = await startInfluxd(path.join(root, 'influxd'));
  const url = `${influx.origin}/edgecv`;
  const stores: MetricsStore[] = [];
  const queries: Row[] = [];
  try {
    const ingest = await benchIngest(root, url, influx.pid, quick ? 30 : 60, stores);
    const window = await writeLongWindow(url);
    const consoleServer = await startConsole(root, url);
    try {
      for (const [label, body] of queryCases(window)) queries.push(await timeQuery(consoleServer, label, body, quick ? 5 : 15));
    } finally {
      consoleServer.stop();
    }
    return { ingest, queries };
  } finally {
    for (const s of stores) s.close();
    await influx.stop();
    fs.rmSync(root, { recursive: true, force: true });
  }
}

export function printMetricsPlatform(r: { ingest: Row[]; queries: Row[] }): void {
  table(`Fleet metrics: ${INSTANCES} simulated instances (own SQLite store + InfluxSink each) into one influxd on this machine`, r.ingest);
  table(
    'Fleet console over HTTPS, answered from InfluxDB (p50 of repeated queries; targets: last=1 over 1,000 instances <= 300 ms, 48 h of one instance <= 500 ms)',
    r.queries,
  );
}

// `node dist/bench/metrics-platform.js [--quick]`: this section alone
if (process.argv[1] && path.resolve(process.argv[1]) === path.resolve(new URL(import.meta.url).pathname)) {
  const quick = process.argv.includes('--quick');
  const result = await benchMetricsPlatform(quick);
  printMetricsPlatform(result);
  writeResult('metrics-platform', { date: new Date().toISOString(), quick, cpu: os.cpus()[0]?.model, cores: os.cpus().length, ...result });
}
