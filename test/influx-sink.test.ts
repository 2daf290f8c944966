// The InfluxDB sink against a real influxd, without server processes: the line protocol InfluxDB reads
// (integer fields as integers, empty tags left out, escaping), the in-flight check that acknowledges a batch
// already in InfluxDB instead of sending it again (and sends it when it is not all there), credentials from
// the URL or a file and never in a log line, TLS with an own CA file, and the console's answer shape.

import fs from 'node:fs';
import path from 'node:path';
import { gzipSync } from 'node:zlib';
import { Database } from '../src/sqlite.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConsoleArgs } from '../src/console/command.js';
import { FleetMetrics, selectorStatement } from '../src/console/fleet-metrics.js';
import { ConfigError, parseServerConfig } from '../src/config.js';
import { InfluxClient, parseInfluxUrl, readCredentialsFile } from '../src/metrics/influx-client.js';
import { lineOf } from '../src/metrics/influx-line.js';
import { InfluxSink } from '../src/metrics/influx-sink.js';
import { parseMetricsAppQuery } from '../src/metrics/query.js';
import { MetricsStore, type MetricsSample } from '../src/metrics/store.js';
import { formatRfc3339Nano } from '../src/metrics/time.js';
import { generateSelfSigned } from '../src/server/tls.js';
import { useTempDirs } from './helpers.js';
import { influxQuery, startInfluxd, type Influxd } from '../testkit/influxd.js';

const tmpDir = useTempDirs();
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const T0 = 1_790_000_000_000_000_000n; // 2026-09-21
const SECOND = 1_000_000_000n;
const IDENTITY = {
  region: 'eu',
  appOrg: 'acme',
  appname: 'face svc',
  appvers: '1,0',
  cluster: '',
  clusterorg: '',
  cloudlet: 'cl=1',
  cloudletorg: 'op',
  pod: 'p1-ü',
};

function sample(i: number, cpu = 1.25 + i): MetricsSample {
  return {
    time: T0 + BigInt(i) * SECOND,
    cpu,
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
      latencyPercentiles: [0, 1, 2, 3, 4, 5, 6, 7, 8, 9.5],
    })),
  };
}

async function until(what: string, check: () => boolean | Promise<boolean>, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(50);
  }
}

let influx: Influxd;
beforeAll(async () => {
  influx = await startInfluxd(tmpDir('edgecv-influxd-'));
});
afterAll(async () => {
  await influx?.stop();
});

function openStore(n: number): { store: MetricsStore; instance: number } {
  const store = MetricsStore.open(tmpDir('edgecv-sink-'));
  const instance = store.instanceId(IDENTITY);
  for (let i = 0; i < n; i++) store.insert(instance, sample(i));
  return { store, instance };
}

async function drained(sink: InfluxSink): Promise<void> {
  sink.start();
  await until('the sink to catch up', () => sink.status().backlogSamples === 0 && sink.status().lastError === null);
}

describe('line protocol', () => {
  it('integer fields as integers, floats as floats, empty tags left out, special characters escaped, ns time', () => {
    const tags = { app: 'face svc', ver: '1,0', cluster: '', clusterorg: '', cloudlet: 'cl=1', cloudletorg: 'op', apporg: 'acme', pod: 'p1' };
    expect(lineOf('mem', tags, 123n, [5])).toBe('appinst-mem,app=face\\ svc,apporg=acme,cloudlet=cl\\=1,cloudletorg=op,pod=p1,ver=1\\,0 mem=5i 123');
    expect(lineOf('cpu', tags, 1n, [2])).toMatch(/ cpu=2 1$/);
    // the port is a tag: two ports at one time are two points
    expect(lineOf('connections', tags, 9n, [8008, 1, 2, 3, 4, 5, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9.5])).toMatch(
      /,pod=p1,port=8008,ver=1\\,0 active=1i,handled=2i,accepts=3i,bytesSent=4i,bytesRecvd=5i,P0=0,.*P99\.9=8,P100=9\.5 9$/,
    );
  });
});

