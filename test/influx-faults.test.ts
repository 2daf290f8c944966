// The metrics sink and the console when InfluxDB misbehaves, against a real influxd where it can
// show the fault (a retention policy that refuses old points, a backslash in a tag) and a fake InfluxDB over
// a real loopback socket where it cannot (an answer that trickles, one too large or of the wrong shape, a
// 400 "unable to parse" for every batch): a partly refused batch is counted and passed, never sent again;
// every exchange has a deadline for the whole answer; the console caps the bytes it reads and refuses what
// InfluxDB cannot take as the client's error.

import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runConsole } from '../src/console/command.js';
import { FleetMetrics } from '../src/console/fleet-metrics.js';
import { ConfigError, parseServerConfig } from '../src/config.js';
import { InfluxClient, parseInfluxUrl } from '../src/metrics/influx-client.js';
import { InfluxSink } from '../src/metrics/influx-sink.js';
import { parseMetricsAppQuery } from '../src/metrics/query.js';
import { MetricsStore, type MetricsSample } from '../src/metrics/store.js';
import { nowNs } from '../src/metrics/time.js';
import { HttpError } from '../src/server/errors.js';
import { registry } from '../src/server/prometheus.js';
import { unwatchSink, watchSink } from '../src/server/sink-prometheus.js';
import { startServer } from '../src/server/server.js';
import { generateSelfSigned } from '../src/server/tls.js';
import { Hono } from 'hono';
import { useTempDirs } from './helpers.js';
import { fuzzConsoleQueries, fuzzSinkAnswers } from '../testkit/fuzz/influx-fuzz.js';
import { emptyQueryAnswer, startFakeInflux, trickle, type FakeInflux } from './support/fake-influx.js';
import { influxQuery, startInfluxd, type Influxd } from '../testkit/influxd.js';

const tmpDir = useTempDirs();
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const SECOND = 1_000_000_000n;
const IDENTITY = {
  region: 'eu',
  appOrg: 'acme',
  appname: 'svc',
  appvers: '1',
  cluster: '',
  clusterorg: '',
  cloudlet: 'c1',
  cloudletorg: 'op',
  pod: 'p1',
};
const APP_KEY = { organization: 'acme', name: 'svc', version: '1' };

function sample(time: bigint, i: number): MetricsSample {
  return {
    time,
    cpu: 1 + i,
    mem: 1000 + i,
    disk: 77,
    sendBytes: 10 * i,
    recvBytes: 20 * i,
    connections: [8008, 8443].map((port) => ({
      port,
      active: 1,
      handled: i,
      accepts: i,
      bytesSent: 5,
      bytesRecvd: 6,
      latencyPercentiles: [0, 1, 2, 3, 4, 5, 6, 7, 8, 9],
    })),
  };
}
/** Points one sample makes in InfluxDB: cpu, mem, disk, network and a connections point per port. */
const POINTS_PER_SAMPLE = 6;

function storeWith(times: bigint[], identity = IDENTITY): MetricsStore {
  const store = MetricsStore.open(tmpDir('edgecv-faults-'));
  const instance = store.instanceId(identity);
  times.forEach((t, i) => store.insert(instance, sample(t, i)));
  return store;
}

async function until(what: string, check: () => boolean, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(50);
  }
}

/** How long `p` takes to settle, or null when it has not within `limitMs` (the test's bound). */
async function settlesWithin(p: Promise<unknown>, limitMs: number): Promise<number | null> {
  const started = Date.now();
  let timer: NodeJS.Timeout | undefined;
  const settled = await Promise.race([
    p.then(
      () => true,
      () => true,
    ),
    new Promise<false>((r) => (timer = setTimeout(() => r(false), limitMs))),
  ]);
  clearTimeout(timer);
  return settled ? Date.now() - started : null;
}

const query = (extra: Record<string, unknown> = {}) =>
  parseMetricsAppQuery({ region: 'eu', appinst: { app_key: APP_KEY }, selector: 'cpu', ...extra });

async function answerError(p: Promise<unknown>): Promise<HttpError> {
  const e = await p.then(
    () => undefined,
    (err: unknown) => err,
  );
  expect(e).toBeInstanceOf(HttpError);
  return e as HttpError;
}

let influx: Influxd;
const fakes: FakeInflux[] = [];
beforeAll(async () => {
  influx = await startInfluxd(tmpDir('edgecv-influxd-'));
});
afterAll(async () => {
  await Promise.all(fakes.map((f) => f.close()));
  await influx?.stop();
});
async function fake(...args: Parameters<typeof startFakeInflux>): Promise<FakeInflux> {
  const f = await startFakeInflux(...args);
  fakes.push(f);
  return f;
}

