// A fleet sharing one gallery on Redis: a real redis-server (Debian's package, installed by set-up) on 127.0.0.1
// without persistence, two real server processes. Enrol through one, recognize through the other; removals
// travel too; and a server whose subscription drops resyncs in full when it reconnects. Server b keeps its index
// approximate (HNSW, --gallery-ann-threshold 1), a exact. Then hostile input: malformed messages on the
// change channel and a poisoned import crash no server; enrolment answers 503 in bounded time while Redis is frozen
// (SIGSTOP), and the fleet agrees with Redis afterwards; a Redis that does not persist is warned about.

import fs from 'node:fs';
import https from 'node:https';
import os from 'node:os';
import path from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CHANGE_CHANNEL, malformedChangeMessages, type ChannelEmbedder } from '../testkit/fuzz/redis-channel.js';
import { runChannelFuzz } from '../testkit/fuzz/run-channel-fuzz.js';
import { loadJohns, type LabelledPhoto } from '../testkit/face-verification.js';
import { DATA_DIR, httpsRequest } from './helpers.js';
import { startRedis, type RedisServer } from '../testkit/redis-server.js';
import { eventually, startServerProcess, type ServerProcess } from '../testkit/server-process.js';

const KEY = 'fleet-admin-key';
const agent = new https.Agent({ rejectUnauthorized: false, keepAlive: true });
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'edgecv-fleet-'));
let redis: RedisServer;
let a: ServerProcess;
let b: ServerProcess;
const johns = new Map<string, LabelledPhoto[]>();

beforeAll(async () => {
  for (const p of loadJohns(DATA_DIR)) johns.set(p.subject, [...(johns.get(p.subject) ?? []), p]);
  redis = await startRedis(tmp, ['--save', '', '--appendonly', 'no']);
  const gallery = redis.url;
  [a, b] = await Promise.all(
    // b searches its gallery through the approximate (HNSW) index from the first sample on, a exactly: both must
    // follow the fleet's changes the same way.
    [[], ['--gallery-ann-threshold', '1']].map((extra, i) =>
      startServerProcess([
        '--data-dir',
        path.join(tmp, i === 0 ? 'a' : 'b'),
        '--workers',
        '1',
        '--gallery',
        gallery,
        '--admin-key',
        KEY,
        '--no-warm-up',
        ...extra,
      ]),
    ),
  );
});

afterAll(async () => {
  agent.destroy();
  await Promise.all([a?.stop('SIGKILL'), b?.stop('SIGKILL')]);
  await redis?.stop();
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
  const res = await httpsRequest(`${server.url}recognizer/predict/`, {
    method: 'POST',
    headers: { 'content-type': 'image/jpeg' },
    body: bytes,
    agent,
  });
  return res.status === 200 ? { status: 200, subject: (JSON.parse(res.text) as { subject: string }).subject } : { status: res.status };
}

async function subjects(server: ServerProcess): Promise<Record<string, number>> {
  const res = await httpsRequest(`${server.url}trainer/subjects/`, { agent });
  return Object.fromEntries(
    (JSON.parse(res.text) as { subjects: { subject: string; samples: number }[] }).subjects.map((s) => [s.subject, s.samples]),
  );
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
    expect(Number(redis.cli('HLEN', 'edgecv:gallery:samples'))).toBe(9);
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
    redis.cli('CLIENT', 'KILL', 'TYPE', 'pubsub');
    expect((await enrol(a, newcomer, johns.get(newcomer)![0]!.bytes)).status).toBe(200);
    expect(await eventually(async () => (b.output().match(/gallery resync/g) ?? []).length > resyncsBefore)).toBe(true);
    expect(await eventually(async () => (await subjects(b))[newcomer] === 1)).toBe(true);
    expect(await predict(b, johns.get(newcomer)![7]!.bytes)).toEqual({ status: 200, subject: newcomer });
  });
});

interface GalleryCapabilities {
  state: string;
  quarantined: number;
  store: { kind: string; persistence: string; warning: string | null };
  embedder: ChannelEmbedder;
}

async function galleryOf(server: ServerProcess): Promise<GalleryCapabilities> {
  const res = await httpsRequest(`${server.url}server/capabilities/`, { agent });
  return (JSON.parse(res.text) as { gallery: GalleryCapabilities }).gallery;
}

/** Subject -> sample count as Redis holds it. */
function redisSubjects(): Record<string, number> {
  const lines = redis
    .cli('HVALS', 'edgecv:gallery:subjects')
    .split('\n')
    .filter((l) => l !== '');
  const out: Record<string, number> = {};
  for (const l of lines) out[l] = (out[l] ?? 0) + 1;
  return out;
}

const alive = (server: ServerProcess) => server.child.exitCode === null && server.child.signalCode === null;

/** Both servers list exactly what Redis holds, and neither is rebuilding. */
async function fleetAgreesWithRedis(): Promise<boolean> {
  const want = JSON.stringify(Object.entries(redisSubjects()).sort());
  for (const server of [a, b]) {
    if ((await galleryOf(server)).state !== 'ready') return false;
    if (JSON.stringify(Object.entries(await subjects(server)).sort()) !== want) return false;
  }
  return true;
}

