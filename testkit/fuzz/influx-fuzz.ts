// The fleet metrics surfaces under seeded hostile input, for `npm run fuzz` (and its short run in `npm test`):
//   - the console's query fields: hostile metrics query bodies (names with quotes, backslashes, NUL/CR/LF,
//     long and odd Unicode; times out of range or malformed; last/numsamples huge, negative, fractional, of the
//     wrong type) sent by a logged-in user to a console app whose region is a healthy InfluxDB. Every answer
//     must be JSON and none a 5xx: with the database healthy, a 503 would blame it for the client's error.
//   - the sink's answers: a fake InfluxDB over a loopback socket answering each /write and /query with a seeded
//     fault (statuses, partial writes, garbage, a cut connection, an answer that trickles past the deadline, one
//     over the byte cap), then healthy again. The sink must not throw, never resend a batch InfluxDB refused in
//     part, and catch up (backlog 0) within a bound once InfluxDB answers well.

import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import { AuthService } from '../../src/auth/auth-service.js';
import { addUser } from '../../src/auth/users.js';
import { createConsoleApp } from '../../src/console/app.js';
import { FleetMetrics } from '../../src/console/fleet-metrics.js';
import { InfluxClient, parseInfluxUrl } from '../../src/metrics/influx-client.js';
import { InfluxSink } from '../../src/metrics/influx-sink.js';
import { MetricsStore } from '../../src/metrics/store.js';
import { nowNs } from '../../src/metrics/time.js';
import { Rng } from './cases.js';

const ODD_STRINGS = [
  "a'b",
  'a"b',
  'a\\b',
  'a\\',
  '\\',
  'a\u0000b',
  'a\nb',
  'a\rb',
  "'; DROP DATABASE x; --",
  '" OR 1=1 --',
  '/.*/',
  '*',
  ' ',
  'ü☃𝄞',
  '\ud800',
  'x'.repeat(5000),
  '${x}',
  'a,b=c d',
  '%zz',
  '\t',
  'null',
];
const ODD_TIMES = [
  '1500-01-01T00:00:00Z',
  '2300-01-01T00:00:00Z',
  '1677-09-21T00:12:43.145224191Z',
  '2262-04-11T23:47:16.854775807Z',
  '0000-01-01T00:00:00Z',
  '9999-12-31T23:59:59.999999999Z',
  '2026-13-01T00:00:00Z',
  '2026-02-30T00:00:00Z',
  '2026-11-21T10:00:00+25:00',
  'yesterday',
  '',
  '2026-11-21',
  '2026-11-21T10:00:00.1234567891234Z',
  '2026-11-21T10:00:60Z',
];
const ODD_NUMBERS: unknown[] = [0, -1, 1, 2, 1.5, 200_000, 200_001, 1e9, 2 ** 53, Number.MAX_SAFE_INTEGER, '5', null, true, [], {}, 1e308];

function oddValue(rng: Rng): unknown {
  switch (rng.int(6)) {
    case 0:
      return rng.pick(ODD_STRINGS);
    case 1:
      return rng.pick(ODD_NUMBERS);
    case 2:
      return rng.bytes(rng.int(40)).toString('latin1');
    case 3:
      return { nested: rng.pick(ODD_STRINGS) };
    default:
      return rng.pick(['acme', 'svc', '1', 'eu']);
  }
}