describe('a partly refused batch (item 1)', () => {
  it('points beyond the retention policy: counted, passed, never sent again; newer samples reach InfluxDB', async () => {
    await influxQuery(influx.origin, 'short', 'CREATE DATABASE "short" WITH DURATION 1h');
    const now = nowNs();
    // 25 samples 4 h to 1.6 h old (an instance cut off longer than the retention policy), then 5 recent ones
    const old = Array.from({ length: 25 }, (_, i) => now - 4n * 3600n * SECOND + BigInt(i) * 6n * 60n * SECOND);
    const recent = Array.from({ length: 5 }, (_, i) => now - 50n * SECOND + BigInt(i) * 10n * SECOND);
    const store = storeWith([...old, ...recent]);
    const logs: string[] = [];
    // batches of 10: two all old, one mixed (5 old, 5 recent)
    const sink = new InfluxSink({ store, target: parseInfluxUrl(`${influx.origin}/short`), batchSamples: 10, log: (m) => logs.push(m) });
    sink.start();
    await until('the sink to pass the refused batches', () => sink.status().backlogSamples === 0, 10_000);
    const status = sink.status();
    expect(status).toMatchObject({ pointsRefused: 25 * POINTS_PER_SAMPLE, pointsWritten: 5 * POINTS_PER_SAMPLE, errors: 0, lastError: null });
    expect(status.lastRefusal).toMatch(/partial write: points beyond retention policy dropped=/);
    const cpu = await influxQuery(influx.origin, 'short', 'SELECT count("cpu") FROM "appinst-cpu"');
    expect(cpu.results[0]!.series![0]!.values[0]![1]).toBe(5);
    expect(logs.filter((l) => /refused \d+ of \d+ points/.test(l))).toHaveLength(3);
    await sink.stop();
    store.close();
  });

  it('400 "unable to parse" for every batch: each batch sent once, then passed', async () => {
    const server = await fake((req, res) => {
      if (req.url?.startsWith('/write')) {
        res.writeHead(400, { 'Content-Type': 'application/json' });
        res.end('{"error":"unable to parse \'appinst-cpu,app=x cpu=z 1\': invalid boolean"}\n');
      } else emptyQueryAnswer(res);
    });
    const now = nowNs();
    const store = storeWith(Array.from({ length: 30 }, (_, i) => now - BigInt(30 - i) * SECOND));
    const sink = new InfluxSink({ store, target: parseInfluxUrl(`${server.origin}/db`), batchSamples: 10, log: () => {} });
    sink.start();
    await until('the sink to pass the refused batches', () => sink.status().backlogSamples === 0, 8_000);
    await sleep(300); // a resend would come within its first backoff step (0.5 s at most)
    expect(server.requests.get('/write')).toBe(3);
    expect(sink.status()).toMatchObject({ pointsRefused: 30 * POINTS_PER_SAMPLE, pointsWritten: 0, errors: 0 });
    // and in GET /metrics
    watchSink(sink);
    try {
      const text = await registry.metrics();
      const series = `edgecv_metrics_sink_refused_points_total{url="${sink.status().url}"} `;
      const line = text.split('\n').find((l) => l.startsWith(series));
      expect(Number(line?.slice(series.length))).toBe(30 * POINTS_PER_SAMPLE);
    } finally {
      unwatchSink(sink);
    }
    await sink.stop();
    store.close();
  });

  it('a tag value InfluxDB cannot store is refused at start, naming the flag', () => {
    const sink = ['--metrics-sink', 'http://127.0.0.1:8086/edgecv'];
    expect(() => parseServerConfig([...sink, '--region', 'a\nb'])).toThrow(ConfigError);
    expect(() => parseServerConfig([...sink, '--region', 'a\nb'])).toThrow(/--region .*line break/);
    expect(() => parseServerConfig([...sink, '--pod', 'p\\'])).toThrow(/--pod .*backslash/);
    expect(() => parseServerConfig([...sink, '--cloudlet', 'c\\,d'])).toThrow(/--cloudlet/);
    // the same values without a sink, and a backslash InfluxDB keeps as it is, are fine
    expect(parseServerConfig(['--region', 'a\nb']).region).toBe('a\nb');
    expect(parseServerConfig([...sink, '--app-org', 'k\\1']).appOrg).toBe('k\\1');
  });
});

