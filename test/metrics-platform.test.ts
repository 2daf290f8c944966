// The fleet metrics platform end to end, on the real database: one real `influxd`, four real `edgecv serve`
// processes sending their samples to it (--metrics-sink; three instances of one app on other cloudlets and
// pods, a fourth of another app), and one `edgecv console` answering the metrics query from InfluxDB.
// The `edgecv` CLI logs in to the console and queries it unchanged. InfluxDB is stopped while the instances
// keep sampling, one instance is killed with SIGKILL and restarted meanwhile, and afterwards InfluxDB must
// hold every sample each instance's SQLite store recorded, once. A contract test holds an instance's own
// answer (SQLite) and the console's (InfluxDB) for the same window side by side.

import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addUser } from '../src/auth/users.js';
import { INFLUX_TAG_VALUES } from '../src/metrics/influx-line.js';
import { SELECTORS, seriesName, TAG_COLUMNS, VALUE_COLUMNS, type Selector } from '../src/metrics/selectors.js';
import { MetricsStore, METRICS_DB_FILE, type SinkRow } from '../src/metrics/store.js';
import { formatRfc3339Nano, parseRfc3339 } from '../src/metrics/time.js';
import { httpsRequest, ROOT, useTempDirs } from './helpers.js';
import { influxQuery, startInfluxd, type Influxd } from '../testkit/influxd.js';
import { startServerProcess, type ServerProcess } from '../testkit/server-process.js';
import { CLI, runCli, sleep, until, type AnswerJson, type Row } from './support/cli.js';

const INTERVAL_MS = 500;
const DB = 'edgecv';
const APP = { organization: 'acme', name: 'facesvc', version: '2.0.0' };
const PASSWORD = 'alice-secret-1';
const tmpDir = useTempDirs();

interface Instance {
  name: string;
  dir: string;
  flags: string[];
  pod: string;
  cloudlet: string;
  server?: ServerProcess;
  ca?: string;
}

let influx: Influxd;
let sinkUrl: string;
let console_: ServerProcess;
let consoleUrl: string;
let consoleCa: string;
let consoleDir: string;
let tokenEnv: Record<string, string>;
let token: string;
let bobToken: string;

const instances: Instance[] = [
  { name: 'a', dir: '', flags: [], pod: 'pod-a', cloudlet: 'cl-a' },
  { name: 'b', dir: '', flags: [], pod: 'pod-b', cloudlet: 'cl-b' },
  { name: 'c', dir: '', flags: [], pod: 'pod-c', cloudlet: 'cl-c' },
  { name: 'd', dir: '', flags: [], pod: 'pod-d', cloudlet: 'cl-a' }, // another app, same org and cloudlet
];
const ofApp = instances.slice(0, 3);

async function startInstance(inst: Instance): Promise<void> {
  inst.server = await startServerProcess([...inst.flags, '--data-dir', inst.dir, '--no-warm-up']); // nothing here is timed
  inst.ca = fs.readFileSync(path.join(inst.dir, 'tls', 'cert.pem'), 'utf8');
}

/** POST to the console (or an instance: base + ca), JSON in and out. */
async function post(base: string, ca: string, pathname: string, body: unknown, bearer?: string) {
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (bearer) headers['authorization'] = `Bearer ${bearer}`;
  const res = await httpsRequest(new URL(pathname, base).href, { method: 'POST', headers, body: JSON.stringify(body), ca });
  return { status: res.status, json: JSON.parse(res.text) as unknown };
}

async function consoleQuery(extra: Record<string, unknown>, bearer = token): Promise<AnswerJson> {
  const res = await post(consoleUrl, consoleCa, '/api/v1/auth/metrics/app', { region: 'eu', appinst: { app_key: APP }, ...extra }, bearer);
  expect(res.status, JSON.stringify(res.json)).toBe(200);
  return res.json as AnswerJson;
}

/** `edgecv metrics app` against the console, as an operator runs it. */
async function cliQuery(keys: string[]): Promise<AnswerJson> {
  const r = await runCli(
    ['metrics', 'app', '--addr', consoleUrl, 'region=eu', 'app-org=acme', 'appname=facesvc', 'appvers=2.0.0', ...keys],
    tokenEnv,
  );
  expect(r.code, r.stderr).toBe(0);
  return JSON.parse(r.stdout) as AnswerJson;
}

