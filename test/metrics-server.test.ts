// Application metrics end to end: a real `edgecv serve` process (real engine, real SQLite store, real clock
// with a 200 ms interval) spoken to over HTTPS; login, 401/403, the metrics query's exact format, the audit
// trail, Prometheus /metrics and a real Prometheus scraping it, and the `edgecv` CLI client.

import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import https from 'node:https';
import path from 'node:path';
import { SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { httpsRequest, photo, ROOT, useTempDirs, type HttpsResult } from './helpers.js';
import { freePort } from '../testkit/server-process.js';
import { CLI, runCli, until, type AnswerJson, type Row } from './support/cli.js';

const INTERVAL_MS = 200;
const IDENTITY = {
  region: 'eu-test',
  'app-org': 'acme',
  appname: 'facesvc',
  appvers: '2.0.0',
  cluster: 'c1',
  clusterorg: 'corg',
  cloudlet: 'cl1',
  cloudletorg: 'clorg',
  pod: 'pod-7',
};
/** The tag columns of every row, in column order: app, ver, cluster, clusterorg, cloudlet, cloudletorg, apporg, pod. */
const TAGS = ['facesvc', '2.0.0', 'c1', 'corg', 'cl1', 'clorg', 'acme', 'pod-7'];
const TAG_COLUMNS = ['time', 'app', 'ver', 'cluster', 'clusterorg', 'cloudlet', 'cloudletorg', 'apporg', 'pod'];
const COLUMNS: Record<string, string[]> = {
  cpu: [...TAG_COLUMNS, 'cpu'],
  mem: [...TAG_COLUMNS, 'mem'],
  disk: [...TAG_COLUMNS, 'disk'],
  network: [...TAG_COLUMNS, 'sendBytes', 'recvBytes'],
  connections: [
    ...TAG_COLUMNS,
    ...['port', 'active', 'handled', 'accepts', 'bytesSent', 'bytesRecvd'],
    ...['P0', 'P25', 'P50', 'P75', 'P90', 'P95', 'P99', 'P99.5', 'P99.9', 'P100'],
  ],
};
const TIME_RE = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{9}Z$/;
const PASSWORDS = { alice: 'alice-secret-1', bob: 'bob-secret-12', carol: 'carol-secret-123', erin: 'erin-secret-1234' };
const APP_KEY = { organization: 'acme', name: 'facesvc', version: '2.0.0' };

const tmpDir = useTempDirs();

function stopChild(child: ChildProcess | undefined, timeoutMs = 10_000): Promise<void> {
  if (!child || child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.once('exit', () => {
      clearTimeout(timer);
      resolve();
    });
    child.kill('SIGTERM');
  });
}

let dataDir: string;
let server: ChildProcess | undefined;
let serverLog = '';
let base: string; // https://127.0.0.1:PORT
let port: number;
let ca: string;
const tokens: Record<string, string> = {};

function request(
  pathname: string,
  opts: { method?: string; token?: string; body?: unknown; raw?: string; headers?: Record<string, string> } = {},
): Promise<HttpsResult> {
  const headers: Record<string, string> = { ...opts.headers };
  if (opts.token) headers['authorization'] = `Bearer ${opts.token}`;
  let body: string | undefined = opts.raw;
  if (opts.body !== undefined) {
    body = JSON.stringify(opts.body);
    headers['content-type'] ??= 'application/json';
  }
  return httpsRequest(`${base}${pathname}`, { method: opts.method ?? (body === undefined ? 'GET' : 'POST'), headers, body, ca });
}

async function query(body: Record<string, unknown>, token = tokens['alice']!): Promise<AnswerJson> {
  const res = await request('/api/v1/auth/metrics/app', { token, body: { region: IDENTITY.region, appinst: { app_key: APP_KEY }, ...body } });
  expect(res.status, res.text).toBe(200);
  return JSON.parse(res.text) as AnswerJson;
}

const series = (a: AnswerJson) => a.data[0]!.Series;
const timeNs = (row: Row) => {
  const t = row[0] as string;
  return BigInt(Date.parse(t.slice(0, 19) + 'Z')) * 1_000_000n + BigInt(t.slice(20, 29));
};

