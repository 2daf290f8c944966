// The metrics pieces in-process: RFC 3339 times, percentiles, the SQLite store with the real collector on the
// real clock (rows at the interval, retention), query checking, passwords, tokens, the login limiter.
// No engine is needed here; test/metrics-server.test.ts runs the same code in a real server process.

import fs from 'node:fs';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { hashPassword, verifyPassword } from '../src/auth/passwords.js';
import { loadOrCreateJwtKey, TokenError, TokenSigner } from '../src/auth/tokens.js';
import { addUser, readUsers, removeUser, UserDirectory, UserError, usersFile } from '../src/auth/users.js';
import { TokenStore } from '../src/client/token-store.js';
import { MetricsCollector } from '../src/metrics/collector.js';
import type { InstanceIdentity } from '../src/metrics/identity.js';
import { latencyPercentiles, LatencyReservoir, percentile } from '../src/metrics/percentiles.js';
import { answerMetricsApp, parseMetricsAppQuery, QueryError } from '../src/metrics/query.js';
import { MetricsStore, type AppFilter, type MetricsSample } from '../src/metrics/store.js';
import { formatRfc3339Nano, nowNs, parseRfc3339 } from '../src/metrics/time.js';
import { TrafficMeter } from '../src/metrics/traffic.js';
import { generateSelfSigned } from '../src/server/tls.js';
import { ROOT, useTempDirs } from './helpers.js';

const tmpDir = useTempDirs();

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const IDENTITY: InstanceIdentity = {
  region: 'eu',
  appOrg: 'acme',
  appname: 'facesvc',
  appvers: '2.0.0',
  cluster: 'c1',
  clusterorg: 'corg',
  cloudlet: 'cl1',
  cloudletorg: 'clorg',
  pod: 'pod-7',
};
const APP: AppFilter = { region: 'eu', apporg: 'acme', app: 'facesvc', ver: '2.0.0' };

function sample(timeNs: bigint, cpu: number, ports: number[] = [8008]): MetricsSample {
  return {
    time: timeNs,
    cpu,
    mem: 1000 + cpu,
    disk: 2000,
    sendBytes: 10,
    recvBytes: 20,
    connections: ports.map((port) => ({
      port,
      active: 1,
      handled: 2,
      accepts: 3,
      bytesSent: 4,
      bytesRecvd: 5,
      latencyPercentiles: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10],
    })),
  };
}

describe('RFC 3339 times with nanoseconds', () => {
  it('formats with exactly 9 fraction digits and a trailing Z', () => {
    expect(formatRfc3339Nano(1_700_000_000_123_456_789n)).toBe('2023-11-14T22:13:20.123456789Z');
    expect(formatRfc3339Nano(1_700_000_000_000_000_001n)).toBe('2023-11-14T22:13:20.000000001Z');
    expect(formatRfc3339Nano(0n)).toBe('1970-01-01T00:00:00.000000000Z');
  });

  it('parses offsets, short and long fractions, and round-trips', () => {
    expect(parseRfc3339('2023-11-14T22:13:20.123456789Z')).toBe(1_700_000_000_123_456_789n);
    expect(parseRfc3339('2023-11-15T00:13:20.123456789+02:00')).toBe(1_700_000_000_123_456_789n);
    expect(parseRfc3339('2023-11-14T22:13:20Z')).toBe(1_700_000_000_000_000_000n);
    expect(parseRfc3339('2023-11-14T22:13:20.5Z')).toBe(1_700_000_000_500_000_000n);
    expect(parseRfc3339('2023-11-14T22:13:20.1234567891234Z')).toBe(1_700_000_000_123_456_789n);
    const now = nowNs();
    expect(parseRfc3339(formatRfc3339Nano(now))).toBe(now);
  });

  it('refuses what is not an RFC 3339 date-time', () => {
    for (const bad of [
      '',
      'yesterday',
      '2023-11-14',
      '2023-11-14T22:13:20',
      '2023-13-01T00:00:00Z',
      '2023-02-30T00:00:00Z',
      '2023-11-14T25:00:00Z',
      '1700000000',
    ]) {
      expect(parseRfc3339(bad), bad).toBeNull();
    }
  });

  it('nowNs follows the wall clock and has sub-millisecond digits', () => {
    const a = nowNs();
    const wall = BigInt(Date.now()) * 1_000_000n;
    expect(a - wall < 10_000_000n && wall - a < 10_000_000n).toBe(true);
    const distinctSubMs = new Set(Array.from({ length: 50 }, () => nowNs() % 1_000_000n));
    expect(distinctSubMs.size).toBeGreaterThan(1);
  });
});