describe('a backslash in a tag value (item 11)', () => {
  it('is stored as it is, so that the console finds the row the instance has', async () => {
    const identity = { ...IDENTITY, appname: 'k\\1', cloudlet: 'a\\b c' };
    const store = storeWith([nowNs() - 5n * SECOND], identity);
    const sink = new InfluxSink({ store, target: parseInfluxUrl(`${influx.origin}/backslash`) });
    sink.start();
    await until('the sink to send', () => sink.status().backlogSamples === 0 && sink.status().pointsWritten > 0, 8_000);
    const tags = await influxQuery(influx.origin, 'backslash', 'SHOW TAG VALUES FROM "appinst-cpu" WITH KEY IN ("app", "cloudlet")');
    expect(tags.results[0]!.series![0]!.values.map((v) => v[1]).sort()).toEqual(['a\\b c', 'k\\1']);
    const fleet = new FleetMetrics(new Map([['eu', new InfluxClient(parseInfluxUrl(`${influx.origin}/backslash`))]]));
    const q = parseMetricsAppQuery({ region: 'eu', appinst: { app_key: { ...APP_KEY, name: 'k\\1' } }, selector: 'cpu', last: 5 });
    const answer = JSON.parse(await fleet.answer(q)) as { data: { Series: { values: unknown[][] }[] }[] };
    expect(answer.data[0]!.Series[0]!.values).toHaveLength(1);
    fleet.close();
    await sink.stop();
    store.close();
  });
});

describe('an answer that trickles (items 2 and 5)', () => {
  it('a /write answered 200 and then a byte at a time fails at the deadline; stop() ends the send', async () => {
    const server = await fake((req, res) => (req.url?.startsWith('/write') ? trickle(res, 100) : emptyQueryAnswer(res)));
    const store = storeWith([nowNs() - SECOND]);
    const sink = new InfluxSink({ store, target: parseInfluxUrl(`${server.origin}/db`), timeoutMs: 600, backoffBaseMs: 60_000, log: () => {} });
    sink.start();
    await until('the send to fail', () => sink.status().errors > 0, 5_000);
    expect(sink.status().lastError).toMatch(/no complete answer within 600 ms/);
    store.close();
    await sink.stop();
  });

  it("the sink's stop() is bounded: a send in progress is ended after the time it is given", async () => {
    const server = await fake((req, res) => (req.url?.startsWith('/write') ? trickle(res, 100) : emptyQueryAnswer(res)));
    const store = storeWith([nowNs() - SECOND]);
    const sink = new InfluxSink({ store, target: parseInfluxUrl(`${server.origin}/db`), timeoutMs: 60_000, log: () => {} });
    sink.start();
    await until('the send to begin', () => (server.requests.get('/write') ?? 0) > 0, 5_000);
    // given 300 ms: it ends well within the bound of this test, not when the trickle ends (20 s)
    expect(await settlesWithin(sink.stop(300), 2_000)).not.toBeNull();
    // the batch's outcome is unknown: it stays in flight, to be checked at the next start
    expect(store.sinkCursor(parseInfluxUrl(`${server.origin}/db`).redacted).inflight).not.toBeNull();
    store.close();
  });

  it('stop() makes a last flush: a sink waiting out its backoff sends what the store holds when InfluxDB is back', async () => {
    let writes = 0;
    const server = await fake((req, res) => {
      if (!req.url?.startsWith('/write')) return emptyQueryAnswer(res);
      // the first send fails (InfluxDB restarting); the next one, at stop(), is stored
      res.writeHead(++writes === 1 ? 503 : 204);
      res.end();
    });
    const store = storeWith([nowNs() - 2n * SECOND, nowNs() - SECOND]);
    const sink = new InfluxSink({ store, target: parseInfluxUrl(`${server.origin}/db`), backoffBaseMs: 60_000, log: () => {} });
    sink.start();
    await until('the first send to fail', () => sink.status().errors > 0, 5_000);
    expect(sink.status().backlogSamples).toBe(2);
    await sink.stop(3_000);
    expect(sink.status().backlogSamples).toBe(0);
    expect(writes).toBe(2);
    store.close();
  });

  it('the console answers 503 for a trickling region at its deadline; another region answers meanwhile', async () => {
    const server = await fake((_req, res) => trickle(res, 100));
    await influxQuery(influx.origin, 'other', 'CREATE DATABASE "other"');
    const fleet = new FleetMetrics(
      new Map([
        ['eu', new InfluxClient(parseInfluxUrl(`${server.origin}/db`), { timeoutMs: 700 })],
        ['us', new InfluxClient(parseInfluxUrl(`${influx.origin}/other`))],
      ]),
      { log: () => {} },
    );
    const slow = answerError(fleet.answer(query({ last: 1 })));
    const other = JSON.parse(
      await fleet.answer(parseMetricsAppQuery({ region: 'us', appinst: { app_key: APP_KEY }, selector: 'cpu', last: 1 })),
    ) as unknown;
    expect(other).toMatchObject({ data: [{ Series: [{ name: 'appinst-cpu' }] }] });
    expect(await settlesWithin(slow, 5_000)).not.toBeNull();
    expect((await slow).status).toBe(503);
    fleet.close();
  });
});

