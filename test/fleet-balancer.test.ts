// Three real `edgecv serve` processes sharing one real redis-server gallery, behind Debian's haproxy on loopback:
// TLS passthrough (mode tcp, each server its own self-signed certificate) and TLS termination (haproxy holds the
// certificate, plain HTTP to each server's loopback --http-port listener with --http-routes all), health checks
// on /health/ready.
// Rolling restarts with SIGTERM lose no request; a SIGKILL loses at most the requests in flight on that server;
// enrolments travel to every server within 2 s; a SIGTERM during a burst of enrolments loses no acknowledged sample.
// The servers start in parallel once and are reused (restarted in place) by every test.

import { X509Certificate } from 'node:crypto';
import fs from 'node:fs';
import https from 'node:https';
import os from 'node:os';
import path from 'node:path';
import type { TLSSocket } from 'node:tls';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MetricsStore, METRICS_DB_FILE } from '../src/metrics/store.js';
import { loadJohns, type LabelledPhoto } from '../testkit/face-verification.js';
import {
  fleetLayout,
  haproxyConfig,
  PASSTHROUGH_BACKEND,
  startHaproxy,
  startMembers,
  startRedis,
  steadyLoad,
  TERMINATION_BACKEND,
  type BalancerLayout,
  type FleetMember,
  type Haproxy,
  type LoadResult,
  type RedisServer,
} from '../testkit/fleet.js';
import { eventually, type ServerProcess } from '../testkit/server-process.js';
import { DATA_DIR, httpsRequest } from './helpers.js';

const KEY = 'fleet-balancer-admin-key';
const NAMES = ['s0', 's1', 's2'];
const CHECK_INTER_MS = 200;
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'edgecv-balancer-'));
const agent = new https.Agent({ rejectUnauthorized: false, keepAlive: true });
let redis: RedisServer;
let layout: BalancerLayout;
let haproxy: Haproxy;
const servers: ServerProcess[] = [];
const johns = new Map<string, LabelledPhoto[]>();
let face: Buffer;

const argsOf = (m: FleetMember) => [
  '--data-dir',
  path.join(tmp, m.name),
  '--workers',
  '1',
  '--gallery',
  redis.url,
  '--admin-key',
  KEY,
  // the plain listener (127.0.0.1 only) serves every route: haproxy terminates TLS in front of it
  '--http-routes',
  'all',
  // readiness fails 1 s before the listener closes: 5 health checks of haproxy
  '--drain-delay',
  '1s',
  '--drain-timeout',
  '10s',
  // no periodic sample during the test: the one in metrics.db after a stop is the drain's last sample
  '--metrics-interval',
  '1h',
  // not warmed: 9 starts, none timing a first request (a cold one is slower, not failed, which is what is tested)
  '--no-warm-up',
];

async function restart(i: number): Promise<void> {
  servers[i] = (await startMembers([layout.members[i]!], argsOf))[0]!;
  await haproxy.allUp(NAMES);
}

const passthrough = (p: string) => `https://127.0.0.1:${layout.passthroughPort}${p}`;
const termination = (p: string) => `https://127.0.0.1:${layout.terminationPort}${p}`;
const direct = (i: number, p: string) => `${servers[i]!.url}${p.slice(1)}`;

beforeAll(async () => {
  for (const p of loadJohns(DATA_DIR)) johns.set(p.subject, [...(johns.get(p.subject) ?? []), p]);
  face = [...johns.values()][0]![0]!.bytes; // a 150x150 face, 9 KB: the cheapest route on the smallest photo
  redis = await startRedis(tmp);
  layout = await fleetLayout(NAMES, tmp, CHECK_INTER_MS);
  servers.push(...(await startMembers(layout.members, argsOf, true)));
  const cfg = path.join(tmp, 'haproxy.cfg');
  fs.writeFileSync(cfg, haproxyConfig(layout));
  haproxy = await startHaproxy(cfg, layout.statsSocket);
  await haproxy.allUp(NAMES);
}, 180_000);

afterAll(async () => {
  agent.destroy();
  await haproxy?.stop();
  await Promise.all(servers.map((s) => s.stop('SIGKILL')));
  await redis?.stop();
  fs.rmSync(tmp, { recursive: true, force: true });
});

function summary(r: LoadResult): string {
  return `${r.latenciesMs.length + (r.statuses[0] ?? 0)} requests, statuses ${JSON.stringify(r.statuses)}`;
}

async function enrol(url: string, subject: string, bytes: Buffer): Promise<{ status: number; id?: number }> {
  const res = await httpsRequest(`${url}?subject=${subject}`, {
    method: 'POST',
    headers: { 'content-type': 'image/jpeg', 'x-api-key': KEY },
    body: bytes,
    agent,
  });
  return res.status === 200 ? { status: 200, id: (JSON.parse(res.text) as { id: number }).id } : { status: res.status };
}

async function predict(url: string, bytes: Buffer): Promise<string | undefined> {
  const res = await httpsRequest(url, { method: 'POST', headers: { 'content-type': 'image/jpeg' }, body: bytes, agent });
  return res.status === 200 ? (JSON.parse(res.text) as { subject: string }).subject : undefined;
}