describe('InfluxSink', () => {
  it('sends every sample, typed, and InfluxDB answers the same rows; the console reads them back', async () => {
    const { store } = openStore(5);
    const db = 'typed';
    const sink = new InfluxSink({ store, target: parseInfluxUrl(`${influx.origin}/${db}`) });
    await drained(sink);
    const mem = await influxQuery(influx.origin, db, 'SELECT "mem" FROM "appinst-mem"');
    expect(mem.results[0]!.series![0]!.values.map((v) => v[1])).toEqual([1000, 1001, 1002, 1003, 1004]);
    const conn = await influxQuery(influx.origin, db, 'SELECT count("active") FROM "appinst-connections" GROUP BY "port"');
    expect(conn.results[0]!.series!.map((s) => [s.tags!['port'], s.values[0]![1]])).toEqual([
      ['8008', 5],
      ['8443', 5],
    ]);
    expect(sink.status()).toMatchObject({
      backlogSamples: 0,
      lagSeconds: 0,
      errors: 0,
      pointsWritten: 5 * 6,
      ackedUpTo: formatRfc3339Nano(T0 + 4n * SECOND),
    });

    // the console's answer: empty tags as "", the port as a number, newest first, 9 fraction digits
    const fleet = new FleetMetrics(new Map([['eu', new InfluxClient(parseInfluxUrl(`${influx.origin}/${db}`))]]));
    const q = parseMetricsAppQuery({
      region: 'eu',
      appinst: { app_key: { organization: 'acme', name: 'face svc', version: '1,0' } },
      selector: 'cpu,connections',
      last: 1,
    });
    const answer = JSON.parse(await fleet.answer(q)) as { data: { Series: { values: unknown[][] }[] }[] };
    const [cpu, connections] = answer.data[0]!.Series;
    expect(cpu!.values).toEqual([[formatRfc3339Nano(T0 + 4n * SECOND), 'face svc', '1,0', '', '', 'cl=1', 'op', 'acme', 'p1-ü', 5.25]]);
    expect(connections!.values.map((r) => r[9])).toEqual([8008, 8443]);
    fleet.close();

    // a row limit: an answer over it is refused with 400 (read in chunks, or cut by SLIMIT), one within it is not
    const small = new FleetMetrics(new Map([['eu', new InfluxClient(parseInfluxUrl(`${influx.origin}/${db}`))]]), { maxAnswerRows: 5 });
    const all = (extra: Record<string, unknown>) =>
      parseMetricsAppQuery({
        region: 'eu',
        appinst: { app_key: { organization: 'acme', name: 'face svc', version: '1,0' } },
        starttime: formatRfc3339Nano(T0),
        ...extra,
      });
    expect(JSON.parse(await small.answer(all({ selector: 'cpu' }))).data[0].Series[0].values).toHaveLength(5);
    await expect(small.answer(all({ selector: 'connections' }))).rejects.toThrow(/more than 5 rows/); // 2 ports x 5
    await expect(small.answer(all({ selector: 'connections', last: 3 }))).rejects.toThrow(/more than 5 rows/); // SLIMIT 2 cuts
    expect(JSON.parse(await small.answer(all({ selector: 'connections', last: 2 }))).data[0].Series[0].values).toHaveLength(4);
    small.close();
    await sink.stop();
    store.close();
  });

  it('a batch sent before a crash is acknowledged by checking InfluxDB, not sent again; a batch not all there is sent again', async () => {
    const { store, instance } = openStore(4);
    const db = 'inflight';
    const target = parseInfluxUrl(`${influx.origin}/${db}`);
    const first = new InfluxSink({ store, target });
    await drained(first);
    await first.stop();
    // as if killed after InfluxDB took samples 4-5 but before the cursor moved: in flight, not acknowledged
    store.insert(instance, sample(4));
    store.insert(instance, sample(5));
    const write = new InfluxClient(target);
    const rows = store.rowsInRange(T0 + 3n * SECOND, T0 + 5n * SECOND);
    await write.writeGzip(gzipSync(rows.map((r) => lineOf(r.selector, r.tags, r.time, r.values)).join('\n')));
    store.setSinkCursor(target.redacted, { acked: T0 + 3n * SECOND, inflight: T0 + 5n * SECOND });
    // the store's values change meanwhile: a resend would overwrite InfluxDB's with them, a check does not
    const raw = new Database(store.file);
    raw.prepare('UPDATE cpu SET cpu = 99 WHERE time > ?').run(T0 + 3n * SECOND);
    const second = new InfluxSink({ store, target });
    await drained(second);
    await second.stop();
    const cpu = await influxQuery(influx.origin, db, 'SELECT "cpu" FROM "appinst-cpu"');
    expect(cpu.results[0]!.series![0]!.values.map((v) => v[1])).toEqual([1.25, 2.25, 3.25, 4.25, 5.25, 6.25]); // not 99: not resent

    // in flight again, but InfluxDB lost one point of it: the batch goes again (and brings the 99s)
    store.insert(instance, sample(6));
    await write.query(`DELETE FROM "appinst-mem" WHERE time = ${T0 + 5n * SECOND}`, { method: 'POST' });
    store.setSinkCursor(target.redacted, { acked: T0 + 3n * SECOND, inflight: T0 + 5n * SECOND });
    const third = new InfluxSink({ store, target });
    await drained(third);
    await third.stop();
    const again = await influxQuery(influx.origin, db, 'SELECT "cpu" FROM "appinst-cpu"; SELECT count("mem") FROM "appinst-mem"');
    expect(again.results[0]!.series![0]!.values.map((v) => v[1])).toEqual([1.25, 2.25, 3.25, 4.25, 99, 99, 7.25]);
    expect(again.results[1]!.series![0]!.values[0]![1]).toBe(7);
    write.close();
    raw.close();
    store.close();
  });

  it('TLS with an own CA file; without it the certificate is refused', async () => {
    const dir = tmpDir('edgecv-influx-tls-');
    const { cert, key } = await generateSelfSigned();
    fs.writeFileSync(path.join(dir, 'cert.pem'), cert);
    fs.writeFileSync(path.join(dir, 'key.pem'), key);
    const secure = await startInfluxd(path.join(dir, 'influxd'), {
      tls: { certFile: path.join(dir, 'cert.pem'), keyFile: path.join(dir, 'key.pem') },
    });
    try {
      const url = `${secure.origin}/tls`;
      const logs: string[] = [];
      const untrusted = new InfluxSink({ store: openStore(1).store, target: parseInfluxUrl(url), log: (m) => logs.push(m) });
      untrusted.start();
      await until('a TLS error', () => untrusted.status().errors > 0);
      expect(untrusted.status().lastError).toMatch(/certificate/i);
      await untrusted.stop();
      const { store } = openStore(3);
      const trusted = new InfluxSink({ store, target: parseInfluxUrl(url, { ca: path.join(dir, 'cert.pem') }) });
      await drained(trusted);
      expect(trusted.status().pointsWritten).toBe(3 * 6);
      await trusted.stop();
    } finally {
      await secure.stop();
    }
  });

  it('credentials from the URL or a file; a refused login is retried and logged without the password', async () => {
    const secured = await startInfluxd(tmpDir('edgecv-influx-auth-'), { auth: true });
    try {
      // the first user of an auth-enabled InfluxDB may be created without credentials
      await fetch(`${secured.origin}/query`, {
        method: 'POST',
        body: new URLSearchParams({ q: "CREATE USER admin WITH PASSWORD 's3cret-pw' WITH ALL PRIVILEGES" }),
      });
      const logs: string[] = [];
      const wrong = new InfluxSink({
        store: openStore(1).store,
        target: parseInfluxUrl(`http://admin:not-the-pw@127.0.0.1:${new URL(secured.origin).port}/authdb`),
        log: (m) => logs.push(m),
      });
      wrong.start();
      await until('a refused write', () => wrong.status().errors > 0);
      await wrong.stop();
      expect(wrong.status().lastError).toMatch(/401|authorization/);
      expect(wrong.status().url).toBe(`http://127.0.0.1:${new URL(secured.origin).port}/authdb`);
      expect(wrong.status().lastError).not.toContain('admin'); // shown to unauthenticated readers of /server/usage/
      expect(logs.join('\n')).not.toContain('not-the-pw');
      expect(logs.length).toBeGreaterThan(0);

      const byUrl = new InfluxSink({
        store: openStore(2).store,
        target: parseInfluxUrl(`http://admin:s3cret-pw@127.0.0.1:${new URL(secured.origin).port}/authdb`),
      });
      await drained(byUrl); // and it created the database
      await byUrl.stop();
      const file = path.join(tmpDir('edgecv-creds-'), 'influx.creds');
      fs.writeFileSync(file, 'admin:s3cret-pw\n', { mode: 0o600 });
      expect(readCredentialsFile(file)).toEqual({ username: 'admin', password: 's3cret-pw' });
      const byFile = new InfluxSink({ store: openStore(3).store, target: parseInfluxUrl(`${secured.origin}/authdb2`, { credentials: file }) });
      await drained(byFile);
      await byFile.stop();
      const res = await fetch(`${secured.origin}/query?${new URLSearchParams({ q: 'SHOW DATABASES', u: 'admin', p: 's3cret-pw' })}`);
      expect(JSON.stringify(await res.json())).toMatch(/authdb2/);
    } finally {
      await secured.stop();
    }
  });
});