/** One hostile metrics query body: mostly well-formed, one to three fields odd. */
export function hostileQuery(rng: Rng): Record<string, unknown> {
  const body: Record<string, unknown> = {
    region: 'eu',
    appinst: {
      app_key: { organization: 'acme', name: 'svc', version: '1' },
      cluster_inst_key: { cluster_key: { name: 'k1' }, organization: 'acme', cloudlet_key: { name: 'c1', organization: 'op' } },
    },
    selector: rng.pick(['cpu', 'mem,disk', 'connections', '*', 'cpu,network,connections']),
  };
  const fields = [
    'region',
    'organization',
    'name',
    'version',
    'cluster',
    'clusterorg',
    'cloudlet',
    'cloudletorg',
    'selector',
    'starttime',
    'endtime',
    'last',
    'numsamples',
    'appinsts',
  ];
  for (let i = 0, n = 1 + rng.int(3); i < n; i++) {
    const field = rng.pick(fields);
    const app = body['appinst'] as { app_key: Record<string, unknown>; cluster_inst_key: Record<string, unknown> };
    const v = field === 'starttime' || field === 'endtime' ? (rng.int(3) === 0 ? oddValue(rng) : rng.pick(ODD_TIMES)) : oddValue(rng);
    if (field === 'organization' || field === 'name' || field === 'version') app.app_key[field] = v;
    else if (field === 'cluster') app.cluster_inst_key['cluster_key'] = { name: v };
    else if (field === 'clusterorg') app.cluster_inst_key['organization'] = v;
    else if (field === 'cloudlet' || field === 'cloudletorg')
      app.cluster_inst_key['cloudlet_key'] = { [field === 'cloudlet' ? 'name' : 'organization']: v };
    else if (field === 'appinsts') body['appinsts'] = rng.int(2) === 0 ? v : [{ app_key: { organization: v, name: 'svc', version: '1' } }];
    else body[field] = v;
  }
  if (rng.int(4) === 0 && typeof body['last'] !== 'number') body['last'] = 1 + rng.int(5);
  return body;
}

export interface ConsoleFuzzReport {
  cases: number;
  statuses: Record<string, number>;
  /** Cases answered 5xx or not JSON: each a failure. */
  failures: string[];
}