describe("the console's reading of InfluxDB answers (items 6, 7, 8, 10)", () => {
  it('an answer over the byte cap is refused with 502 naming the cap', async () => {
    // 4 MB of rows in one valid answer; the region's cap is 1 MB
    const row = '["2026-11-21T10:00:00Z",1.5],';
    const rows = row.repeat(Math.ceil(4e6 / row.length)).slice(0, -1);
    const server = await fake((_req, res) => {
      res.writeHead(200, { 'Content-Type': 'application/json' });
      res.end(`{"results":[{"statement_id":0,"series":[{"name":"appinst-cpu","tags":{},"columns":["time","cpu"],"values":[${rows}]}]}]}\n`);
    });
    const fleet = new FleetMetrics(new Map([['eu', new InfluxClient(parseInfluxUrl(`${server.origin}/db`), { maxAnswerBytes: 1_000_000 })]]), {
      log: () => {},
      maxAnswerRows: 10_000_000,
    });
    const e = await answerError(fleet.answer(query({ last: 1 })));
    expect(e.status).toBe(502);
    expect(e.message).toMatch(/more than 1000000 bytes/);
    fleet.close();
  });

  it('a series without columns is a 503 and a log line, not a 500', async () => {
    const server = await fake((_req, res) => {
      res.writeHead(200, { 'Content-Type': 'application/json' });
      res.end('{"results":[{"statement_id":0,"series":[{"name":"appinst-cpu","values":[["2026-11-21T10:00:00Z",1]]}]}]}\n');
    });
    const logs: string[] = [];
    const fleet = new FleetMetrics(new Map([['eu', new InfluxClient(parseInfluxUrl(`${server.origin}/db`))]]), { log: (m) => logs.push(m) });
    expect((await answerError(fleet.answer(query({ last: 1 })))).status).toBe(503);
    expect(logs.join('\n')).toMatch(/without name, columns or values/);
    fleet.close();
  });

  it('a time outside InfluxDB range or a name with NUL/CR/LF is a 400 naming the field, not a 503', async () => {
    const fleet = new FleetMetrics(new Map([['eu', new InfluxClient(parseInfluxUrl(`${influx.origin}/edgecv`))]]), { log: () => {} });
    const start = await answerError(fleet.answer(query({ starttime: '1500-01-01T00:00:00Z' })));
    expect([start.status, start.message]).toEqual([400, expect.stringMatching(/^starttime is outside/)]);
    const end = await answerError(fleet.answer(query({ endtime: '2300-01-01T00:00:00Z' })));
    expect([end.status, end.message]).toEqual([400, expect.stringMatching(/^endtime is outside/)]);
    for (const [name, field] of [
      [{ ...APP_KEY, name: 'a\u0000b' }, 'app_key.name'],
      [{ ...APP_KEY, version: 'a\nb' }, 'app_key.version'],
    ] as const) {
      const e = await answerError(fleet.answer(parseMetricsAppQuery({ region: 'eu', appinst: { app_key: name }, selector: 'cpu' })));
      expect([e.status, e.message]).toEqual([400, expect.stringContaining(field)]);
    }
    fleet.close();
  });

  it('a window cut into buckets longer than InfluxDB takes (numsamples 1 over 1678-2261) is a 400 naming the fields', async () => {
    await influxQuery(influx.origin, 'wide', 'CREATE DATABASE "wide"');
    const fleet = new FleetMetrics(new Map([['eu', new InfluxClient(parseInfluxUrl(`${influx.origin}/wide`))]]), { log: () => {} });
    const window = { starttime: '1678-01-01T00:00:00Z', endtime: '2261-12-31T00:00:00Z' };
    // no endtime: the window ends now, and 1678 to now is as long
    for (const q of [
      { ...window, numsamples: 1 },
      { starttime: window.starttime, numsamples: 1 },
    ]) {
      const e = await answerError(fleet.answer(query(q)));
      expect([e.status, e.message]).toEqual([400, expect.stringMatching(/numsamples.*starttime.*endtime|starttime.*endtime.*numsamples/)]);
    }
    // two buckets are short enough: InfluxDB answers (no rows there)
    const ok = JSON.parse(await fleet.answer(query({ ...window, numsamples: 2 }))) as { data: unknown[] };
    expect(Array.isArray(ok.data)).toBe(true);
    fleet.close();
  });

  it('numsamples over the row limit is answered for an instance with few samples', async () => {
    const store = storeWith(Array.from({ length: 10 }, (_, i) => nowNs() - BigInt(60 - i) * SECOND));
    const sink = new InfluxSink({ store, target: parseInfluxUrl(`${influx.origin}/numsamples`) });
    sink.start();
    await until('the sink to send', () => sink.status().backlogSamples === 0 && sink.status().pointsWritten > 0, 8_000);
    const fleet = new FleetMetrics(new Map([['eu', new InfluxClient(parseInfluxUrl(`${influx.origin}/numsamples`))]]), { log: () => {} });
    const answer = JSON.parse(await fleet.answer(query({ numsamples: 300_000 }))) as { data: { Series: { values: unknown[][] }[] }[] };
    expect(answer.data[0]!.Series[0]!.values).toHaveLength(10);
    fleet.close();
    await sink.stop();
    store.close();
  });
});

