// A fleet sharing one gallery on Redis: a real redis-server (Debian's package, installed by set-up) on 127.0.0.1
// without persistence, two real server processes. Enrol through one, recognize through the other; removals
// travel too; and a server whose subscription drops resyncs in full when it reconnects. Server b keeps its index
// approximate (HNSW, --gallery-ann-threshold 1), a exact.

import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import https from 'node:https';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadJohns, type LabelledPhoto } from './support/face-verification.js';
import { DATA_DIR, httpsRequest } from './helpers.js';
import { eventually, freePort, startServerProcess, type ServerProcess } from './support/server-process.js';

const KEY = 'fleet-admin-key';
const agent = new https.Agent({ rejectUnauthorized: false, keepAlive: true });
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'edgecv-fleet-'));
let redis: ChildProcess;
let redisPort: number;
let a: ServerProcess;
let b: ServerProcess;
const johns = new Map<string, LabelledPhoto[]>();

function redisCli(...args: string[]): string {
  const r = spawnSync('redis-cli', ['-h', '127.0.0.1', '-p', String(redisPort), ...args], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`redis-cli ${args.join(' ')}: ${r.stderr}`);
  return r.stdout.trim();
}

beforeAll(async () => {
  for (const p of loadJohns(DATA_DIR)) johns.set(p.subject, [...(johns.get(p.subject) ?? []), p]);
  redisPort = await freePort();
  redis = spawn('redis-server', ['--port', String(redisPort), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', tmp], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`redis-server did not start:\n${out}`)), 20_000);
    redis.stdout!.on('data', (d) => {
      out += d;
      if (/Ready to accept connections/.test(out)) {
        clearTimeout(timer);
        resolve();
      }
    });
    redis.on('exit', (code) => reject(new Error(`redis-server exited ${code} (is it installed? node scripts/setup.mjs --test):\n${out}`)));
  });
  const gallery = `redis://127.0.0.1:${redisPort}/0`;
  [a, b] = await Promise.all(
    // b searches its gallery through the approximate (HNSW) index from the first sample on, a exactly: both must
    // follow the fleet's changes the same way.
    [[], ['--gallery-ann-threshold', '1']].map((extra, i) =>
      startServerProcess(['--data-dir', path.join(tmp, i === 0 ? 'a' : 'b'), '--workers', '1', '--gallery', gallery, '--admin-key', KEY, ...extra]),
    ),
  );
});

afterAll(async () => {
  agent.destroy();
  await Promise.all([a?.stop('SIGKILL'), b?.stop('SIGKILL')]);
  redis?.kill('SIGKILL');
  fs.rmSync(tmp, { recursive: true, force: true });
});

function enrol(server: ServerProcess, subject: string, bytes: Buffer) {
  return httpsRequest(`${server.url}trainer/add/?subject=${subject}`, {
    method: 'POST',
    headers: { 'content-type': 'image/jpeg', 'x-api-key': KEY },
    body: bytes,
    agent,
  });
}

async function predict(server: ServerProcess, bytes: Buffer): Promise<{ status: number; subject?: string }> {
  const res = await httpsRequest(`${server.url}recognizer/predict/`, { method: 'POST', headers: { 'content-type': 'image/jpeg' }, body: bytes, agent });
  return res.status === 200 ? { status: 200, subject: (JSON.parse(res.text) as { subject: string }).subject } : { status: res.status };
}

async function subjects(server: ServerProcess): Promise<Record<string, number>> {
  const res = await httpsRequest(`${server.url}trainer/subjects/`, { agent });
  return Object.fromEntries((JSON.parse(res.text) as { subjects: { subject: string; samples: number }[] }).subjects.map((s) => [s.subject, s.samples]));
}

describe('fleet gallery on Redis', () => {
  it('enrols through one server and recognizes through the other', async () => {
    const people = [...johns.keys()].slice(0, 3);
    for (const subject of people) {
      for (const p of johns.get(subject)!.slice(0, 3)) expect((await enrol(a, subject, p.bytes)).status).toBe(200);
    }
    expect(await eventually(async () => Object.keys(await subjects(b)).length === 3)).toBe(true);
    expect(await subjects(b)).toEqual(Object.fromEntries(people.map((s) => [s, 3])));
    for (const subject of people) {
      for (const p of johns.get(subject)!.slice(5, 7)) expect(await predict(b, p.bytes)).toEqual({ status: 200, subject });
    }
    // the samples really are in Redis, one per photo
    expect(Number(redisCli('HLEN', 'edgecv:gallery:samples'))).toBe(9);
  });

  it('removes through the other server, and both see it', async () => {
    const gone = [...johns.keys()][0]!;
    const res = await httpsRequest(`${b.url}trainer/remove/?subject=${gone}`, { method: 'POST', headers: { authorization: `Bearer ${KEY}` }, agent });
    expect(res.status).toBe(200);
    expect(await eventually(async () => !(gone in (await subjects(a))))).toBe(true);
    const answer = await predict(a, johns.get(gone)![6]!.bytes);
    expect(answer.status).toBe(200);
    expect(answer.subject).not.toBe(gone);
  });

  it('resyncs in full when its subscription reconnects, catching changes it missed', async () => {
    const newcomer = [...johns.keys()][4]!;
    const resyncsBefore = (b.output().match(/gallery resync/g) ?? []).length;
    // Drop every subscriber connection, and change the gallery straight away: the broadcast may find nobody.
    redisCli('CLIENT', 'KILL', 'TYPE', 'pubsub');
    expect((await enrol(a, newcomer, johns.get(newcomer)![0]!.bytes)).status).toBe(200);
    expect(await eventually(async () => (b.output().match(/gallery resync/g) ?? []).length > resyncsBefore)).toBe(true);
    expect(await eventually(async () => (await subjects(b))[newcomer] === 1)).toBe(true);
    expect(await predict(b, johns.get(newcomer)![7]!.bytes)).toEqual({ status: 200, subject: newcomer });
  });
});
