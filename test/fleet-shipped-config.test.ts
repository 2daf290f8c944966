// deploy/haproxy.cfg as shipped, in front of three servers started as docs/fleet.md and deploy/compose.yaml start
// them but without --allowed-hosts (issue 48, item 8: its checks say `Host: edgecv`, which such a server answered
// 421, so every backend went down). Only what cannot be used on loopback is changed: the bind addresses, the
// servers' addresses and the certificate's path; every check line is the shipped one. Every server must come up in
// both backends and answer through both frontends; a name the server does not know still gets 421 on the other
// routes (the health routes answer any Host, nothing else does).

import fs from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fleetPort, PASSTHROUGH_BACKEND, startRedis, terminationPem, TERMINATION_BACKEND, type RedisServer } from '../testkit/fleet.js';
import { startServerProcess, type ServerProcess } from '../testkit/server-process.js';
import { spawn, type ChildProcess } from 'node:child_process';
import { httpsRequest, ROOT } from './helpers.js';

const NAMES = ['edgecv1', 'edgecv2', 'edgecv3'];
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'edgecv-shipped-haproxy-'));
const agent = new https.Agent({ rejectUnauthorized: false });
let redis: RedisServer;
const servers: ServerProcess[] = [];
let haproxy: ChildProcess;
let haproxyOut = '';
const ports = { passthrough: 0, termination: 0, stats: 0 };
let changed: string[] = [];

/** The shipped file with loopback addresses: returns the text and the lines it changed. */
function shippedOnLoopback(members: { https: number; http: number }[], pem: string): { text: string; changed: string[] } {
  const shipped = fs.readFileSync(path.join(ROOT, 'deploy', 'haproxy.cfg'), 'utf8').split('\n');
  const out = shipped.map((line) =>
    line
      .replace(/^(\s*bind) :8008$/, `$1 127.0.0.1:${ports.passthrough}`)
      .replace(/^(\s*bind) :8443 ssl crt \/etc\/haproxy\/certs\/edgecv\.pem$/, `$1 127.0.0.1:${ports.termination} ssl crt ${pem}`)
      .replace(/^(\s*bind) :8404$/, `$1 127.0.0.1:${ports.stats}`)
      .replace(/^(\s*server edgecv(\d)) edgecv\d:(8008|8080)$/, (_m, head: string, n: string, port: string) => {
        const member = members[Number(n) - 1]!;
        return `${head} 127.0.0.1:${port === '8008' ? member.https : member.http}`;
      }),
  );
  return { text: out.join('\n'), changed: shipped.filter((line, i) => line !== out[i]) };
}

interface StatRow {
  backend: string;
  server: string;
  status: string;
  check: string;
}

/** haproxy's stats page (the shipped `frontend stats`) as CSV rows. */
function stats(): Promise<StatRow[]> {
  return new Promise((resolve, reject) => {
    http
      .get(`http://127.0.0.1:${ports.stats}/stats;csv`, (res) => {
        let text = '';
        res.on('data', (d) => (text += d));
        res.on('end', () => {
          const [header, ...rows] = text.trim().split('\n');
          const names = header!.replace(/^# /, '').split(',');
          const at = (f: string[], name: string) => f[names.indexOf(name)] ?? '';
          resolve(
            rows
              .map((r) => r.split(','))
              .map((f) => ({ backend: at(f, 'pxname'), server: at(f, 'svname'), status: at(f, 'status'), check: at(f, 'check_status') })),
          );
        });
      })
      .on('error', reject);
  });
}

const members = () => stats().then((rows) => rows.filter((r) => NAMES.includes(r.server)));

beforeAll(async () => {
  redis = await startRedis(tmp);
  const memberPorts = [];
  for (let i = 0; i < 3; i++) memberPorts.push({ https: await fleetPort(), http: await fleetPort() });
  for (const k of ['passthrough', 'termination', 'stats'] as const) ports[k] = await fleetPort();
  // As docs/fleet.md and compose.yaml start them (--workers 1 here: 2 cores), and no --allowed-hosts.
  servers.push(
    ...(await Promise.all(
      memberPorts.map((p, i) =>
        startServerProcess([
          '--port',
          String(p.https),
          '--http-port',
          String(p.http),
          '--http-routes',
          'all',
          '--drain-delay',
          '3s',
          '--workers',
          '1',
          '--pod',
          NAMES[i]!,
          '--gallery',
          redis.url,
          '--data-dir',
          path.join(tmp, NAMES[i]!),
        ]),
      ),
    )),
  );
  const cfg = shippedOnLoopback(memberPorts, await terminationPem(tmp));
  changed = cfg.changed;
  fs.writeFileSync(path.join(tmp, 'haproxy.cfg'), cfg.text);
  haproxy = spawn('haproxy', ['-db', '-f', path.join(tmp, 'haproxy.cfg')], { stdio: ['ignore', 'pipe', 'pipe'] });
  haproxy.stdout!.on('data', (d) => (haproxyOut += d));
  haproxy.stderr!.on('data', (d) => (haproxyOut += d));
}, 180_000);

afterAll(async () => {
  agent.destroy();
  haproxy?.kill('SIGKILL');
  await Promise.all(servers.map((s) => s.stop('SIGKILL')));
  await redis?.stop();
  fs.rmSync(tmp, { recursive: true, force: true });
});

describe('deploy/haproxy.cfg as shipped', () => {
  it('is changed here in its addresses only', () => {
    expect(changed).toHaveLength(3 + 6); // three binds, six servers
    expect(changed.every((line) => /^\s*(bind|server) /.test(line))).toBe(true);
  });

  it('finds every server up, in both backends, by its own checks', async () => {
    // Servers start UP in haproxy; `fall 2` checks 1 s apart take one down: wait for every check to have answered
    // twice (rise 2 after the first), then they must all still pass.
    let rows: StatRow[] = [];
    for (let i = 0; i < 150; i++) {
      rows = await members().catch(() => []);
      if (rows.length === 6 && rows.every((r) => r.check === 'L7OK')) break;
      await new Promise((r) => setTimeout(r, 200));
    }
    await new Promise((r) => setTimeout(r, 3000));
    rows = await members();
    expect(rows.map((r) => `${r.backend}/${r.server} ${r.status} ${r.check}`).sort(), haproxyOut).toEqual(
      [PASSTHROUGH_BACKEND, TERMINATION_BACKEND].flatMap((b) => NAMES.map((n) => `${b}/${n} UP L7OK`)).sort(),
    );
  }, 60_000);

  it('answers through both frontends; other routes still refuse a name the servers do not know', async () => {
    for (const port of [ports.passthrough, ports.termination]) {
      const ok = await httpsRequest(`https://127.0.0.1:${port}/test/`, { agent });
      expect(ok.status, `:${port}`).toBe(200);
      const foreign = await httpsRequest(`https://127.0.0.1:${port}/test/`, { agent, headers: { host: 'rebind.example' } });
      expect(foreign.status).toBe(421);
      const health = await httpsRequest(`https://127.0.0.1:${port}/health/ready`, { agent, headers: { host: 'rebind.example' } });
      expect(health.status).toBe(200);
    }
  });
});
