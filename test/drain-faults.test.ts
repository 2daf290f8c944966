// The drain against what a fleet meets, with real processes: an `edgecv serve`
// holding a TCP connection that never starts TLS and a metrics sink whose InfluxDB trickles its answer, and an
// `edgecv console` with a request waiting on a trickling region. SIGTERM: each exits 0 within --drain-timeout
// plus a second, and the server's last metrics sample is in its store for the next start to send.

import { spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { addUser } from '../src/auth/users.js';
import { METRICS_DB_FILE, MetricsStore } from '../src/metrics/store.js';
import { nowNs } from '../src/metrics/time.js';
import { httpsRequest, useTempDirs } from './helpers.js';
import { emptyQueryAnswer, startFakeInflux, trickle, type FakeInflux } from './support/fake-influx.js';
import { influxQuery, startInfluxd } from '../testkit/influxd.js';
import { eventually, REPO_ROOT, startServerProcess } from '../testkit/server-process.js';

const tmpDir = useTempDirs();
const CLI = path.join(REPO_ROOT, 'dist/src/cli.js');
const fakes: FakeInflux[] = [];
afterAll(async () => {
  await Promise.all(fakes.map((f) => f.close()));
});

/** SIGTERM, then the ms until the exit and its code; SIGKILL (code 'SIGKILL') when it is not gone in `limitMs`. */
async function terminate(child: import('node:child_process').ChildProcess, exited: Promise<number | string | null>, limitMs: number) {
  const started = Date.now();
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), limitMs);
  const code = await exited;
  clearTimeout(timer);
  return { code, ms: Date.now() - started };
}

describe('the drain ends within --drain-timeout + 1 s', () => {
  it('serve: a handshaking connection and a trickling sink are closed at the drain timeout; exit 0', async () => {
    // every /write answered 200 and then a byte every 200 ms (for 60 s at most)
    const influx = await startFakeInflux((req, res) => (req.url?.startsWith('/write') ? trickle(res, 200, 300) : emptyQueryAnswer(res)));
    fakes.push(influx);
    const dataDir = tmpDir('edgecv-drain-');
    const server = await startServerProcess([
      '--data-dir',
      dataDir,
      '--workers',
      '1',
      '--drain-timeout',
      '2s',
      '--handshake-timeout',
      '20s',
      '--metrics-sink',
      `${influx.origin}/edgecv`,
      '--metrics-interval',
      '1s',
      '--no-warm-up', // no inference here
    ]);
    expect(await eventually(async () => (influx.requests.get('/write') ?? 0) > 0, 20_000)).toBe(true);
    const port = Number(new URL(server.url).port);
    const silent = net.connect(port, '127.0.0.1');
    silent.on('error', () => {});
    await new Promise((r) => silent.once('connect', r));
    const signalledAt = nowNs();
    const { code, ms } = await terminate(server.child, server.exited, 15_000);
    silent.destroy();
    console.log(`serve drain with a handshaking connection and a trickling sink, --drain-timeout 2s: exit ${code} after ${ms} ms`);
    expect(code).toBe(0);
    expect(ms).toBeLessThanOrEqual(3000);
    expect(server.output()).toMatch(/SIGTERM, draining[\s\S]*edgecv: stopped/);
    // the drain's last sample is stored, to be sent (or found sent) at the next start
    const store = MetricsStore.openReadOnly(path.join(dataDir, METRICS_DB_FILE));
    expect(store.sampleTimesAfter(signalledAt, 10).length).toBeGreaterThan(0);
    store.close();
  });

  it("serve with a healthy InfluxDB: the drain's last sample reaches InfluxDB before the exit", async () => {
    const influx = await startInfluxd(tmpDir('edgecv-drain-influxd-'));
    try {
      const server = await startServerProcess([
        '--data-dir',
        tmpDir('edgecv-drain-ok-'),
        '--workers',
        '1',
        '--drain-timeout',
        '5s',
        '--metrics-sink',
        `${influx.origin}/edgecv`,
        '--metrics-interval',
        '1h',
        '--no-warm-up', // no inference here
      ]);
      // its signal handlers are in place once it has printed its models (the line after "listening on")
      expect(await eventually(async () => /edgecv: models:/.test(server.output()), 10_000)).toBe(true);
      const signalledAt = nowNs();
      const { code, ms } = await terminate(server.child, server.exited, 15_000);
      console.log(`serve drain with a healthy InfluxDB, --drain-timeout 5s: exit ${code} after ${ms} ms`);
      expect(code, server.output()).toBe(0);
      // the only sample is the drain's (the periodic one is an hour away)
      const cpu = await influxQuery(influx.origin, 'edgecv', 'SELECT "cpu" FROM "appinst-cpu"');
      const times = (cpu.results[0]!.series?.[0]?.values ?? []).map((v) => String(v[0]));
      expect(times).toHaveLength(1);
      expect(BigInt(Date.parse(times[0]!)) * 1_000_000n).toBeGreaterThanOrEqual((signalledAt / 1_000_000n - 1000n) * 1_000_000n);
    } finally {
      await influx.stop();
    }
  });

  it('console: a request waiting on a trickling region is ended at the drain timeout; exit 0', async () => {
    const region = await startFakeInflux((_req, res) => trickle(res, 200, 300));
    fakes.push(region);
    const dir = tmpDir('edgecv-console-drain-');
    await addUser(dir, 'alice', 'alice-secret-12', ['acme']);
    const child = spawn(
      process.execPath,
      [CLI, 'console', '--port', '0', '--host', '127.0.0.1', '--data-dir', dir, '--region', `eu=${region.origin}/edgecv`, '--drain-timeout', '1s'],
      {
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (out += d));
    const exited = new Promise<number | string | null>((r) => child.on('exit', (c, s) => r(c ?? s)));
    expect(await eventually(async () => /listening on https:\/\/\S+/.test(out) || child.exitCode !== null, 20_000)).toBe(true);
    const url = /listening on (https:\/\/\S+)/.exec(out)?.[1];
    expect(url, out).toBeDefined();
    const ca = fs.readFileSync(path.join(dir, 'tls', 'cert.pem'), 'utf8');
    const login = await httpsRequest(new URL('/api/v1/login', url).href, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ username: 'alice', password: 'alice-secret-12' }),
      ca,
    });
    const token = (JSON.parse(login.text) as { token: string }).token;
    const waiting = httpsRequest(new URL('/api/v1/auth/metrics/app', url).href, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
      body: JSON.stringify({ region: 'eu', appinst: { app_key: { organization: 'acme', name: 'svc', version: '1' } }, selector: 'cpu', last: 1 }),
      ca,
    }).catch((e: Error) => e);
    expect(await eventually(async () => (region.requests.get('/query') ?? 0) > 0, 10_000)).toBe(true);
    const { code, ms } = await terminate(child, exited, 15_000);
    await waiting;
    console.log(`console drain with a request on a trickling region, --drain-timeout 1s: exit ${code} after ${ms} ms`);
    expect(code).toBe(0);
    expect(ms).toBeLessThanOrEqual(2000);
    expect(out).toMatch(/edgecv console: stopped/);
  });
});