async function sampleIds(i: number): Promise<Map<string, number[]>> {
  const res = await httpsRequest(direct(i, '/trainer/subjects/'), { agent });
  return new Map((JSON.parse(res.text) as { subjects: { subject: string; ids: number[] }[] }).subjects.map((s) => [s.subject, s.ids]));
}

describe('health through the balancer', () => {
  it('answers liveness and readiness on each server and through both TLS layouts', async () => {
    for (let i = 0; i < 3; i++) {
      const ready = await httpsRequest(direct(i, '/health/ready'), { agent });
      expect(ready.status).toBe(200);
      expect(JSON.parse(ready.text)).toMatchObject({ ready: true, draining: false, gallery: 'ready' });
    }
    for (const url of [passthrough('/health/ready'), termination('/health/ready'), termination('/health/live')]) {
      expect((await httpsRequest(url, { agent })).status).toBe(200);
    }
    // termination: the client sees haproxy's certificate; passthrough: the certificate of one of the servers
    const fingerprintOf = (url: string) =>
      new Promise<string>((resolve, reject) => {
        const req = https.request(url, { agent: false, rejectUnauthorized: false }, (res) => {
          res.resume();
          resolve((res.socket as TLSSocket).getPeerCertificate().fingerprint256);
        });
        req.on('error', reject);
        req.end();
      });
    const fileFingerprint = (file: string) => new X509Certificate(fs.readFileSync(file)).fingerprint256;
    expect(await fingerprintOf(termination('/health/live'))).toBe(fileFingerprint(layout.pem));
    const own = NAMES.map((n) => fileFingerprint(path.join(tmp, n, 'tls', 'cert.pem')));
    expect(new Set(own).size).toBe(3);
    expect(own).toContain(await fingerprintOf(passthrough('/health/live')));
  });
});

describe('gallery changes through the balancer', () => {
  it('an enrolment is recognized by each server within 2 s; a removed sample is gone from each within 2 s', async () => {
    const [alice, bob] = [...johns.keys()].slice(1, 3) as [string, string];
    const a = await enrol(passthrough('/trainer/add/'), alice, johns.get(alice)![0]!.bytes);
    const b = await enrol(termination('/trainer/add/'), bob, johns.get(bob)![0]!.bytes);
    expect(a.status).toBe(200);
    expect(b.status).toBe(200);
    const acknowledged = Date.now();
    for (let i = 0; i < 3; i++) {
      expect(
        await eventually(
          async () => (await predict(direct(i, '/recognizer/predict/'), johns.get(alice)![5]!.bytes)) === alice,
          2000 - (Date.now() - acknowledged),
        ),
      ).toBe(true);
    }
    const seenByAll = Date.now() - acknowledged;
    for (let i = 0; i < 3; i++) expect(await predict(direct(i, '/recognizer/predict/'), johns.get(bob)![5]!.bytes)).toBe(bob);

    const removed = await httpsRequest(termination(`/trainer/remove/?subject=${bob}&id=${b.id}`), {
      method: 'POST',
      headers: { 'x-api-key': KEY },
      agent,
    });
    expect(removed.status).toBe(200);
    const removedAt = Date.now();
    for (let i = 0; i < 3; i++) {
      expect(await eventually(async () => !(await sampleIds(i)).has(bob), 2000 - (Date.now() - removedAt))).toBe(true);
      expect(await predict(direct(i, '/recognizer/predict/'), johns.get(bob)![5]!.bytes)).not.toBe(bob);
    }
    console.log(
      `fleet: enrolment recognized by all 3 servers ${seenByAll} ms after its acknowledgement; removal gone from all ${Date.now() - removedAt} ms after`,
    );
  });
});

describe('rolling restart with SIGTERM', () => {
  it('every request through both layouts gets a 2xx while each server is restarted in turn', async () => {
    // paced: the 3 restarts load their models on the same 2 cores
    const bounded = { clients: 2, maxRequests: 4000, maxMs: 120_000, pauseMs: 20, body: face };
    const viaTermination = steadyLoad({ ...bounded, url: termination('/v1/vision/face') });
    const viaPassthrough = steadyLoad({ ...bounded, url: passthrough('/detector/detect/') });
    const progress = async (n: number) => {
      const start = viaTermination.done() + viaPassthrough.done();
      await eventually(async () => viaTermination.done() + viaPassthrough.done() >= start + n, 20_000);
    };
    await progress(20);
    for (let i = 0; i < 3; i++) {
      const code = await servers[i]!.stop('SIGTERM');
      expect(code).toBe(0);
      expect(servers[i]!.output()).toMatch(/SIGTERM, draining[\s\S]*edgecv: stopped/);
      // the drain wrote its last metrics sample (the periodic one is an hour away)
      const store = MetricsStore.openReadOnly(path.join(tmp, NAMES[i]!, METRICS_DB_FILE));
      expect(store.oldest()).not.toBeNull();
      store.close();
      await restart(i);
      await progress(20);
    }
    const [t, p] = await Promise.all([viaTermination.stop(), viaPassthrough.stop()]);
    console.log(`fleet rolling restart: termination ${summary(t)}; passthrough ${summary(p)}`);
    expect(t.errors).toEqual([]);
    expect(p.errors).toEqual([]);
    expect(t.latenciesMs.length).toBeGreaterThan(40);
    expect(p.latenciesMs.length).toBeGreaterThan(40);
  }, 300_000); // three restarts, each loading the models on cores the load keeps busy
});