beforeAll(async () => {
  dataDir = tmpDir('edgecv-metrics-');
  for (const [user, org] of [
    ['alice', 'acme'],
    ['bob', 'other'],
    ['carol', 'acme'],
    ['erin', 'acme'],
  ] as const) {
    const r = await runCli(['user', 'add', '--data-dir', dataDir, '--username', user, '--password', PASSWORDS[user], '--org', org]);
    expect(r.code, r.stderr).toBe(0);
  }
  const identityFlags = Object.entries(IDENTITY).flatMap(([k, v]) => [`--${k}`, v]);
  server = spawn(
    process.execPath,
    [
      CLI,
      'serve',
      '--port',
      '0',
      '--host',
      '127.0.0.1',
      '--data-dir',
      dataDir,
      '--workers',
      '1',
      '--metrics-interval',
      `${INTERVAL_MS}ms`,
      ...identityFlags,
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  server.stdout!.on('data', (d) => (serverLog += d));
  server.stderr!.on('data', (d) => (serverLog += d));
  const exited = new Promise<never>((_, reject) => server!.once('exit', (code) => reject(new Error(`server exited ${code}:\n${serverLog}`))));
  base = await Promise.race([
    exited,
    until('the server to listen', async () => /listening on (https:\/\/[\d.]+:\d+)\//.exec(serverLog)?.[1], 120_000),
  ]);
  exited.catch(() => undefined);
  port = Number(new URL(base).port);
  ca = fs.readFileSync(path.join(dataDir, 'tls', 'cert.pem'), 'utf8');
  for (const user of ['alice', 'bob', 'carol'] as const) {
    const res = await request('/api/v1/login', { body: { username: user, password: PASSWORDS[user] } });
    expect(res.status, res.text).toBe(200);
    tokens[user] = (JSON.parse(res.text) as { token: string }).token;
  }
});

afterAll(async () => {
  await stopChild(server);
});

describe('user management (edgecv user)', () => {
  it('lists, refuses duplicates and bad input, removes; the users file is 0600', async () => {
    const list = await runCli(['user', 'list', '--data-dir', dataDir]);
    expect(list.code).toBe(0);
    expect(list.stdout.trim().split('\n')).toEqual(['alice\tacme', 'bob\tother', 'carol\tacme', 'erin\tacme']);
    expect(fs.statSync(path.join(dataDir, 'auth', 'users.json')).mode & 0o777).toBe(0o600);
    const dup = await runCli(['user', 'add', '--data-dir', dataDir, '--username', 'alice', '--password', 'whatever-1', '--org', 'acme']);
    expect(dup.code).toBe(1);
    expect(dup.stderr).toMatch(/already exists/);
    const noOrg = await runCli(['user', 'add', '--data-dir', dataDir, '--username', 'dave', '--password', 'whatever-1']);
    expect(noOrg.code).toBe(1);
    expect(noOrg.stderr).toMatch(/--org/);
    const noName = await runCli(['user', 'add', '--data-dir', dataDir, '--password', 'whatever-1', '--org', 'x']);
    expect(noName.code).toBe(2);
    expect(noName.stderr).toMatch(/--username is required/);
    expect((await runCli(['user', 'remove', '--data-dir', dataDir, '--username', 'nobody'])).code).toBe(1);
  });
});

describe('login', () => {
  it('answers {"token"} with a JWT that expires in 24 h', () => {
    const [header, payload, signature] = tokens['alice']!.split('.');
    expect(signature).toBeTruthy();
    expect(JSON.parse(Buffer.from(header!, 'base64url').toString())).toMatchObject({ alg: 'HS256' });
    const claims = JSON.parse(Buffer.from(payload!, 'base64url').toString()) as { sub: string; exp: number; iat: number };
    expect(claims.sub).toBe('alice');
    expect(claims.exp - claims.iat).toBe(24 * 3600);
  });

  it('401 for a wrong password or user, 400 for a malformed body, 415 for a form', async () => {
    for (const body of [
      { username: 'alice', password: 'wrong-password' },
      { username: 'nobody', password: 'x' },
    ]) {
      const res = await request('/api/v1/login', { body });
      expect(res.status).toBe(401);
      expect(JSON.parse(res.text)).toEqual({ success: 'false', error: 'wrong username or password' });
    }
    expect((await request('/api/v1/login', { body: { username: 'alice' } })).status).toBe(400);
    expect((await request('/api/v1/login', { raw: '{"username":', headers: { 'content-type': 'application/json' } })).status).toBe(400);
    expect((await request('/api/v1/login', { raw: 'username=alice', headers: { 'content-type': 'application/x-www-form-urlencoded' } })).status).toBe(
      415,
    );
    expect((await request('/api/v1/login')).status).toBe(405);
  });

  it('rate-limits failed logins: 429 with Retry-After after 5 failures, even with the right password', async () => {
    for (let i = 0; i < 5; i++) {
      expect((await request('/api/v1/login', { body: { username: 'carol', password: `guess-${i}` } })).status).toBe(401);
    }
    const blocked = await request('/api/v1/login', { body: { username: 'carol', password: PASSWORDS.carol } });
    expect(blocked.status).toBe(429);
    expect(Number(blocked.headers['retry-after'])).toBeGreaterThan(0);
    expect(JSON.parse(blocked.text).error).toMatch(/too many failed logins/);
    // other users from the same address are not locked out
    expect((await request('/api/v1/login', { body: { username: 'alice', password: PASSWORDS.alice } })).status).toBe(200);
  });

  it('counts a try before checking it: of 200 tries sent at once, 5 are checked and the right one among them gets 429', async () => {
    const tries = Array.from({ length: 200 }, (_, i) => (i === 100 ? PASSWORDS.erin : `erin-guess-${i}`));
    const answers = await Promise.all(tries.map((password) => request('/api/v1/login', { body: { username: 'erin', password } })));
    const statuses = answers.map((a) => a.status);
    expect(statuses.filter((s) => s === 401).length).toBe(5);
    expect(statuses.filter((s) => s === 429).length).toBe(195);
    expect(statuses[100]).toBe(429);
    expect(answers[100]!.text).not.toMatch(/token/);
  });

  it('refuses an over-long username or password with 400 before counting or hashing it', async () => {
    const long = await request('/api/v1/login', { body: { username: 'u'.repeat(8 * 1024 * 1024), password: 'x' } });
    expect(long.status).toBe(400);
    expect(JSON.parse(long.text).error).toMatch(/username too long: at most 64 characters/);
    const longPassword = await request('/api/v1/login', { body: { username: 'alice', password: 'p'.repeat(1025) } });
    expect(longPassword.status).toBe(400);
    expect(JSON.parse(longPassword.text).error).toMatch(/password too long/);
  });
});

describe('POST /api/v1/auth/metrics/app', () => {
  it('rows appear at the interval, newest first', async () => {
    const cpu = await until('10 cpu rows', async () => {
      const rows = series(await query({ selector: 'cpu' }))[0]!.values;
      return rows.length >= 10 ? rows : undefined;
    });
    const times = cpu.map(timeNs);
    for (let i = 1; i < times.length; i++) expect(times[i - 1]! > times[i]!).toBe(true);
    const gaps = times
      .slice(1)
      .map((t, i) => Number(times[i]! - t) / 1e6)
      .sort((a, b) => a - b);
    const median = gaps[Math.floor(gaps.length / 2)]!;
    expect(median).toBeGreaterThan(INTERVAL_MS * 0.5);
    expect(median).toBeLessThan(INTERVAL_MS * 5);
    // and more keep coming
    const before = cpu.length;
    await until('more cpu rows', async () => (series(await query({ selector: 'cpu' }))[0]!.values.length >= before + 3 ? true : undefined));
  });

  it('answers every series with the exact columns, tag strings and value types', async () => {
    const answer = await query({});
    expect(Object.keys(answer)).toEqual(['data']);
    expect(answer.data).toHaveLength(1);
    expect(Object.keys(answer.data[0]!)).toEqual(['Series']);
    const all = series(answer);
    expect(all.map((s) => s.name)).toEqual(['appinst-cpu', 'appinst-mem', 'appinst-disk', 'appinst-network', 'appinst-connections']);
    for (const s of all) {
      const selector = s.name.slice('appinst-'.length);
      expect(Object.keys(s)).toEqual(['name', 'columns', 'values']);
      expect(s.columns).toEqual(COLUMNS[selector]);
      expect(s.values.length).toBeGreaterThan(0);
      for (const row of s.values) {
        expect(row).toHaveLength(s.columns.length);
        expect(row[0]).toMatch(TIME_RE);
        expect(row.slice(1, 9)).toEqual(TAGS);
        for (const v of row.slice(9)) expect(typeof v).toBe('number');
      }
    }
    const [cpu, mem, disk, network, connections] = all.map((s) => s.values[0]!);
    expect(cpu![9]).toBeGreaterThanOrEqual(0);
    expect(Number.isInteger(mem![9])).toBe(true);
    expect(mem![9]).toBeGreaterThan(20_000_000); // RSS of a process with OpenCV loaded
    expect(Number.isInteger(disk![9])).toBe(true);
    expect(disk![9]).toBeGreaterThan(fs.statSync(path.join(dataDir, 'tls', 'cert.pem')).size);
    expect(network!.slice(9).every(Number.isInteger)).toBe(true);
    expect(connections![9]).toBe(port);
    expect(connections!.slice(9, 15).every(Number.isInteger)).toBe(true);
    const percentiles = connections!.slice(15) as number[];
    expect(percentiles).toHaveLength(10);
    for (let i = 1; i < percentiles.length; i++) expect(percentiles[i]).toBeGreaterThanOrEqual(percentiles[i - 1]!);
  });

  it('last=1 gives exactly the newest row of each selector; last=3 the three newest', async () => {
    const newestBefore = timeNs(series(await query({ selector: 'cpu' }))[0]!.values[0]!);
    const one = series(await query({ selector: 'cpu,mem,disk,network,connections', last: 1 }));
    expect(one.map((s) => s.values.length)).toEqual([1, 1, 1, 1, 1]);
    const t = timeNs(one[0]!.values[0]!);
    expect(t >= newestBefore).toBe(true);
    for (const s of one) expect(timeNs(s.values[0]!)).toBe(t); // one sample: the same time in every series
    const three = series(await query({ selector: 'mem', last: 3 }))[0]!.values.map(timeNs);
    expect(three).toHaveLength(3);
    expect(three[0]! > three[1]! && three[1]! > three[2]!).toBe(true);
  });

  it('one Series per selector, in the order asked', async () => {
    const s = series(await query({ selector: 'network,cpu', last: 1 }));
    expect(s.map((x) => x.name)).toEqual(['appinst-network', 'appinst-cpu']);
  });

  it('starttime/endtime select the rows between them (inclusive, any offset); numsamples spreads them', async () => {
    const all = series(await query({ selector: 'cpu' }))[0]!.values;
    expect(all.length).toBeGreaterThanOrEqual(10);
    const [newer, older] = [all[2]!, all[8]!];
    const window = series(await query({ selector: 'cpu', starttime: older[0], endtime: newer[0] }))[0]!.values;
    expect(window).toEqual(all.slice(2, 9));
    // the same instant written with a +02:00 offset
    const shifted = (row: Row) => {
      const t = row[0] as string;
      const d = new Date(Date.parse(t.slice(0, 19) + 'Z') + 2 * 3600_000).toISOString().slice(0, 19);
      return `${d}.${t.slice(20, 29)}+02:00`;
    };
    expect(series(await query({ selector: 'cpu', starttime: shifted(older), endtime: shifted(newer) }))[0]!.values).toEqual(window);

    const spread = series(await query({ selector: 'cpu', starttime: older[0], endtime: newer[0], numsamples: 3 }))[0]!.values;
    expect(spread.length).toBeGreaterThanOrEqual(2);
    expect(spread.length).toBeLessThanOrEqual(3);
    const lo = timeNs(older);
    const span = timeNs(newer) - lo + 1n;
    const slices = spread.map((r) => ((timeNs(r) - lo) * 3n) / span);
    expect(new Set(slices).size).toBe(spread.length); // at most one row per third of the window
    for (const r of spread) expect(window).toContainEqual(r);
    // a window in the future holds nothing yet
    const future = await query({ selector: 'cpu', starttime: '2999-01-01T00:00:00Z' });
    expect(future).toEqual({ data: [{ Series: [{ name: 'appinst-cpu', columns: COLUMNS['cpu'], values: [] }] }] });
  });

  it('counts real socket traffic: bytes, accepted and handled connections, request latency', async () => {
    const before = series(await query({ selector: 'network,connections', last: 1 })).map((s) => s.values[0]!);
    const t0 = timeNs(before[0]!);
    const img = photo('dlib/faces/2008_002470.jpg');
    const agent = new https.Agent({ keepAlive: false }); // a fresh connection for each request
    for (let i = 0; i < 3; i++) {
      const res = await httpsRequest(`${base}/detector/detect/`, { method: 'POST', headers: { 'content-type': 'image/jpeg' }, body: img, ca, agent });
      expect(res.status).toBe(200);
    }
    agent.destroy();
    const doneAt = BigInt(Date.now()) * 1_000_000n;
    const after = await until('a sample after the uploads', async () => {
      const s = series(await query({ selector: 'network,connections', last: 1 })).map((x) => x.values[0]!);
      return timeNs(s[0]!) > doneAt + BigInt(INTERVAL_MS) * 1_000_000n ? s : undefined;
    });
    expect(timeNs(after[0]!) > t0).toBe(true);
    const [netBefore, connBefore] = before as [Row, Row];
    const [netAfter, connAfter] = after as [Row, Row];
    expect((netAfter[10] as number) - (netBefore[10] as number)).toBeGreaterThanOrEqual(3 * img.length); // recvBytes
    expect((netAfter[9] as number) - (netBefore[9] as number)).toBeGreaterThan(3 * 1000); // sendBytes: TLS handshakes + answers
    expect((connAfter[12] as number) - (connBefore[12] as number)).toBeGreaterThanOrEqual(3); // accepts
    expect((connAfter[11] as number) - (connBefore[11] as number)).toBeGreaterThanOrEqual(3); // handled
    expect(connAfter[13]).toBe(netAfter[9]); // one listening port: its bytes are all the bytes
    expect(connAfter[14]).toBe(netAfter[10]);
    // the detections' latencies: some interval after t0 has a P100 of at least a few ms
    const rows = series(await query({ selector: 'connections', starttime: before[1]![0] }))[0]!.values;
    expect(Math.max(...rows.map((r) => r[24] as number))).toBeGreaterThan(2);
  });

  it('another app, version or region gets an empty result', async () => {
    for (const body of [
      { region: 'us-test' },
      { appinst: { app_key: { ...APP_KEY, version: '1.0.0' } } },
      { appinst: { app_key: { ...APP_KEY, name: 'other' } } },
    ]) {
      expect(await query(body)).toEqual({ data: [{ Series: [] }] });
    }
  });

  it('400 for bad bodies, with a clear error', async () => {
    const cases: [Record<string, unknown>, RegExp][] = [
      [{ selector: 'gpu' }, /unknown selector 'gpu'/],
      [{ starttime: '21/11/2026' }, /starttime must be an RFC 3339/],
      [{ endtime: '2026-11-21T25:00:00Z' }, /endtime/],
      [{ last: 0 }, /last must be a positive integer/],
      [{ last: 'one' }, /last/],
      [{ numsamples: 2.5 }, /numsamples/],
      [{ region: '' }, /region/],
      [{ appinst: {} }, /app_key/],
    ];
    for (const [extra, re] of cases) {
      const res = await request('/api/v1/auth/metrics/app', {
        token: tokens['alice'],
        body: { region: IDENTITY.region, appinst: { app_key: APP_KEY }, ...extra },
      });
      expect(res.status, JSON.stringify(extra)).toBe(400);
      const body = JSON.parse(res.text) as { success: string; error: string };
      expect(body.success).toBe('false');
      expect(body.error).toMatch(re);
    }
    const notJson = await request('/api/v1/auth/metrics/app', {
      token: tokens['alice'],
      raw: 'region=x',
      headers: { 'content-type': 'application/json' },
    });
    expect(notJson.status).toBe(400);
  });

  it('401 without a valid token, 403 for a user of another organization', async () => {
    const body = { region: IDENTITY.region, appinst: { app_key: APP_KEY } };
    const noToken = await request('/api/v1/auth/metrics/app', { body });
    expect(noToken.status).toBe(401);
    expect(noToken.headers['www-authenticate']).toMatch(/^Bearer/);
    expect((await request('/api/v1/auth/metrics/app', { body, token: 'garbage' })).status).toBe(401);
    expect(
      (await request('/api/v1/auth/metrics/app', { body, headers: { authorization: `Basic ${Buffer.from('alice:x').toString('base64')}` } })).status,
    ).toBe(401);

    // expired: a token signed with this server's own key, but past its expiry
    const key = Buffer.from(fs.readFileSync(path.join(dataDir, 'auth', 'jwt.key'), 'utf8').trim(), 'base64url');
    const now = Math.floor(Date.now() / 1000);
    const expired = await new SignJWT({})
      .setProtectedHeader({ alg: 'HS256' })
      .setSubject('alice')
      .setIssuer('edgecv')
      .setIssuedAt(now - 7200)
      .setExpirationTime(now - 3600)
      .sign(key);
    const res = await request('/api/v1/auth/metrics/app', { body, token: expired });
    expect(res.status).toBe(401);
    expect(JSON.parse(res.text).error).toMatch(/expired/);
    // forged: right claims, another key
    const forged = await new SignJWT({})
      .setProtectedHeader({ alg: 'HS256' })
      .setSubject('alice')
      .setIssuer('edgecv')
      .setExpirationTime(now + 3600)
      .sign(Buffer.alloc(32, 7));
    expect((await request('/api/v1/auth/metrics/app', { body, token: forged })).status).toBe(401);

    const forbidden = await request('/api/v1/auth/metrics/app', { body, token: tokens['bob'] });
    expect(forbidden.status).toBe(403);
    expect(JSON.parse(forbidden.text).error).toMatch(/bob.*acme/);
  });

  it('a removed user loses access at once', async () => {
    const body = { region: IDENTITY.region, appinst: { app_key: APP_KEY }, selector: 'cpu', last: 1 };
    expect((await request('/api/v1/auth/metrics/app', { body, token: tokens['carol'] })).status).toBe(200);
    expect((await runCli(['user', 'remove', '--data-dir', dataDir, '--username', 'carol'])).code).toBe(0);
    const res = await request('/api/v1/auth/metrics/app', { body, token: tokens['carol'] });
    expect(res.status).toBe(401);
    expect(JSON.parse(res.text).error).toMatch(/carol/);
  });
});

describe('audit trail', () => {
  it('gives every response a tracid and finds its entry: route, status, duration, client, user', async () => {
    const asAlice = await request('/api/v1/auth/metrics/app', {
      token: tokens['alice'],
      body: { region: IDENTITY.region, appinst: { app_key: APP_KEY }, selector: 'cpu', last: 1 },
    });
    const anonymous = await request('/test/');
    const missing = await request('/no/such/path');
    const tracids = [asAlice, anonymous, missing].map((r) => r.headers['tracid'] as string);
    for (const id of tracids) expect(id).toMatch(/^[0-9a-f]{32}$/);
    expect(new Set(tracids).size).toBe(3);

    const lookup = async (id: string) => {
      const res = await request(`/api/v1/auth/audit?tracid=${id}`, { token: tokens['alice'] });
      expect(res.status).toBe(200);
      const body = JSON.parse(res.text) as { success: string; entries: Record<string, unknown>[] };
      expect(body.success).toBe('true');
      expect(body.entries).toHaveLength(1);
      return body.entries[0]!;
    };
    const e1 = await lookup(tracids[0]!);
    expect(e1).toMatchObject({
      tracid: tracids[0],
      method: 'POST',
      route: '/api/v1/auth/metrics/app',
      path: '/api/v1/auth/metrics/app',
      status: 200,
      client: '127.0.0.1',
      user: 'alice',
    });
    expect(e1['durationMs']).toBeGreaterThan(0);
    expect(Date.parse(e1['time'] as string)).toBeGreaterThan(Date.now() - 60_000);
    expect(await lookup(tracids[1]!)).toMatchObject({ route: '/test', path: '/test/', status: 200, user: null });
    expect(await lookup(tracids[2]!)).toMatchObject({ route: 'unmatched', status: 404 });

    // newest first; the three lookups above were logged after our three requests
    const recent = JSON.parse((await request('/api/v1/auth/audit?limit=6', { token: tokens['alice'] })).text) as { entries: { tracid: string }[] };
    expect(recent.entries).toHaveLength(6);
    expect(recent.entries.slice(3).map((e) => e.tracid)).toEqual([tracids[2], tracids[1], tracids[0]]);
    expect(recent.entries.slice(0, 3).map((e) => e.tracid)).not.toContain(tracids[0]);

    // the file is JSON lines
    const lines = fs
      .readFileSync(path.join(dataDir, 'audit', 'audit.log'), 'utf8')
      .trim()
      .split('\n');
    for (const line of lines) expect(() => JSON.parse(line)).not.toThrow();
    expect(lines.some((l) => l.includes(tracids[0]!))).toBe(true);
  });

  it('401 without login, 403 for another organization, 400 for a bad filter', async () => {
    expect((await request('/api/v1/auth/audit')).status).toBe(401);
    expect((await request('/api/v1/auth/audit', { token: tokens['bob'] })).status).toBe(403);
    expect((await request('/api/v1/auth/audit?tracid=%27%20or%201', { token: tokens['alice'] })).status).toBe(400);
    expect((await request('/api/v1/auth/audit?limit=0', { token: tokens['alice'] })).status).toBe(400);
    const unknown = await request(`/api/v1/auth/audit?tracid=${'0'.repeat(32)}`, { token: tokens['alice'] });
    expect(JSON.parse(unknown.text)).toEqual({ success: 'true', entries: [] });
  });
});

describe('Prometheus', () => {
  it('GET /metrics: process metrics, per-route requests, per-stage inference, engine queue, gallery size', async () => {
    const img = photo('dlib/faces/2008_002470.jpg');
    expect(
      (await httpsRequest(`${base}/detector/detect/`, { method: 'POST', headers: { 'content-type': 'image/jpeg' }, body: img, ca })).status,
    ).toBe(200);
    // One enrolment (loopback needs no admin key) so the gallery gauges have something to count.
    const enrol = await httpsRequest(`${base}/trainer/add/?subject=astronaut`, {
      method: 'POST',
      headers: { 'content-type': 'image/png' },
      body: photo('skimage/astronaut.png'),
      ca,
    });
    expect(enrol.status, enrol.text).toBe(200);
    const predict = await httpsRequest(`${base}/recognizer/predict/`, {
      method: 'POST',
      headers: { 'content-type': 'image/png' },
      body: photo('skimage/astronaut.png'),
      ca,
    });
    expect(JSON.parse(predict.text)).toMatchObject({ success: 'true', subject: 'astronaut' });
    // The stage series are labelled with the device the server runs on, as its capabilities report it.
    const { backend } = JSON.parse((await request('/server/capabilities/')).text) as { backend: string };
    expect(['cpu', 'cuda']).toContain(backend);
    const res = await request('/metrics');
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toMatch(/^text\/plain; version=0\.0\.4/);
    const value = (series: string) => {
      const line = res.text.split('\n').find((l) => l.startsWith(`${series} `));
      return line === undefined ? undefined : Number(line.slice(series.length + 1));
    };
    expect(value('edgecv_http_requests_total{method="POST",route="/detector/detect",status="200"}')).toBeGreaterThanOrEqual(1);
    expect(value('edgecv_http_request_duration_seconds_count{method="POST",route="/detector/detect",status="200"}')).toBeGreaterThanOrEqual(1);
    for (const stage of ['queue', 'decode', 'preprocess', 'inference', 'postprocess']) {
      expect(
        value(`edgecv_inference_stage_seconds_count{model="facemesh-detection-full",backend="${backend}",stage="${stage}"}`),
        stage,
      ).toBeGreaterThanOrEqual(1);
    }
    expect(value(`edgecv_inference_stage_seconds_sum{model="facemesh-detection-full",backend="${backend}",stage="inference"}`)).toBeGreaterThan(0);
    expect(value('edgecv_engine_queue_depth')).toBe(0);
    expect(value('edgecv_engine_jobs_completed_total')).toBeGreaterThanOrEqual(1);
    expect(value('edgecv_engine_jobs_rejected_total')).toBe(0);
    // Exported (test/idle-cores.test.ts checks which runs are lent; the scene routes of other tests here may be).
    expect(value('edgecv_engine_lent_runs_total')).toEqual(expect.any(Number));
    // Recognition reports its own stages under the embedding model's name.
    for (const stage of ['detect', 'embedInference', 'search']) {
      expect(value(`edgecv_inference_stage_seconds_count{model="faceres",backend="${backend}",stage="${stage}"}`), stage).toBeGreaterThanOrEqual(1);
    }
    expect(value('edgecv_gallery_samples')).toBe(1);
    expect(value('edgecv_gallery_subjects')).toBe(1);
    expect(value('edgecv_gallery_updating')).toBe(0);
    expect(value('process_resident_memory_bytes')).toBeGreaterThan(20_000_000);
    expect(res.text).toMatch(/^nodejs_eventloop_lag_seconds /m);
  });

  it('a real Prometheus scrapes the server and finds its series', { timeout: 120_000 }, async () => {
    const bin = ['/usr/bin/prometheus', '/usr/local/bin/prometheus'].find((p) => fs.existsSync(p));
    expect(bin, 'prometheus is missing: `node scripts/setup/setup.mjs --test` installs it').toBeDefined();
    const dir = tmpDir('edgecv-prometheus-');
    const webPort = await freePort();
    fs.writeFileSync(
      path.join(dir, 'prometheus.yml'),
      [
        'global:',
        '  scrape_interval: 1s',
        'scrape_configs:',
        '  - job_name: edgecv',
        '    scheme: https',
        '    tls_config:',
        '      insecure_skip_verify: true',
        '    static_configs:',
        `      - targets: ['127.0.0.1:${port}']`,
        '        labels:',
        '          region: eu-test',
        '',
      ].join('\n'),
    );
    let log = '';
    const prom = spawn(
      bin!,
      [
        `--config.file=${path.join(dir, 'prometheus.yml')}`,
        `--storage.tsdb.path=${path.join(dir, 'data')}`,
        `--web.listen-address=127.0.0.1:${webPort}`,
      ],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    prom.stdout!.on('data', (d) => (log += d));
    prom.stderr!.on('data', (d) => (log += d));
    try {
      const promQuery = async (q: string) => {
        const res = await fetch(`http://127.0.0.1:${webPort}/api/v1/query?query=${encodeURIComponent(q)}`).catch(() => undefined);
        if (!res?.ok) return undefined;
        const body = (await res.json()) as { status: string; data: { result: { metric: Record<string, string>; value: [number, string] }[] } };
        return body.data.result.length > 0 ? body.data.result : undefined;
      };
      const requests = await until(
        `prometheus to scrape edgecv (log:\n${log.slice(-2000)})`,
        () => promQuery('edgecv_http_requests_total{route="/detector/detect"}'),
        90_000,
        500,
      );
      expect(requests[0]!.metric).toMatchObject({ job: 'edgecv', instance: `127.0.0.1:${port}`, region: 'eu-test', method: 'POST', status: '200' });
      expect(Number(requests[0]!.value[1])).toBeGreaterThanOrEqual(1);
      const up = await promQuery('up{job="edgecv"}');
      expect(up?.[0]!.value[1]).toBe('1');
      const stages = await promQuery('edgecv_inference_stage_seconds_count{model="facemesh-detection-full"}');
      expect(new Set(stages?.map((s) => s.metric['stage']))).toEqual(new Set(['queue', 'decode', 'preprocess', 'inference', 'postprocess']));
    } finally {
      await stopChild(prom);
    }
  });
});

describe('edgecv login / metrics app (the CLI client, end to end)', () => {
  const appArgs = () => ['--addr', base, '--output-format', 'json', 'region=eu-test', 'app-org=acme', 'appname=facesvc', 'appvers=2.0.0'];

  it('says when not logged in, and when the certificate is not trusted', async () => {
    const env = { EDGECV_TOKEN_FILE: path.join(tmpDir('edgecv-cli-'), 'token.json') };
    const notLoggedIn = await runCli(['metrics', 'app', ...appArgs()], env);
    expect(notLoggedIn.code).toBe(1);
    expect(notLoggedIn.stderr).toMatch(/not logged in to https:\/\/127\.0\.0\.1:\d+: run +edgecv login/);
    const untrusted = await runCli(['login', '--addr', base, 'username=alice', `password=${PASSWORDS.alice}`], env);
    expect(untrusted.code).toBe(1);
    expect(untrusted.stderr).toMatch(/not trusted.*--cacert FILE.*--insecure/s);
    const wrong = await runCli(
      ['login', '--addr', base, '--cacert', path.join(dataDir, 'tls', 'cert.pem'), 'username=alice', 'password=wrong-one'],
      env,
    );
    expect(wrong.code).toBe(1);
    expect(wrong.stderr).toMatch(/401.*wrong username or password/);
    expect(fs.existsSync(env.EDGECV_TOKEN_FILE)).toBe(false);
  });

  it('logs in with --cacert, saves the token 0600, and queries with it', async () => {
    const env = { EDGECV_TOKEN_FILE: path.join(tmpDir('edgecv-cli-'), 'token.json') };
    const login = await runCli(
      ['login', '--addr', `${base}/`, '--cacert', path.join(dataDir, 'tls', 'cert.pem'), 'username=alice', `password=${PASSWORDS.alice}`],
      env,
    );
    expect(login.code, login.stderr).toBe(0);
    expect(login.stdout).toMatch(/logged in to https:\/\/127\.0\.0\.1:\d+ as alice/);
    expect(fs.statSync(env.EDGECV_TOKEN_FILE).mode & 0o777).toBe(0o600);
    const saved = JSON.parse(fs.readFileSync(env.EDGECV_TOKEN_FILE, 'utf8')) as { servers: Record<string, { token: string; username: string }> };
    expect(saved.servers[base]!.username).toBe('alice');

    const one = await runCli(['metrics', 'app', ...appArgs(), 'selector=cpu', 'last=1'], env);
    expect(one.code, one.stderr).toBe(0);
    const answer = JSON.parse(one.stdout) as AnswerJson;
    expect(series(answer)).toHaveLength(1);
    expect(series(answer)[0]!.name).toBe('appinst-cpu');
    expect(series(answer)[0]!.columns).toEqual(COLUMNS['cpu']);
    expect(series(answer)[0]!.values).toHaveLength(1);
    expect(series(answer)[0]!.values[0]!.slice(0, 9)).toEqual([expect.stringMatching(TIME_RE), ...TAGS]);

    const two = await runCli(['metrics', 'app', ...appArgs(), 'selector=mem,connections', 'last=2'], env);
    expect(two.code, two.stderr).toBe(0);
    expect(series(JSON.parse(two.stdout) as AnswerJson).map((s) => [s.name, s.values.length])).toEqual([
      ['appinst-mem', 2],
      ['appinst-connections', 2],
    ]);
    const rows = series(JSON.parse(two.stdout) as AnswerJson)[0]!.values;
    const window = await runCli(['metrics', 'app', ...appArgs(), 'selector=mem', `starttime=${rows[1]![0]}`, `endtime=${rows[0]![0]}`], env);
    expect(series(JSON.parse(window.stdout) as AnswerJson)[0]!.values).toEqual(rows);

    const bad = await runCli(['metrics', 'app', ...appArgs(), 'last=many'], env);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/last must be a positive integer/);
    const badKey = await runCli(['metrics', 'app', ...appArgs(), 'colour=blue'], env);
    expect(badKey.code).toBe(2);
    expect(badKey.stderr).toMatch(/unknown key 'colour'/);
    const serverSays400 = await runCli(['metrics', 'app', ...appArgs(), 'selector=gpu'], env);
    expect(serverSays400.code).toBe(1);
    expect(serverSays400.stderr).toMatch(/400.*unknown selector 'gpu'/);
  });

  it('--insecure logs in without the certificate; 403 for another organization is explained', async () => {
    const env = { EDGECV_TOKEN_FILE: path.join(tmpDir('edgecv-cli-'), 'token.json') };
    const login = await runCli(['login', '--addr', base, '--insecure', 'username=bob', `password=${PASSWORDS.bob}`], env);
    expect(login.code, login.stderr).toBe(0);
    // the password can come on stdin instead of the command line
    const again = await runCli(['login', '--addr', base, '--insecure', 'username=bob'], env, `${PASSWORDS.bob}\n`);
    expect(again.code, again.stderr).toBe(0);
    const noPassword = await runCli(['login', '--addr', base, '--insecure', 'username=bob'], env, '');
    expect(noPassword.code).toBe(2);
    expect(noPassword.stderr).toMatch(/password=\.\.\. is required/);
    const forbidden = await runCli(['metrics', 'app', ...appArgs()], env);
    expect(forbidden.code).toBe(1);
    expect(forbidden.stderr).toMatch(/forbidden: .*403.*user 'bob' may not read data of organization 'acme'/);
  });

  it('says when the token expired (locally known, or refused by the server) and when the server is unreachable', async () => {
    const file = path.join(tmpDir('edgecv-cli-'), 'token.json');
    const env = { EDGECV_TOKEN_FILE: file };
    const closedPort = await freePort();
    const deadAddr = `https://127.0.0.1:${closedPort}`;
    const key = Buffer.from(fs.readFileSync(path.join(dataDir, 'auth', 'jwt.key'), 'utf8').trim(), 'base64url');
    const now = Math.floor(Date.now() / 1000);
    const expiredJwt = await new SignJWT({})
      .setProtectedHeader({ alg: 'HS256' })
      .setSubject('alice')
      .setIssuer('edgecv')
      .setExpirationTime(now - 60)
      .sign(key);
    const future = new Date(Date.now() + 3600_000).toISOString();
    fs.writeFileSync(
      file,
      JSON.stringify({
        servers: {
          [base]: { token: 'x', username: 'alice', expires: new Date(Date.now() - 60_000).toISOString(), insecure: true },
          [deadAddr]: { token: tokens['alice'], username: 'alice', expires: future, insecure: true },
        },
      }),
      { mode: 0o600 },
    );
    const expired = await runCli(['metrics', 'app', ...appArgs()], env);
    expect(expired.code).toBe(1);
    expect(expired.stderr).toMatch(/login to https:\/\/127\.0\.0\.1:\d+ expired at .*edgecv login/);

    // the file says valid, the server says expired
    fs.writeFileSync(file, JSON.stringify({ servers: { [base]: { token: expiredJwt, username: 'alice', expires: future, insecure: true } } }), {
      mode: 0o600,
    });
    const refused = await runCli(['metrics', 'app', ...appArgs()], env);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/401: the token has expired.*\n.*edgecv login/);

    fs.writeFileSync(
      file,
      JSON.stringify({ servers: { [deadAddr]: { token: tokens['alice'], username: 'alice', expires: future, insecure: true } } }),
      { mode: 0o600 },
    );
    const unreachable = await runCli(
      ['metrics', 'app', '--addr', deadAddr, 'region=eu-test', 'app-org=acme', 'appname=facesvc', 'appvers=2.0.0'],
      env,
    );
    expect(unreachable.code).toBe(1);
    expect(unreachable.stderr).toMatch(/cannot reach https:\/\/127\.0\.0\.1:\d+ \(ECONNREFUSED\)/);

    const logout = await runCli(['logout', '--addr', deadAddr], env);
    expect(logout.stdout).toMatch(/logged out/);
    expect(JSON.parse(fs.readFileSync(file, 'utf8'))).toEqual({ servers: {} });
  });
});