const series = (a: AnswerJson) => a.data[0]!.Series;
const podOf = (row: Row) => row[8] as string;
const timeOf = (row: Row) => parseRfc3339(row[0] as string)!;

/** Every row one instance's SQLite store holds with time <= upTo. */
function storedRows(inst: Instance, upTo: bigint): SinkRow[] {
  const store = MetricsStore.openReadOnly(path.join(inst.dir, METRICS_DB_FILE));
  try {
    return store.rowsInRange(-(2n ** 63n), upTo);
  } finally {
    store.close();
  }
}

/** The same rows as InfluxDB holds them for that instance: "time|tags|values" strings, one per point. */
async function influxRows(inst: Instance, selector: Selector, upTo: bigint): Promise<string[]> {
  const tagValues = INFLUX_TAG_VALUES[selector] ?? [];
  const answer = await influxQuery(
    influx.origin,
    DB,
    `SELECT * FROM "${seriesName(selector)}" WHERE "pod" = '${inst.pod}' AND time <= ${upTo} GROUP BY ${[...TAG_COLUMNS, ...tagValues].map((t) => `"${t}"`).join(', ')}`,
  );
  const out: string[] = [];
  for (const s of answer.results[0]?.series ?? []) {
    for (const v of s.values) {
      const cell = (name: string) => (tagValues.includes(name) ? Number(s.tags![name]) : v[s.columns.indexOf(name)]);
      const tags = TAG_COLUMNS.map((c) => s.tags?.[c] ?? '');
      out.push(`${parseRfc3339(String(v[0]))}|${tags.join(',')}|${VALUE_COLUMNS[selector].map((c) => cell(c.name)).join(',')}`);
    }
  }
  return out.sort();
}

function storedLines(rows: SinkRow[], selector: Selector): string[] {
  return rows
    .filter((r) => r.selector === selector)
    .map((r) => `${r.time}|${TAG_COLUMNS.map((c) => r.tags[c]).join(',')}|${r.values.join(',')}`)
    .sort();
}

/** How far an instance's sink has been acknowledged (ns), from its /server/usage/. */
async function sinkStatus(inst: Instance): Promise<{ backlogSamples: number; errors: number; ackedUpTo: string | null; lagSeconds: number }> {
  const res = await httpsRequest(new URL('/server/usage/', inst.server!.url).href, { ca: inst.ca });
  expect(res.status).toBe(200);
  return (JSON.parse(res.text) as { metrics_sink: { backlogSamples: number; errors: number; ackedUpTo: string | null; lagSeconds: number } })
    .metrics_sink;
}