describe('SIGTERM during a burst of enrolments', () => {
  it('loses no acknowledged sample: each is in Redis and in every server after the restart', async () => {
    const victim = 1;
    const photos = [...johns.values()].flatMap((ps) => ps.slice(1, 5));
    const subjectOf = new Map(photos.map((p) => [p, `burst_${p.subject}`]));
    const acknowledged: number[] = [];
    let answered = 0;
    const sendAll = async (list: LabelledPhoto[], url: () => string) => {
      for (const p of list) {
        const r = await enrol(url(), subjectOf.get(p)!, p.bytes).catch(() => ({ status: 0, id: undefined }));
        answered++;
        if (r.status === 200 && r.id !== undefined) acknowledged.push(r.id);
      }
    };
    // half straight to the victim (its in-flight enrolments are the drain's), half through the balancer
    const half = Math.ceil(photos.length / 2);
    const burst = Promise.all([
      sendAll(photos.slice(0, half / 2), () => direct(victim, '/trainer/add/')),
      sendAll(photos.slice(half / 2, half), () => direct(victim, '/trainer/add/')),
      sendAll(photos.slice(half), () => passthrough('/trainer/add/')),
    ]);
    await eventually(async () => answered >= 4, 20_000);
    const code = await servers[victim]!.stop('SIGTERM');
    await burst;
    expect(code).toBe(0);
    await restart(victim);
    expect(acknowledged.length).toBeGreaterThan(4);
    const inRedis = new Set(redis.cli('HKEYS', 'edgecv:gallery:samples').split('\n').map(Number));
    expect(acknowledged.filter((id) => !inRedis.has(id))).toEqual([]);
    for (let i = 0; i < 3; i++) {
      const holdsAll = async () => {
        const ids = new Set([...(await sampleIds(i)).values()].flat());
        return acknowledged.every((id) => ids.has(id));
      };
      expect(await eventually(holdsAll, 5000)).toBe(true);
    }
    console.log(`fleet enrolment burst: ${photos.length} sent, ${acknowledged.length} acknowledged, all in Redis and in the 3 galleries`);
  });
});

describe('SIGKILL under load', () => {
  it('fails at most the requests in flight on the killed server, and haproxy marks it down', async () => {
    const bounded = { clients: 2, maxRequests: 2000, maxMs: 60_000, pauseMs: 20, body: face };
    const viaTermination = steadyLoad({ ...bounded, url: termination('/v1/vision/face') });
    const viaPassthrough = steadyLoad({ ...bounded, url: passthrough('/detector/detect/') });
    await eventually(async () => viaTermination.done() + viaPassthrough.done() >= 20, 20_000);
    const killedAt = performance.now();
    await servers[0]!.stop('SIGKILL');
    const downAfter: Record<string, number> = {};
    const deadline = Date.now() + 10_000;
    while (Object.keys(downAfter).length < 2 && Date.now() < deadline) {
      for (const row of await haproxy.stat()) {
        if (row.server === 's0' && row.status.startsWith('DOWN') && !(row.backend in downAfter))
          downAfter[row.backend] = Math.round(performance.now() - killedAt);
      }
      await new Promise((r) => setTimeout(r, 10));
    }
    const after = viaTermination.done() + viaPassthrough.done();
    await eventually(async () => viaTermination.done() + viaPassthrough.done() >= after + 20, 20_000);
    const [t, p] = await Promise.all([viaTermination.stop(), viaPassthrough.stop()]);
    console.log(
      `fleet SIGKILL: marked down after ${JSON.stringify(downAfter)} ms (checks every ${CHECK_INTER_MS} ms, fall 1); ` +
        `termination ${summary(t)}: ${t.errors.length} failed; passthrough ${summary(p)}: ${p.errors.length} failed`,
    );
    expect(Object.keys(downAfter).sort()).toEqual([PASSTHROUGH_BACKEND, TERMINATION_BACKEND].sort());
    // at most the requests in flight on s0: one per client connection
    expect(t.errors.length).toBeLessThanOrEqual(bounded.clients);
    expect(p.errors.length).toBeLessThanOrEqual(bounded.clients);
    await restart(0);
  });
});

describe('a second signal', () => {
  it('exits at once, without waiting for the drain', async () => {
    const s = servers[2]!;
    s.child.kill('SIGTERM');
    expect(await eventually(async () => /SIGTERM, draining/.test(s.output()), 5000)).toBe(true);
    s.child.kill('SIGINT');
    expect(await s.exited).toBe(1);
    expect(s.output()).toMatch(/SIGINT again, exiting now/);
    expect(s.output()).not.toMatch(/edgecv: stopped/);
    await restart(2);
  });
});