/** Sends `cases` hostile query bodies to a console app over `influxUrl` (a healthy InfluxDB). */
export async function fuzzConsoleQueries(opts: { influxUrl: string; seed: number; cases: number }): Promise<ConsoleFuzzReport> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'edgecv-console-fuzz-'));
  const metrics = new FleetMetrics(new Map([['eu', new InfluxClient(parseInfluxUrl(opts.influxUrl), { timeoutMs: 10_000 })]]), { log: () => {} });
  try {
    await addUser(dir, 'fuzz', 'fuzz-password-123', ['acme']);
    const app = createConsoleApp({ auth: new AuthService(dir), metrics });
    const login = await app.request('/api/v1/login', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ username: 'fuzz', password: 'fuzz-password-123' }),
    });
    const { token } = (await login.json()) as { token: string };
    const rng = new Rng(opts.seed);
    const report: ConsoleFuzzReport = { cases: 0, statuses: {}, failures: [] };
    for (let i = 0; i < opts.cases; i++) {
      const body = JSON.stringify(hostileQuery(rng));
      const res = await app.request('/api/v1/auth/metrics/app', {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
        body,
      });
      const text = await res.text();
      report.cases++;
      report.statuses[res.status] = (report.statuses[res.status] ?? 0) + 1;
      let json = true;
      try {
        JSON.parse(text);
      } catch {
        json = false;
      }
      if (res.status >= 500 || !json) report.failures.push(`${res.status} ${text.slice(0, 200)} <- ${body.slice(0, 300)}`);
    }
    return report;
  } finally {
    metrics.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

type Fault = 'ok' | 'partial' | 'unparsable' | '400-other' | '401' | '404' | '413' | '500' | '503' | 'garbage' | 'cut' | 'trickle' | 'huge';
const FAULTS: readonly Fault[] = ['ok', 'partial', 'unparsable', '400-other', '401', '404', '413', '500', '503', 'garbage', 'cut', 'trickle', 'huge'];

function answerWith(fault: Fault, rng: Rng, res: http.ServerResponse, isWrite: boolean): void {
  const json = (status: number, body: string) => {
    res.writeHead(status, { 'Content-Type': 'application/json' });
    res.end(body);
  };
  switch (fault) {
    case 'ok':
      if (isWrite) {
        res.writeHead(204);
        res.end();
      } else json(200, '{"results":[{"statement_id":0}]}\n');
      return;
    case 'partial':
      return json(400, `{"error":"partial write: points beyond retention policy dropped=${rng.int(3000)}"}`);
    case 'unparsable':
      return json(400, `{"error":"unable to parse '${rng.bytes(20).toString('latin1').replace(/["\\]/g, '')}': bad timestamp"}`);
    case '400-other':
      return json(400, '{"error":"something else"}');
    case '401':
    case '404':
    case '413':
    case '500':
    case '503':
      return json(Number(fault), rng.int(2) === 0 ? '{"error":"x"}' : rng.bytes(rng.int(200)).toString('latin1'));
    case 'garbage':
      return json(
        200,
        rng.pick([
          '{',
          '{"results":[{"statement_id":0,"series":[{"name":"x"}]}]}',
          '[]',
          'null',
          '{"results":"x"}',
          rng.bytes(100).toString('latin1'),
        ]),
      );
    case 'cut':
      res.socket?.destroy();
      return;
    case 'trickle': {
      res.writeHead(200);
      const timer = setInterval(() => (res.destroyed ? clearInterval(timer) : res.write(' ')), 100);
      res.on('close', () => clearInterval(timer));
      setTimeout(() => {
        clearInterval(timer);
        res.end();
      }, 3000).unref();
      return;
    }
    case 'huge':
      res.writeHead(200, { 'Content-Type': 'application/json' });
      res.end(Buffer.alloc(2 * 1024 * 1024, 0x20));
      return;
  }
}

export interface SinkFuzzReport {
  answers: number;
  byFault: Record<string, number>;
  /** A batch (by its first sample's time) InfluxDB refused in part and that was sent again. */
  resentRefused: number;
  caughtUp: boolean;
  pointsRefused: number;
  errors: number;
}

/**
 * Runs a sink with 400 samples against a fake InfluxDB answering up to `answers` requests with seeded faults,
 * then healthy; bounded by `timeoutMs` for the catch-up.
 */
export async function fuzzSinkAnswers(opts: { seed: number; answers: number; timeoutMs?: number }): Promise<SinkFuzzReport> {
  const rng = new Rng(opts.seed);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'edgecv-sink-fuzz-'));
  const report: SinkFuzzReport = { answers: 0, byFault: {}, resentRefused: 0, caughtUp: false, pointsRefused: 0, errors: 0 };
  const refusedBatches = new Set<string>();
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (d: Buffer) => chunks.push(d));
    req.on('end', () => {
      const isWrite = (req.url ?? '').startsWith('/write');
      const fault: Fault = report.answers < opts.answers ? rng.pick(FAULTS) : 'ok';
      if (report.answers < opts.answers) {
        report.answers++;
        report.byFault[fault] = (report.byFault[fault] ?? 0) + 1;
      }
      if (isWrite) {
        // the batch by its body (gzip of the same rows is the same bytes): a refused one must not come again
        const key = Buffer.concat(chunks).toString('base64').slice(-64);
        if (refusedBatches.has(key)) report.resentRefused++;
        if (fault === 'partial' || fault === 'unparsable') refusedBatches.add(key);
      }
      answerWith(fault, rng, res, isWrite);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const store = MetricsStore.open(dir);
  const instance = store.instanceId({
    region: 'eu',
    appOrg: 'acme',
    appname: 'svc',
    appvers: '1',
    cluster: '',
    clusterorg: '',
    cloudlet: '',
    cloudletorg: '',
    pod: 'p',
  });
  const now = nowNs();
  for (let i = 0; i < 400; i++) {
    store.insert(instance, { time: now - BigInt(400 - i) * 1_000_000_000n, cpu: i, mem: i, disk: i, sendBytes: i, recvBytes: i, connections: [] });
  }
  const sink = new InfluxSink({
    store,
    target: parseInfluxUrl(`${origin}/db`),
    batchSamples: 7,
    timeoutMs: 500,
    backoffBaseMs: 5,
    backoffMaxMs: 40,
    log: () => {},
  });
  sink.start();
  const deadline = Date.now() + (opts.timeoutMs ?? 60_000);
  while (Date.now() < deadline) {
    const s = sink.status();
    if (s.backlogSamples === 0) {
      report.caughtUp = true;
      break;
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  const status = sink.status();
  report.pointsRefused = status.pointsRefused;
  report.errors = status.errors;
  await sink.stop(1000);
  store.close();
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  fs.rmSync(dir, { recursive: true, force: true });
  return report;
}