beforeAll(async () => {
  influx = await startInfluxd(tmpDir('edgecv-influxd-'));
  sinkUrl = `${influx.origin}/${DB}`;
  for (const inst of instances) {
    inst.dir = tmpDir(`edgecv-fleet-${inst.name}-`);
    const app = inst.name === 'd' ? ['--appname', 'othersvc', '--appvers', '1.0.0'] : ['--appname', APP.name, '--appvers', APP.version];
    inst.flags = [
      ...['--workers', '1', '--metrics-interval', `${INTERVAL_MS}ms`, '--metrics-sink', sinkUrl],
      ...['--region', 'eu', '--app-org', APP.organization, ...app, '--cluster', 'k1', '--clusterorg', 'acme'],
      ...['--cloudlet', inst.cloudlet, '--cloudletorg', 'op', '--pod', inst.pod],
    ];
  }
  // instance a answers the contract test's query itself: it needs the user too
  await addUser(instances[0]!.dir, 'alice', PASSWORD, ['acme']);
  consoleDir = tmpDir('edgecv-console-');
  const added = await runCli(['user', 'add', '--data-dir', consoleDir, '--username', 'alice', '--password', PASSWORD, '--org', 'acme']);
  expect(added.code, added.stderr).toBe(0);
  await addUser(consoleDir, 'bob', 'bob-secret-12', ['other']);

  const consoleStart = (async () => {
    const child = spawn(
      process.execPath,
      [
        CLI,
        'console',
        '--port',
        '0',
        '--host',
        '127.0.0.1',
        '--data-dir',
        consoleDir,
        '--region',
        `eu=${sinkUrl}`,
        '--region',
        'us=http://127.0.0.1:9/edgecv',
      ],
      {
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (out += d));
    const exited = new Promise<number | string | null>((r) => child.on('exit', (code, signal) => r(code ?? signal)));
    const url = await until(
      'the console to listen',
      async () => {
        if (child.exitCode !== null) throw new Error(`console exited ${child.exitCode}:\n${out}`);
        return /listening on (https:\/\/\S+)/.exec(out)?.[1];
      },
      30_000,
    );
    console_ = { child, url, output: () => out, exited, stop: (signal = 'SIGTERM') => (child.kill(signal), exited) };
  })();
  // the servers load their models: start them side by side
  await Promise.all([consoleStart, ...instances.map(startInstance)]);
  consoleUrl = console_.url;
  consoleCa = fs.readFileSync(path.join(consoleDir, 'tls', 'cert.pem'), 'utf8');
  tokenEnv = { EDGECV_TOKEN_FILE: path.join(tmpDir('edgecv-fleet-cli-'), 'token.json') };
  const login = await runCli(
    ['login', '--addr', consoleUrl, '--cacert', path.join(consoleDir, 'tls', 'cert.pem'), 'username=alice', `password=${PASSWORD}`],
    tokenEnv,
  );
  expect(login.code, login.stderr).toBe(0);
  token = ((await post(consoleUrl, consoleCa, '/api/v1/login', { username: 'alice', password: PASSWORD })).json as { token: string }).token;
  bobToken = ((await post(consoleUrl, consoleCa, '/api/v1/login', { username: 'bob', password: 'bob-secret-12' })).json as { token: string }).token;
  // every instance has a few samples in InfluxDB
  await until(
    '3 samples of every instance in InfluxDB',
    async () => {
      const cpu = series(await consoleQuery({ selector: 'cpu' }))[0]!.values;
      return ofApp.every((i) => cpu.filter((r) => podOf(r) === i.pod).length >= 3) ? true : undefined;
    },
    30_000,
  );
});

afterAll(async () => {
  await Promise.all([console_?.stop(), ...instances.map((i) => i.server?.stop())]);
  await influx?.stop();
});

describe('fleet console over InfluxDB', () => {
  it('edgecv metrics app through the console: rows of all three instances in every series, none of the other app', async () => {
    const answer = await cliQuery(['selector=cpu,mem,disk,network,connections']);
    const all = series(answer);
    expect(all.map((s) => s.name)).toEqual(SELECTORS.map(seriesName));
    for (const s of all) {
      const selector = s.name.slice('appinst-'.length) as Selector;
      expect(s.columns).toEqual(['time', ...TAG_COLUMNS, ...VALUE_COLUMNS[selector].map((c) => c.name)]);
      expect(new Set(s.values.map(podOf))).toEqual(new Set(ofApp.map((i) => i.pod)));
      for (const row of s.values) {
        expect(row[0]).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{9}Z$/);
        const inst = ofApp.find((i) => i.pod === podOf(row))!;
        expect(row.slice(1, 9)).toEqual([APP.name, APP.version, 'k1', 'acme', inst.cloudlet, 'op', APP.organization, inst.pod]);
        VALUE_COLUMNS[selector].forEach((c, i) => {
          expect(typeof row[9 + i]).toBe('number');
          if (c.type === 'int') expect(Number.isInteger(row[9 + i])).toBe(true);
        });
      }
      // newest first
      const times = s.values.map(timeOf);
      for (let i = 1; i < times.length; i++) expect(times[i - 1]! >= times[i]!).toBe(true);
    }
    // the listening port of each instance is its connections row's port
    const ports = new Map(all[4]!.values.map((r) => [podOf(r), r[9]]));
    for (const inst of ofApp) expect(ports.get(inst.pod)).toBe(Number(new URL(inst.server!.url).port));
  });

  it('last=1: one row per instance (per instance and port for connections)', async () => {
    const before = series(await consoleQuery({ selector: 'cpu' }))[0]!.values;
    const all = series(await cliQuery(['last=1']));
    for (const s of all) {
      expect(s.values, s.name).toHaveLength(3);
      expect(new Set(s.values.map(podOf)).size).toBe(3);
    }
    // the newest of each instance: at least as new as every row it had a moment before
    for (const row of all[0]!.values) {
      for (const r of before.filter((x) => podOf(x) === podOf(row))) expect(timeOf(row) >= timeOf(r)).toBe(true);
    }
    const three = series(await consoleQuery({ selector: 'mem', last: 3 }))[0]!.values;
    expect(three).toHaveLength(9);
  });

  it('starttime/endtime select the rows between them; numsamples buckets them (cpu mean, mem max, network last)', async () => {
    const all = series(await consoleQuery({ selector: 'cpu' }))[0]!.values.filter((r) => podOf(r) === 'pod-b');
    expect(all.length).toBeGreaterThanOrEqual(3);
    const [end, start] = [timeOf(all[0]!), timeOf(all[Math.min(all.length - 1, 6)]!)];
    const window = { starttime: formatRfc3339Nano(start), endtime: formatRfc3339Nano(end) };
    const raw = series(await consoleQuery({ selector: 'cpu,mem,network', ...window }));
    for (const s of raw) for (const r of s.values) expect(timeOf(r) >= start && timeOf(r) <= end).toBe(true);
    expect(raw[0]!.values.filter((r) => podOf(r) === 'pod-b')).toEqual(all.filter((r) => timeOf(r) >= start && timeOf(r) <= end));

    const n = 2;
    const bucketed = series(await consoleQuery({ selector: 'cpu,mem,network', numsamples: n, ...window }));
    const width = (end - start + 1n + BigInt(n) - 1n) / BigInt(n);
    const bucketOf = (t: bigint) => start + ((t - start) / width) * width;
    for (const [i, s] of bucketed.entries()) {
      for (const inst of ofApp) {
        const rows = s.values.filter((r) => podOf(r) === inst.pod);
        expect(rows.length).toBeGreaterThanOrEqual(1);
        expect(rows.length).toBeLessThanOrEqual(n);
        for (const row of rows) {
          const inBucket = raw[i]!.values.filter((r) => podOf(r) === inst.pod && bucketOf(timeOf(r)) === timeOf(row));
          expect(inBucket.length, `${s.name} ${inst.pod}`).toBeGreaterThan(0);
          if (s.name === 'appinst-cpu') expect(row[9]).toBeCloseTo(inBucket.reduce((a, r) => a + (r[9] as number), 0) / inBucket.length, 9);
          if (s.name === 'appinst-mem') expect(row[9]).toBe(Math.max(...inBucket.map((r) => r[9] as number)));
          if (s.name === 'appinst-network') expect(row.slice(9)).toEqual(inBucket[0]!.slice(9)); // newest first: the last value
        }
      }
    }
  });

  it('appinsts[] with a cluster_inst_key narrows to the instances on that cloudlet', async () => {
    const only = series(
      await consoleQuery({
        appinst: undefined,
        appinsts: [{ app_key: APP, cluster_inst_key: { cluster_key: { name: 'k1' }, cloudlet_key: { name: 'cl-b', organization: 'op' } } }],
        last: 1,
      }),
    );
    for (const s of only) expect(s.values.map(podOf)).toEqual(['pod-b']);
    const none = series(await consoleQuery({ appinst: { app_key: APP, cluster_inst_key: { cloudlet_key: { name: 'nowhere' } } }, last: 1 }));
    for (const s of none) expect(s.values).toEqual([]);
  });

  it('401 without a token, 403 for another organization, 400 for an unknown region (listing the known ones)', async () => {
    const body = { region: 'eu', appinst: { app_key: APP } };
    expect((await post(consoleUrl, consoleCa, '/api/v1/auth/metrics/app', body)).status).toBe(401);
    const forbidden = await post(consoleUrl, consoleCa, '/api/v1/auth/metrics/app', body, bobToken);
    expect(forbidden.status).toBe(403);
    expect((forbidden.json as { error: string }).error).toMatch(/bob.*acme/);
    const unknown = await post(consoleUrl, consoleCa, '/api/v1/auth/metrics/app', { ...body, region: 'mars' }, token);
    expect(unknown.status).toBe(400);
    expect((unknown.json as { error: string }).error).toMatch(/unknown region 'mars'.*'eu', 'us'/);
    // a region whose InfluxDB does not answer: 503, not a crash
    const down = await post(consoleUrl, consoleCa, '/api/v1/auth/metrics/app', { ...body, region: 'us' }, token);
    expect(down.status).toBe(503);
    // the CLI says so too
    const cli = await runCli(
      ['metrics', 'app', '--addr', consoleUrl, 'region=eu', 'app-org=acme', 'appname=othersvc', 'appvers=1.0.0', 'last=1'],
      tokenEnv,
    );
    expect(cli.code, cli.stderr).toBe(0);
    expect(series(JSON.parse(cli.stdout) as AnswerJson).every((s) => s.values.every((r) => podOf(r) === 'pod-d'))).toBe(true);
  });

  it("contract: an instance's own answer (SQLite) and the console's (InfluxDB) for one window are the same", async () => {
    const a = instances[0]!;
    const status = await sinkStatus(a);
    const acked = parseRfc3339(status.ackedUpTo!)!;
    const window = { starttime: formatRfc3339Nano(acked - 3_000_000_000n), endtime: formatRfc3339Nano(acked) };
    const login = await post(a.server!.url, a.ca!, '/api/v1/login', { username: 'alice', password: PASSWORD });
    const own = await post(
      a.server!.url,
      a.ca!,
      '/api/v1/auth/metrics/app',
      { region: 'eu', appinst: { app_key: APP }, ...window },
      (login.json as { token: string }).token,
    );
    expect(own.status).toBe(200);
    const fleet = await consoleQuery({ appinst: { app_key: APP, cluster_inst_key: { cloudlet_key: { name: a.cloudlet } } }, ...window });
    const [mine, theirs] = [series(own.json as AnswerJson), series(fleet)];
    expect(theirs.map((s) => s.name)).toEqual(mine.map((s) => s.name));
    mine.forEach((s, i) => {
      const t = theirs[i]!;
      expect(t.columns).toEqual(s.columns);
      expect(s.values.length).toBeGreaterThanOrEqual(4);
      expect(t.values).toHaveLength(s.values.length);
      const types = (rows: Row[]) => s.columns.map((_, j) => [...new Set(rows.map((r) => typeof r[j]))]);
      expect(types(t.values)).toEqual(types(s.values));
      expect(t.values).toEqual(s.values); // and the same rows
    });
  });
});