describe('fleet gallery against bad input and a frozen Redis', () => {
  it('warns at start and in capabilities that this Redis does not persist', async () => {
    for (const server of [a, b]) {
      expect(server.output()).toMatch(/WARNING: the gallery's Redis \(redis:\/\/127\.0\.0\.1:\d+\/0\) does not persist/);
      expect((await galleryOf(server)).store).toMatchObject({
        kind: 'redis',
        persistence: 'none',
        warning: expect.stringMatching(/lost when Redis restarts/),
      });
    }
  });

  it('skips malformed change messages: no server crashes, and both still agree with Redis and predict', async () => {
    // The fleet's model, from a sample it stored (the export line's model, version and embedding length).
    const exported = await httpsRequest(`${a.url}trainer/export/`, { headers: { 'x-api-key': KEY }, agent });
    const line = JSON.parse(exported.text.split('\n')[0]!) as { model: string; model_version: string; embedding: string };
    const embedder: ChannelEmbedder = { model: line.model, version: line.model_version, dim: Buffer.from(line.embedding, 'base64').length / 4 };
    expect((await galleryOf(a)).embedder).toEqual(embedder);
    const publisher = new Redis(redis.url);
    try {
      for (const [, text] of malformedChangeMessages(embedder)) await publisher.publish(CHANGE_CHANNEL, text);
    } finally {
      publisher.disconnect();
    }
    // and a short seeded run of the fuzz's channel messages (npm run fuzz publishes 2,000): cut and flipped ones too
    const fuzzed = await runChannelFuzz({ redisUrl: redis.url, seed: 21, messages: 200, embedder });
    expect(fuzzed.published).toBe(200);
    for (const server of [a, b]) expect(await eventually(async () => /malformed change message skipped/.test(server.output()))).toBe(true);
    expect(await eventually(fleetAgreesWithRedis)).toBe(true);
    expect([alive(a), alive(b)]).toEqual([true, true]);
    const someone = Object.keys(redisSubjects())[0]!;
    for (const server of [a, b]) expect(await predict(server, johns.get(someone)![8]!.bytes)).toEqual({ status: 200, subject: someone });
  });

  it('refuses a poisoned import whole: nothing stored in Redis, nothing published, no peer crashes', async () => {
    const exported = await httpsRequest(`${a.url}trainer/export/`, { headers: { 'x-api-key': KEY }, agent });
    const line = JSON.parse(exported.text.split('\n')[0]!) as Record<string, unknown>;
    const bytes = Buffer.from(String(line['embedding']), 'base64');
    bytes.writeFloatLE(NaN, 8);
    const body = [
      JSON.stringify({ ...line, subject: 'Fleet_Newcomer' }),
      JSON.stringify({ ...line, subject: 'Fleet_Poison', embedding: bytes.toString('base64') }),
    ].join('\n');
    const samplesBefore = redis.cli('HLEN', 'edgecv:gallery:samples');
    const nextIdBefore = redis.cli('GET', 'edgecv:gallery:next-id');
    const res = await httpsRequest(`${a.url}trainer/import/`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-ndjson', 'x-api-key': KEY },
      body,
      agent,
    });
    expect(res.status).toBe(400);
    expect(res.text).toMatch(/line 2: .*non-finite/);
    expect(redis.cli('HLEN', 'edgecv:gallery:samples')).toBe(samplesBefore);
    expect(redis.cli('GET', 'edgecv:gallery:next-id')).toBe(nextIdBefore);
    // A change after it reaches b: had the import been published, b would have had it (or died) by then.
    const sentinel = [...johns.keys()][3]!;
    expect((await enrol(a, sentinel, johns.get(sentinel)![0]!.bytes)).status).toBe(200);
    expect(await eventually(async () => (await subjects(b))[sentinel] === 1)).toBe(true);
    expect([alive(a), alive(b)]).toEqual([true, true]);
    for (const server of [a, b]) expect(Object.keys(await subjects(server))).not.toContain('Fleet_Poison');
    expect(await fleetAgreesWithRedis()).toBe(true);
  });

  it('answers an enrolment within 5 s (503 with Retry-After) while Redis is frozen, predicts meanwhile, and agrees with Redis after', async () => {
    const subject = [...johns.keys()][3]!;
    redis.child.kill('SIGSTOP');
    // Bounded whatever the server does: Redis resumes after 10 s at the latest.
    const resume = setTimeout(() => redis.child.kill('SIGCONT'), 10_000);
    let frozen: { status: number; retryAfter: unknown; ms: number };
    let predictedMeanwhile: { status: number };
    try {
      const res = await enrol(a, subject, johns.get(subject)![2]!.bytes);
      frozen = { status: res.status, retryAfter: res.headers['retry-after'], ms: res.ms };
      predictedMeanwhile = await predict(b, johns.get([...johns.keys()][1]!)![8]!.bytes);
    } finally {
      clearTimeout(resume);
      redis.child.kill('SIGCONT');
    }
    expect(frozen.status).toBe(503);
    expect(frozen.retryAfter).toBe('2');
    expect(frozen.ms).toBeLessThan(5000);
    expect(predictedMeanwhile.status).toBe(200);
    // Whether or not Redis applied it once it resumed, every server ends up where Redis is.
    expect(await eventually(fleetAgreesWithRedis)).toBe(true);
    expect((await enrol(b, subject, johns.get(subject)![3]!.bytes)).status).toBe(200);
    expect(await eventually(fleetAgreesWithRedis)).toBe(true);
    expect([alive(a), alive(b)]).toEqual([true, true]);
  });
});