describe('flags', () => {
  it('--metrics-sink must be an InfluxDB URL naming a database; its credentials and CA go with it', () => {
    expect(parseServerConfig(['--metrics-sink', 'http://127.0.0.1:8086/edgecv'], {}).metricsSink).toBe('http://127.0.0.1:8086/edgecv');
    for (const bad of ['influx:8086', 'ftp://h/db', 'http://h:8086', 'http://h:8086/a/b', 'http://h:8086/db?rp=x']) {
      expect(() => parseServerConfig(['--metrics-sink', bad], {}), bad).toThrow(ConfigError);
    }
    expect(() => parseServerConfig(['--metrics-sink-ca', '/ca.pem'], {})).toThrow(/go with --metrics-sink/);
    expect(parseInfluxUrl('https://u:p%40ss@h:8086/my%20db')).toMatchObject({
      origin: 'https://h:8086',
      database: 'my db',
      auth: { username: 'u', password: 'p@ss' },
      redacted: 'https://u:***@h:8086/my%20db',
    });
  });

  it('edgecv console: regions NAME=URL (flag or EDGECV_CONSOLE_REGIONS), at least one, no name twice', () => {
    const config = parseConsoleArgs(['--region', 'eu=http://a:8086/x', '--region', 'us=https://b:8086/y', '--port', '0'], {});
    expect([...config.regions]).toEqual([
      ['eu', 'http://a:8086/x'],
      ['us', 'https://b:8086/y'],
    ]);
    expect(config.port).toBe(0);
    expect([...parseConsoleArgs([], { EDGECV_CONSOLE_REGIONS: 'eu=http://a:8086/x,us=http://b:8086/y' }).regions.keys()]).toEqual(['eu', 'us']);
    expect(() => parseConsoleArgs([], {})).toThrow(/at least one --region/);
    expect(() => parseConsoleArgs(['--region', 'http://a:8086/x'], {})).toThrow(/NAME=URL/);
    expect(() => parseConsoleArgs(['--region', 'eu=http://a/x', '--region', 'eu=http://b/x'], {})).toThrow(/twice/);
    expect(() => parseConsoleArgs(['--region', 'eu=http://a/x', '--tls-cert', 'c.pem'], {})).toThrow(/go together/);
  });
});