describe('latency percentiles', () => {
  it('interpolates between ranks; P0 is the minimum and P100 the maximum', () => {
    const values = Array.from({ length: 101 }, (_, i) => 100 - i); // 0..100, shuffled order
    expect(latencyPercentiles(values)).toEqual([0, 25, 50, 75, 90, 95, 99, 99.5, 99.9, 100]);
    expect(percentile([10, 20], 50)).toBe(15);
    expect(latencyPercentiles([])).toEqual(Array(10).fill(0));
  });

  it('keeps a bounded reservoir under load', () => {
    const r = new LatencyReservoir(100);
    for (let i = 0; i < 10_000; i++) r.add(i);
    const kept = r.drain();
    expect(kept).toHaveLength(100);
    expect(Math.max(...kept)).toBeGreaterThan(1000); // a sample of the whole interval, not its start
    expect(r.drain()).toEqual([]);
  });
});

describe('metrics store (SQLite)', () => {
  it('stores samples and answers rows newest first, by window, last and numsamples', () => {
    const store = MetricsStore.open(tmpDir('edgecv-store-'));
    try {
      const id = store.instanceId(IDENTITY);
      expect(store.instanceId(IDENTITY)).toBe(id);
      const t0 = 1_800_000_000_000_000_000n; // beyond 2^53: must survive as bigint
      for (let i = 0; i < 10; i++) store.insert(id, sample(t0 + BigInt(i) * 1_000_000_007n, i + 0.5, [8008, 9000]));

      const cpu = store.rows('cpu', APP);
      expect(cpu.map((r) => r.time)).toEqual(Array.from({ length: 10 }, (_, i) => t0 + BigInt(9 - i) * 1_000_000_007n));
      expect(cpu[0]!.values).toEqual([9.5]);
      expect(cpu[0]!.tags).toEqual({
        app: 'facesvc',
        ver: '2.0.0',
        cluster: 'c1',
        clusterorg: 'corg',
        cloudlet: 'cl1',
        cloudletorg: 'clorg',
        apporg: 'acme',
        pod: 'pod-7',
      });

      // connections: one row per port and time, ports ascending within a time
      const conn = store.rows('connections', APP, { last: 2 });
      expect(conn.map((r) => [r.time, r.values[0]])).toEqual([
        [cpu[0]!.time, 8008],
        [cpu[0]!.time, 9000],
        [cpu[1]!.time, 8008],
        [cpu[1]!.time, 9000],
      ]);
      expect(conn[0]!.values).toEqual([8008, 1, 2, 3, 4, 5, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);

      // inclusive window
      const window = store.rows('mem', APP, { start: cpu[6]!.time, end: cpu[2]!.time });
      expect(window.map((r) => r.time)).toEqual(cpu.slice(2, 7).map((r) => r.time));
      expect(store.rows('mem', APP, { start: cpu[6]!.time, end: cpu[2]!.time, last: 2 }).map((r) => r.time)).toEqual([cpu[2]!.time, cpu[3]!.time]);

      // numsamples: the window cut in 3 slices, the newest time of each
      const spread = store.rows('cpu', APP, { numsamples: 3 });
      expect(spread.map((r) => r.values[0])).toEqual([9.5, 6.5, 3.5]); // slices hold i = 0-3, 4-6, 7-9
      expect(store.rows('cpu', APP, { numsamples: 100 })).toHaveLength(10);
      expect(store.rows('connections', APP, { numsamples: 2 }).map((r) => r.values[0])).toEqual([8008, 9000, 8008, 9000]);

      // bounds past what a 64-bit integer holds (year 2262) are clamped, not an error
      expect(store.rows('cpu', APP, { start: parseRfc3339('2999-01-01T00:00:00Z')! })).toEqual([]);
      expect(store.rows('cpu', APP, { start: parseRfc3339('1000-01-01T00:00:00Z')!, end: parseRfc3339('2999-01-01T00:00:00Z')! })).toHaveLength(10);

      // another app's filter sees nothing
      expect(store.rows('cpu', { ...APP, ver: '1.0.0' })).toEqual([]);

      // retention
      expect(store.prune(cpu[4]!.time)).toBe(5 * 4 + 5 * 2); // 5 times x (cpu, mem, disk, network) + 5 x 2 ports
      expect(store.rows('cpu', APP).map((r) => r.time)).toEqual(cpu.slice(0, 5).map((r) => r.time));
      expect(store.oldest()).toBe(cpu[4]!.time);
    } finally {
      store.close();
    }
  });

  it('keeps its rows across a reopen', () => {
    const dir = tmpDir('edgecv-store-');
    let store = MetricsStore.open(dir);
    store.insert(store.instanceId(IDENTITY), sample(nowNs(), 12.5));
    store.close();
    store = MetricsStore.open(dir);
    try {
      expect(store.rows('cpu', APP).map((r) => r.values)).toEqual([[12.5]]);
    } finally {
      store.close();
    }
  });
});

describe('query runner (worker thread)', () => {
  it('answers on a worker thread exactly as on the calling thread, while samples are written', async () => {
    // The compiled runner (dist/) has its worker file beside it; run from TS sources it runs inline.
    const { MetricsQueryRunner: CompiledRunner } = (await import(
      path.join(ROOT, 'dist/src/metrics/query-runner.js')
    )) as typeof import('../src/metrics/query-runner.js');
    const { MetricsStore: CompiledStore } = (await import(path.join(ROOT, 'dist/src/metrics/store.js'))) as typeof import('../src/metrics/store.js');
    const store = CompiledStore.open(tmpDir('edgecv-runner-'));
    const id = store.instanceId(IDENTITY);
    const t0 = nowNs() - 10_000n * 1_000_000_000n;
    for (let i = 0; i < 2000; i++) store.insert(id, sample(t0 + BigInt(i) * 1_000_000_000n, i, [8008, 8009]));
    const threaded = new CompiledRunner(store, IDENTITY);
    const inline = new CompiledRunner(store, IDENTITY, { threaded: false });
    try {
      expect(threaded.threaded).toBe(true);
      expect(inline.threaded).toBe(false);
      const ok = { region: 'eu', appinst: { app_key: { organization: 'acme', name: 'facesvc', version: '2.0.0' } } };
      for (const extra of [{}, { last: 3 }, { numsamples: 7, selector: 'connections' }, { region: 'elsewhere' }]) {
        const q = parseMetricsAppQuery({ ...ok, ...extra });
        const [a, b] = await Promise.all([threaded.answer(q), inline.answer(q)]);
        expect(a).toBe(b);
      }
      const all = JSON.parse(await threaded.answer(parseMetricsAppQuery(ok))) as { data: { Series: { values: unknown[] }[] }[] };
      expect(all.data[0]!.Series.map((x) => x.values.length)).toEqual([2000, 2000, 2000, 2000, 4000]);
      // a sample written after the worker opened the store is seen by the next query
      store.insert(id, sample(nowNs(), 4242));
      const newest = JSON.parse(await threaded.answer(parseMetricsAppQuery({ ...ok, selector: 'cpu', last: 1 }))) as {
        data: { Series: { values: unknown[][] }[] }[];
      };
      expect(newest.data[0]!.Series[0]!.values[0]![9]).toBe(4242);
    } finally {
      await threaded.close();
      store.close();
    }
  });
});

describe('collector on the real clock, against a real HTTPS socket', () => {
  it('writes a row per interval with real byte counts, and retention drops old rows', async () => {
    const dataDir = tmpDir('edgecv-collect-');
    fs.writeFileSync(path.join(dataDir, 'ballast.bin'), Buffer.alloc(300_000));
    const store = MetricsStore.open(dataDir);
    const traffic = new TrafficMeter();
    const { cert, key } = await generateSelfSigned();
    const server = https.createServer({ cert, key }, (req, res) => {
      req.resume();
      req.on('end', () => res.end('x'.repeat(50_000)));
    });
    traffic.attach(server);
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const port = (server.address() as AddressInfo).port;
    const collector = new MetricsCollector({ store, identity: IDENTITY, traffic, dataDir, intervalMs: 100, retentionMs: 600 });
    try {
      collector.start();
      const body = Buffer.alloc(100_000, 1);
      await new Promise<void>((resolve, reject) => {
        const req = https.request({ port, host: '127.0.0.1', method: 'POST', ca: cert, servername: 'localhost', agent: false }, (res) => {
          res.resume();
          res.on('end', resolve);
        });
        req.on('error', reject);
        req.end(body);
      });
      await sleep(1500);
      const cpu = store.rows('cpu', APP);
      const times = cpu.map((r) => Number(r.time / 1_000_000n));
      // 100 ms interval, 600 ms retention: about 6 rows held, never the ones from the start
      expect(cpu.length).toBeGreaterThanOrEqual(3);
      expect(cpu.length).toBeLessThanOrEqual(8);
      const nowMs = Date.now();
      expect(nowMs - times[times.length - 1]!).toBeLessThan(600 + 400);
      const network = store.rows('network', APP, { last: 1 })[0]!.values;
      expect(network[0]).toBeGreaterThan(50_000); // sendBytes: the 50 kB answer, TLS on top
      expect(network[1]).toBeGreaterThan(100_000); // recvBytes: the 100 kB body
      const conn = store.rows('connections', APP, { last: 1 })[0]!.values;
      expect(conn.slice(0, 4)).toEqual([port, 0, 1, 1]); // port, active, handled, accepts
      expect(conn[4]).toBe(network[0]);
      expect(conn[5]).toBe(network[1]);
      const disk = store.rows('disk', APP, { last: 1 })[0]!.values[0]!;
      expect(disk).toBeGreaterThan(300_000);
      const mem = store.rows('mem', APP, { last: 1 })[0]!.values[0]!;
      expect(mem).toBe(Math.round(mem));
      expect(mem).toBeGreaterThan(10_000_000);
      // the request's latency shows in exactly one interval's percentiles
      const withLatency = store.rows('connections', APP, {}).filter((r) => r.values[15]! > 0);
      expect(withLatency.length).toBeLessThanOrEqual(1);
    } finally {
      await collector.stop();
      store.close();
      await new Promise((r) => server.close(r));
    }
  });
});

describe('query bodies', () => {
  const ok = { region: 'eu', appinst: { app_key: { organization: 'acme', name: 'facesvc', version: '2.0.0' } } };

  it('reads selectors, window, last and numsamples', () => {
    expect(parseMetricsAppQuery(ok).selectors).toEqual(['cpu', 'mem', 'disk', 'network', 'connections']);
    const q = parseMetricsAppQuery({
      ...ok,
      selector: 'network, cpu,cpu',
      last: 3,
      numsamples: 5,
      starttime: '2026-01-01T00:00:00Z',
      endtime: '2026-01-02T00:00:00.5+00:00',
    });
    expect(q.selectors).toEqual(['network', 'cpu']);
    expect(q.window).toEqual({ start: 1_767_225_600_000_000_000n, end: 1_767_312_000_500_000_000n, last: 3, numsamples: 5 });
  });

  it('refuses bad bodies with a clear message', () => {
    const cases: [unknown, RegExp][] = [
      [[], /JSON object/],
      [{ ...ok, region: undefined }, /region/],
      [{ region: 'eu' }, /app_key/],
      [{ ...ok, appinst: { app_key: { organization: 'acme', name: 'x' } } }, /version/],
      [{ ...ok, selector: 'cpu,gpu' }, /unknown selector 'gpu'/],
      [{ ...ok, selector: 5 }, /selector/],
      [{ ...ok, last: 0 }, /last must be a positive integer/],
      [{ ...ok, last: 1.5 }, /last/],
      [{ ...ok, last: '1' }, /last/],
      [{ ...ok, numsamples: -2 }, /numsamples/],
      [{ ...ok, starttime: 'yesterday' }, /starttime must be an RFC 3339/],
      [{ ...ok, endtime: '2026-02-30T00:00:00Z' }, /endtime/],
      [{ ...ok, starttime: '2026-01-02T00:00:00Z', endtime: '2026-01-01T00:00:00Z' }, /after/],
    ];
    for (const [body, re] of cases) {
      expect(() => parseMetricsAppQuery(body), JSON.stringify(body)).toThrow(QueryError);
      expect(() => parseMetricsAppQuery(body)).toThrow(re);
    }
  });

  it('answers another app with an empty result, not its own rows', () => {
    const store = MetricsStore.open(tmpDir('edgecv-store-'));
    try {
      store.insert(store.instanceId(IDENTITY), sample(nowNs(), 1));
      const mine = answerMetricsApp(store, IDENTITY, parseMetricsAppQuery({ ...ok, selector: 'cpu' }));
      expect(mine.data[0]!.Series[0]!.values).toHaveLength(1);
      for (const other of [
        { ...ok, region: 'us' },
        { ...ok, appinst: { app_key: { organization: 'evil', name: 'facesvc', version: '2.0.0' } } },
        { ...ok, appinst: { app_key: { organization: 'acme', name: 'facesvc', version: '9.9.9' } } },
      ]) {
        expect(answerMetricsApp(store, IDENTITY, parseMetricsAppQuery(other))).toEqual({ data: [{ Series: [] }] });
      }
    } finally {
      store.close();
    }
  });
});

describe('users, passwords, tokens, login limiter', () => {
  it('hashes passwords with scrypt and a salt', async () => {
    const a = await hashPassword('correct horse');
    const b = await hashPassword('correct horse');
    expect(a).toMatch(/^scrypt\$16384\$8\$1\$/);
    expect(a).not.toBe(b);
    expect(await verifyPassword('correct horse', a)).toBe(true);
    expect(await verifyPassword('correct horsE', a)).toBe(false);
    expect(await verifyPassword('x', 'garbage')).toBe(false);
  });

  it('adds, lists and removes users in a 0600 file the server rereads', async () => {
    const dir = tmpDir('edgecv-users-');
    const directory = new UserDirectory(dir);
    expect(directory.get('alice')).toBeUndefined();
    await addUser(dir, 'alice', 'password1', ['acme', 'beta', 'acme']);
    expect(fs.statSync(usersFile(dir)).mode & 0o777).toBe(0o600);
    expect(readUsers(dir).map((u) => [u.username, u.orgs])).toEqual([['alice', ['acme', 'beta']]]);
    expect(directory.get('alice')?.orgs).toEqual(['acme', 'beta']);
    await expect(addUser(dir, 'alice', 'password1', ['acme'])).rejects.toThrow(/already exists/);
    await expect(addUser(dir, 'bob', 'short', ['acme'])).rejects.toThrow(UserError);
    await expect(addUser(dir, 'bo b', 'password1', ['acme'])).rejects.toThrow(/invalid username/);
    await expect(addUser(dir, 'bob', 'password1', [])).rejects.toThrow(/--org/);
    removeUser(dir, 'alice');
    expect(directory.get('alice')).toBeUndefined();
    expect(() => removeUser(dir, 'alice')).toThrow(/no user/);
  });

  it('signs tokens with a 0600 key from the data folder and tells expired from invalid', async () => {
    const dir = tmpDir('edgecv-key-');
    const key = loadOrCreateJwtKey(dir);
    expect(fs.statSync(path.join(dir, 'auth', 'jwt.key')).mode & 0o777).toBe(0o600);
    expect(Buffer.from(loadOrCreateJwtKey(dir)).equals(Buffer.from(key))).toBe(true);
    const signer = new TokenSigner(key, 60_000);
    const { token, exp } = await signer.sign('alice');
    expect(await signer.verify(token)).toEqual({ username: 'alice', exp });
    const old = await signer.sign('alice', Date.now() - 120_000);
    await expect(signer.verify(old.token)).rejects.toMatchObject({ reason: 'expired' });
    const other = new TokenSigner(loadOrCreateJwtKey(tmpDir('edgecv-key-')));
    await expect(other.verify(token)).rejects.toMatchObject({ reason: 'invalid' });
    await expect(signer.verify('not.a.jwt')).rejects.toThrow(TokenError);
  });

  it('saves client tokens in a 0600 file keyed by address', () => {
    const file = path.join(tmpDir('edgecv-tokens-'), 'sub', 'token.json');
    const store = new TokenStore(file);
    expect(store.get('https://a:8008')).toBeUndefined();
    store.save('https://a:8008', { token: 't1', username: 'alice', expires: '2030-01-01T00:00:00.000Z' });
    store.save('https://b:8008', { token: 't2', username: 'bob', expires: '2030-01-01T00:00:00.000Z', insecure: true });
    expect(fs.statSync(file).mode & 0o777).toBe(0o600);
    expect(new TokenStore(file).get('https://a:8008')?.token).toBe('t1');
    expect(store.remove('https://a:8008')).toBe(true);
    expect(store.get('https://a:8008')).toBeUndefined();
    expect(store.get('https://b:8008')?.insecure).toBe(true);
  });
});