describe('URLs (items 12 and 13)', () => {
  it('a malformed %-escape in a console --region is a ConfigError, as for --metrics-sink', async () => {
    expect(() => parseInfluxUrl('http://127.0.0.1:8086/%zz')).toThrow(/malformed %-escape/);
    expect(() => parseServerConfig(['--metrics-sink', 'http://u%zz:p@127.0.0.1:8086/db'])).toThrow(ConfigError);
    await expect(runConsole(['--region', 'eu=http://127.0.0.1:8086/%zz', '--port', '0'])).rejects.toThrow(ConfigError);
  });

  it('a URL with only a user part (a token) shows no part of it', () => {
    expect(parseInfluxUrl('http://s3cr3tT0ken@127.0.0.1:8086/db').redacted).toBe('http://***@127.0.0.1:8086/db');
    expect(parseInfluxUrl('http://bob:pw@127.0.0.1:8086/db').redacted).toBe('http://bob:***@127.0.0.1:8086/db');
  });

  it('the sink status (/server/usage/, /metrics labels) shows no user part at all', () => {
    const store = storeWith([]);
    for (const url of ['http://s3cr3tT0ken@127.0.0.1:9/db', 'http://bob:pw@127.0.0.1:9/db']) {
      const sink = new InfluxSink({ store, target: parseInfluxUrl(url), log: () => {} });
      expect(sink.status().url).toBe('http://127.0.0.1:9/db');
    }
    store.close();
  });
});

describe('seeded hostile input (the short run of npm run fuzz)', () => {
  it('hostile console query fields against a healthy InfluxDB: JSON every time, never a 5xx', async () => {
    await influxQuery(influx.origin, 'fuzz', 'CREATE DATABASE "fuzz"');
    const report = await fuzzConsoleQueries({ influxUrl: `${influx.origin}/fuzz`, seed: 37, cases: 300 });
    expect(report.failures).toEqual([]);
    expect(report.statuses['400']).toBeGreaterThan(0);
    expect(report.statuses['200']).toBeGreaterThan(0);
  });

  it('hostile sink answers: no refused batch sent again, caught up once InfluxDB answers well', async () => {
    const report = await fuzzSinkAnswers({ seed: 37, answers: 120, timeoutMs: 40_000 });
    expect(report).toMatchObject({ resentRefused: 0, caughtUp: true });
    expect(report.pointsRefused).toBeGreaterThan(0);
  });
});

describe('the drain (item 3)', () => {
  it('close(grace) ends a TCP connection that never starts TLS at the grace, not at the handshake timeout', async () => {
    const tls = await generateSelfSigned();
    const running = await startServer({ app: new Hono(), tls, port: 0, host: '127.0.0.1', guards: { handshakeTimeoutMs: 20_000 } });
    const silent = net.connect(running.port, '127.0.0.1');
    silent.on('error', () => {});
    await new Promise((r) => silent.once('connect', r));
    // given 300 ms: it ends within the bound of this test, not at the handshake timeout (20 s)
    const took = await settlesWithin(running.close(300), 2_000);
    silent.destroy();
    expect(took).not.toBeNull();
  });
});