describe('console statements', () => {
  it('numsamples cuts the window into N equal buckets that start at starttime', () => {
    const q = parseMetricsAppQuery({
      region: 'eu',
      appinst: { app_key: { organization: "o'rg", name: 'a', version: '1' } },
      selector: 'cpu,mem,network',
      numsamples: 3,
      starttime: '2026-11-25T00:00:00Z',
      endtime: '2026-11-25T00:00:08.999999999Z',
    });
    const [cpu, mem, network] = q.selectors.map((s) => selectorStatement(s, q));
    expect(cpu).toContain(`SELECT mean("cpu") AS "cpu" FROM "appinst-cpu" WHERE (("apporg" = 'o\\'rg' AND "app" = 'a' AND "ver" = '1'))`);
    expect(cpu).toMatch(/GROUP BY time\(3000000000ns, \d+ns\), "app", .*"pod" fill\(none\) ORDER BY time DESC LIMIT 3 SLIMIT 66667$/);
    const offset = BigInt(/time\(3000000000ns, (\d+)ns\)/.exec(cpu!)![1]!);
    expect((1_795_564_800_000_000_000n - offset) % 3_000_000_000n).toBe(0n);
    expect(mem).toContain('max("mem") AS "mem"');
    expect(network).toContain('last("sendBytes") AS "sendBytes", last("recvBytes") AS "recvBytes"');
  });
});