describe('InfluxDB down, an instance killed meanwhile', () => {
  it('afterwards InfluxDB holds every sample each instance recorded, once, with no gap', async () => {
    const [a, b] = [instances[0]!, instances[1]!];
    await influx.stop();
    const downAt = BigInt(Date.now()) * 1_000_000n;
    await sleep(3 * INTERVAL_MS + 200);
    // the sinks see it: errors, a growing backlog, in /server/usage/ and Prometheus
    const waiting = await until(
      'a backlog on b',
      async () => {
        const s = await sinkStatus(b);
        return s.backlogSamples >= 3 && s.errors > 0 ? s : undefined;
      },
      30_000,
    );
    expect(waiting.lagSeconds).toBeGreaterThan(0);
    const prom = await httpsRequest(new URL('/metrics', b.server!.url).href, { ca: b.ca });
    expect(Number(/^edgecv_metrics_sink_backlog_samples\{[^}]*\} (\d+)/m.exec(prom.text)?.[1])).toBeGreaterThanOrEqual(3);

    // kill -9 one instance while its samples wait, and start it again on the same data
    a.server!.child.kill('SIGKILL');
    await a.server!.exited;
    const beforeKill = storedRows(a, 2n ** 62n).filter((r) => r.selector === 'cpu' && r.time > downAt).length;
    expect(beforeKill).toBeGreaterThanOrEqual(2); // it had recorded samples that InfluxDB never got
    await startInstance(a);
    await sleep(3 * INTERVAL_MS);
    await influx.start();
    const upAt = BigInt(Date.now()) * 1_000_000n;

    // every instance catches up: its sink acknowledged a sample taken after InfluxDB came back
    const acked = new Map<Instance, bigint>();
    await until(
      'every sink to catch up',
      async () => {
        for (const inst of instances) {
          const s = await sinkStatus(inst);
          const t = s.ackedUpTo === null ? 0n : parseRfc3339(s.ackedUpTo)!;
          if (t > upAt) acked.set(inst, t);
        }
        return acked.size === instances.length ? true : undefined;
      },
      60_000,
    );

    for (const inst of instances) {
      const upTo = acked.get(inst)!;
      const stored = storedRows(inst, upTo);
      const cpuTimes = stored.filter((r) => r.selector === 'cpu').map((r) => r.time);
      expect(cpuTimes.filter((t) => t > downAt && t < upAt).length, inst.name).toBeGreaterThanOrEqual(3); // recorded while InfluxDB was down
      for (const selector of SELECTORS) {
        const want = storedLines(stored, selector);
        const got = await influxRows(inst, selector, upTo);
        expect(new Set(got).size, `${inst.name} ${selector}: a point twice`).toBe(got.length);
        expect(got, `${inst.name} ${selector}`).toEqual(want);
      }
    }
  }, 120_000);
});
