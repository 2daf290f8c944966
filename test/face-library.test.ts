// The face library on the /trainer routes (GET /trainer/samples/, POST /trainer/move/, POST /trainer/remove/ with
// an id) over both gallery stores: a real SQLite file and a real redis-server with a second server (a peer on the
// same Redis, searching through the approximate index) that must follow every change; and enrolment refusing a
// poor photo with its reason, and recognition answering a face too poor to judge with its reason. Real engine, real
// photos, no mocks.

import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import jpeg from 'jpeg-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_BODY_LIMIT } from '../src/config.js';
import { RecognitionService } from '../src/gallery/recognition-service.js';
import { RedisGalleryStore } from '../src/gallery/redis-store.js';
import { MIN_JUDGED_FACE_SIDE, MIN_JUDGED_SHARPNESS } from '../src/gallery/recognition-quality.js';
import { MIN_FACE_SIDE, MIN_SHARPNESS } from '../src/gallery/sample-quality.js';
import { SqliteGalleryStore } from '../src/gallery/sqlite-store.js';
import type { GalleryIndexOptions } from '../src/engine/gallery/gallery-index.js';
import type { GalleryStore } from '../src/gallery/types.js';
import type { Engine } from '../src/index.js';
import { createApp } from '../src/server/app.js';
import { Database } from '../src/sqlite.js';
import { DATA_DIR, openEngine, photo } from './helpers.js';
import { blurred, jpegOf, onCanvas, shrunk } from '../testkit/degraded-photos.js';
import { loadJohns, type LabelledPhoto } from '../testkit/face-verification.js';
import { startRedis, type RedisServer } from '../testkit/redis-server.js';
import { decode } from '../testkit/vga-photos.js';

const KEY = 'test-admin-key-0123456789';
const AUTH = { authorization: `Bearer ${KEY}` };
const GROUP = 'dlib/faces/2008_002506.jpg';
const NO_FACE = 'skimage/rocket.jpg';

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'edgecv-face-library-'));
let engine: Engine;
let redis: RedisServer;
const johns = new Map<string, LabelledPhoto[]>();

beforeAll(async () => {
  engine = await openEngine({ workers: 1 });
  for (const p of loadJohns(DATA_DIR)) johns.set(p.subject, [...(johns.get(p.subject) ?? []), p]);
  redis = await startRedis(tmp, ['--save', '', '--appendonly', 'no']);
}, 60_000);
afterAll(async () => {
  await engine?.close();
  await redis?.stop();
  fs.rmSync(tmp, { recursive: true, force: true });
});

const salley = () => johns.get('John_Salley')!;
const simm = () => johns.get('John_Simm')!;

async function open(store: GalleryStore, gallery: GalleryIndexOptions = {}): Promise<RecognitionService> {
  const service = await RecognitionService.open(engine, store, { log: () => {}, gallery });
  await service.ready;
  return service;
}

function appFor(service: RecognitionService) {
  return createApp({ engine, config: { bodyLimit: DEFAULT_BODY_LIMIT, adminKey: KEY }, recognition: service });
}
type App = ReturnType<typeof appFor>;

async function call(app: App, route: string, init: RequestInit = {}): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await app.request(route, { ...init, headers: { ...AUTH, ...(init.headers as Record<string, string>) } });
  expect(res.headers.get('content-type')).toMatch(/^application\/json/);
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

async function enrol(app: App, subject: string, bytes: Buffer): Promise<Record<string, unknown>> {
  const r = await call(app, `/trainer/add/?subject=${encodeURIComponent(subject)}`, {
    method: 'POST',
    body: bytes,
    headers: { 'content-type': 'image/jpeg' },
  });
  expect(r.status).toBe(200);
  return r.body;
}

const move = (app: App, fields: Record<string, string>) =>
  call(app, '/trainer/move/', { method: 'POST', body: JSON.stringify(fields), headers: { 'content-type': 'application/json' } });

interface ListedSample {
  id: number;
  created: string;
  crop: string | null;
  crop_rect: [number, number, number, number] | null;
  quality: { face_side: number; sharpness: number } | null;
}

async function samplesOf(app: App, subject: string): Promise<ListedSample[]> {
  const r = await call(app, `/trainer/samples/?subject=${encodeURIComponent(subject)}`);
  expect(r.status).toBe(200);
  expect(Object.keys(r.body)).toEqual(['success', 'subject', 'samples', 'total', 'limit', 'next_after']);
  expect(r.body.subject).toBe(subject);
  const all = r.body.samples as ListedSample[];
  expect(r.body.total).toBe(all.length); // a page of the default size holds them all
  // The same, a sample a page: the store's paging.
  const paged: ListedSample[] = [];
  let after: unknown = 0;
  for (let i = 0; i <= all.length && after !== null; i++) {
    const page = await call(app, `/trainer/samples/?subject=${encodeURIComponent(subject)}&limit=1&after=${String(after)}`);
    expect(page.body).toMatchObject({ total: all.length, limit: 1 });
    paged.push(...(page.body.samples as ListedSample[]));
    after = page.body.next_after;
  }
  expect(after).toBeNull();
  expect(paged).toEqual(all);
  return all;
}

async function predicted(app: App, bytes: Buffer): Promise<string> {
  const r = await app.request('/recognizer/predict/', { method: 'POST', body: bytes, headers: { 'content-type': 'image/jpeg' } });
  expect(r.status).toBe(200);
  return ((await r.json()) as { subject: string }).subject;
}

/** Polls `check` (every 50 ms, at most 5 s) until it holds. */
async function eventually(check: () => boolean): Promise<void> {
  for (let i = 0; i < 100 && !check(); i++) await new Promise((r) => setTimeout(r, 50));
  expect(check()).toBe(true);
}

// SQLite: searched through the approximate index from the first sample on, its graph saved at close and loaded at
// the restart below; Redis: exact search here, the approximate index on the peer.
const STORES = [
  {
    kind: 'sqlite',
    open: () => SqliteGalleryStore.open(path.join(tmp, 'sqlite')),
    gallery: { annThreshold: 1, annFile: path.join(tmp, 'sqlite', 'ann.usearch') },
  },
  { kind: 'redis', open: () => RedisGalleryStore.open(redis.url, () => {}), gallery: {} },
] as const;

describe.each(STORES)('the face library over $kind', ({ kind, open: openStore, gallery }) => {
  let service: RecognitionService;
  let app: App;
  let peer: RecognitionService | null = null;
  let alice: number[];
  let wrong: number;
  let bob: number;
  const t0 = Date.now();

  beforeAll(async () => {
    service = await open(await openStore(), gallery);
    // A second server on the same Redis, searching through the approximate index from the first sample on.
    if (kind === 'redis') peer = await open(await openStore(), { annThreshold: 1 });
    app = appFor(service);
    alice = [(await enrol(app, 'alice', salley()[0]!.bytes)).id as number, (await enrol(app, 'alice', salley()[1]!.bytes)).id as number];
    wrong = (await enrol(app, 'alice', simm()[0]!.bytes)).id as number; // John Simm enrolled as alice by mistake
    bob = (await enrol(app, 'bob', simm()[1]!.bytes)).id as number;
  }, 120_000);
  afterAll(async () => {
    await peer?.close();
    await service?.close();
  });

  it('lists a subject samples: id, enrolment time, the crop as a JPEG with its face box, its quality', async () => {
    const listed = await samplesOf(app, 'alice');
    expect(listed.map((s) => s.id)).toEqual([...alice, wrong]);
    for (const s of listed) {
      expect(Object.keys(s)).toEqual(['id', 'created', 'crop', 'crop_rect', 'quality']);
      const created = Date.parse(s.created);
      expect(created).toBeGreaterThanOrEqual(t0 - 1000);
      expect(created).toBeLessThanOrEqual(Date.now());
      const bytes = Buffer.from(s.crop!, 'base64');
      const image = jpeg.decode(bytes, { useTArray: true });
      expect(Math.max(image.width, image.height)).toBeLessThanOrEqual(448);
      const [l, t, r, b] = s.crop_rect!;
      expect(0 <= l && l < r && r <= image.width && 0 <= t && t < b && b <= image.height).toBe(true);
      expect(s.quality!.face_side).toBe(Math.min(r - l, b - t));
      expect(s.quality!.sharpness).toBeGreaterThanOrEqual(MIN_SHARPNESS); // it was enrolled: it passed
    }
  });

  it('answers bad requests with a clear JSON error', async () => {
    expect((await call(app, '/trainer/samples/?subject=nobody')).status).toBe(404);
    const missing = await call(app, '/trainer/samples/');
    expect(missing.status).toBe(400);
    expect(missing.body.error).toMatch(/subject/);
    expect((await app.request('/trainer/samples/?subject=alice')).status).toBe(401); // no admin key
    expect((await move(app, { subject: 'alice', id: 'abc', to: 'bob' })).status).toBe(400);
    expect((await move(app, { subject: 'alice', id: String(wrong) })).body.error).toMatch(/'to'/);
    expect((await move(app, { subject: 'alice', id: String(wrong), to: ' bad ' })).status).toBe(400);
    const absent = await move(app, { subject: 'alice', id: '999999', to: 'bob' });
    expect(absent.status).toBe(404);
    expect(absent.body).toEqual({ success: 'false', error: "subject 'alice' has no sample 999999" });
    // Another subject's sample is not moved by naming the wrong owner.
    expect((await move(app, { subject: 'alice', id: String(bob), to: 'carol' })).status).toBe(404);
    expect(service.subjects().map((s) => s.subject)).toEqual(['alice', 'bob']);
  });

  it('moves a sample to another subject: the store, the index and every server follow', async () => {
    const probe = simm()[2]!.bytes;
    expect(await predicted(app, probe)).toMatch(/^(alice|bob)$/);
    const r = await move(app, { subject: 'alice', id: String(wrong), to: 'bob' });
    expect(r.status).toBe(200);
    expect(r.body).toEqual({ success: 'true', subject: 'alice', id: wrong, to: 'bob' });
    expect(service.subjects()).toEqual([
      { subject: 'alice', samples: 2, ids: alice },
      { subject: 'bob', samples: 2, ids: [wrong, bob].sort((a, b) => a - b) },
    ]);
    expect(await predicted(app, probe)).toBe('bob');
    expect((await samplesOf(app, 'bob')).map((s) => s.id)).toEqual([wrong, bob].sort((a, b) => a - b));
    if (kind === 'redis') {
      expect(redis.cli('HGET', 'edgecv:gallery:subjects', String(wrong))).toBe('bob');
      expect((JSON.parse(redis.cli('HGET', 'edgecv:gallery:samples', String(wrong))) as { subject: string }).subject).toBe('bob');
      await eventually(() => peer!.subjects().find((s) => s.subject === 'bob')?.samples === 2);
      expect(peer!.subjects()).toEqual(service.subjects());
      expect(await predicted(appFor(peer!), probe)).toBe('bob');
    } else {
      const db = new Database(path.join(tmp, 'sqlite', 'gallery.db'), { readonly: true });
      expect((db.prepare('SELECT subject FROM samples WHERE id = ?').get(wrong) as { subject: string }).subject).toBe('bob');
      db.close();
    }
  });

  it('deletes one sample by id, and the library survives a restart as it was left', async () => {
    const r = await call(app, '/trainer/remove/', {
      method: 'POST',
      body: JSON.stringify({ subject: 'bob', id: bob }),
      headers: { 'content-type': 'application/json' },
    });
    expect(r.body).toEqual({ success: 'true', subject: 'bob', removed: [bob] });
    expect((await samplesOf(app, 'bob')).map((s) => s.id)).toEqual([wrong]);
    if (peer) await eventually(() => peer!.subjects().find((s) => s.subject === 'bob')?.samples === 1);
    await service.close();
    if ('annFile' in gallery) expect(fs.existsSync(gallery.annFile)).toBe(true); // the graph the restart loads
    service = await open(await openStore(), gallery);
    app = appFor(service);
    expect(service.subjects()).toEqual([
      { subject: 'alice', samples: 2, ids: alice },
      { subject: 'bob', samples: 1, ids: [wrong] },
    ]);
    expect(await predicted(app, simm()[2]!.bytes)).toBe('bob');
  });
});

describe('enrolment refuses a photo that would make a poor sample, with the reason', () => {
  let service: RecognitionService;
  let app: App;
  beforeAll(async () => {
    service = await open(SqliteGalleryStore.open(path.join(tmp, 'refusals')));
    app = appFor(service);
  });
  afterAll(async () => {
    await service?.close();
  });

  async function refused(bytes: Buffer): Promise<string> {
    const r = await call(app, '/trainer/add/?subject=carol', { method: 'POST', body: bytes, headers: { 'content-type': 'image/jpeg' } });
    expect(r.status).toBe(200);
    expect(Object.keys(r.body)).toEqual(['success', 'reason', 'serverprocessingtime', 'server_processing_time']);
    expect(r.body.success).toBe('false');
    return r.body.reason as string;
  }

  it('no face, several faces, a face too small, a face too blurred; nothing stored', async () => {
    expect(await refused(photo(NO_FACE))).toBe('No face detected');
    expect(await refused(photo(GROUP))).toBe('More than 1 face');
    // John Simm's face shrunk to about 28 px, in a camera-sized frame: the detector scores it over 0.8 at that size.
    // (John Salley's, which it scores 0.7-0.8 there, it finds again at 24-26 and 30 px but not at 28 or 32-34: the
    // second look that keeps faceless photos faceless, docs/models.md.)
    const original = decode(simm()[0]!.file);
    const [l, t, r, b] = (await engine.embedFace(simm()[0]!.bytes)).face!.rect;
    const small = await refused(jpegOf(onCanvas(shrunk(original, Math.min(r - l, b - t) / 28), 320, 240)));
    expect(small).toMatch(new RegExp(`^Face too small: \\d+ px, at least ${MIN_FACE_SIDE} px$`));
    expect(Number(/: (\d+) px/.exec(small)![1])).toBeLessThan(MIN_FACE_SIDE);
    // skimage's astronaut, blurred by a Gaussian of 3 px: her face is still found.
    const astronaut = decode(path.join(DATA_DIR, 'skimage', 'astronaut.png'));
    const blurry = await refused(jpegOf(blurred(astronaut, 3)));
    expect(blurry).toMatch(new RegExp(`^Face too blurred: sharpness [\\d.]+, at least ${MIN_SHARPNESS}$`));
    expect(Number(/sharpness ([\d.]+)/.exec(blurry)![1])).toBeLessThan(MIN_SHARPNESS);
    expect(service.size).toBe(0);
    // The same photos, sharp and at their size, are taken.
    expect((await enrol(app, 'carol', jpegOf(original))).success).toBe('true');
    expect((await enrol(app, 'carol', jpegOf(astronaut))).success).toBe('true');
  });
});

describe('recognition answers a face too small or too blurred to judge with the reason, and names no one', () => {
  let service: RecognitionService;
  let app: App;
  beforeAll(async () => {
    service = await open(SqliteGalleryStore.open(path.join(tmp, 'unjudged')));
    app = appFor(service);
    await enrol(app, 'salley', salley()[0]!.bytes);
  });
  afterAll(async () => {
    await service?.close();
  });

  async function predict(bytes: Buffer): Promise<Record<string, unknown>> {
    const r = await call(app, '/recognizer/predict/', { method: 'POST', body: bytes, headers: { 'content-type': 'image/jpeg' } });
    expect(r.status).toBe(200);
    return r.body;
  }
  async function recognize(bytes: Buffer): Promise<Record<string, unknown>[]> {
    const form = new FormData();
    form.append('image', new Blob([bytes]), 'image.jpg');
    form.append('api_key', KEY);
    const r = await call(app, '/v1/vision/face/recognize', { method: 'POST', body: form });
    expect(r.status).toBe(200);
    return r.body.predictions as Record<string, unknown>[];
  }

  it('a face shrunk under the minimum side and a blurred one get the reason; a normal one its name as before', async () => {
    const original = decode(salley()[1]!.file);
    const [l, t, r, b] = (await engine.embedFace(salley()[1]!.bytes)).face!.rect;
    const small = jpegOf(onCanvas(shrunk(original, Math.min(r - l, b - t) / 24), 320, 240));
    const blurry = jpegOf(blurred(decode(salley()[2]!.file), 5));
    const normal = salley()[3]!.bytes;

    const tooSmall = await predict(small);
    expect(Object.keys(tooSmall)).toEqual(['success', 'reason', 'rect', 'serverprocessingtime', 'server_processing_time']);
    expect(tooSmall.success).toBe('false');
    expect(tooSmall.reason).toMatch(new RegExp(`^Face too small: \\d+ px, at least ${MIN_JUDGED_FACE_SIDE} px$`));
    const tooBlurred = await predict(blurry);
    expect(tooBlurred.success).toBe('false');
    expect(tooBlurred.reason).toMatch(new RegExp(`^Face too blurred: sharpness [\\d.]+, at least ${MIN_JUDGED_SHARPNESS}$`));
    expect(Number(/sharpness ([\d.]+)/.exec(tooBlurred.reason as string)![1])).toBeLessThan(MIN_JUDGED_SHARPNESS);

    // The normal face: exactly the fields and values of before (the contract clients read).
    const named = await predict(normal);
    expect(Object.keys(named)).toEqual(['success', 'subject', 'confidence', 'rect', 'serverprocessingtime', 'server_processing_time']);
    expect(named).toMatchObject({ success: 'true', subject: 'salley' });
    expect(Number(named.confidence)).toBeLessThan(105);

    // DeepStack (the WebSocket route shares the REST one): "unknown", confidence 0 and the reason, for both.
    for (const [bytes, reason] of [
      [small, /^Face too small/],
      [blurry, /^Face too blurred/],
    ] as const) {
      const [face, ...more] = await recognize(bytes);
      expect(more).toHaveLength(0);
      expect(Object.keys(face!)).toEqual(['userid', 'confidence', 'x_min', 'y_min', 'x_max', 'y_max', 'reason']);
      expect(face).toMatchObject({ userid: 'unknown', confidence: 0 });
      expect(face!.reason).toMatch(reason);
    }
    const [known] = await recognize(normal);
    expect(Object.keys(known!)).toEqual(['userid', 'confidence', 'x_min', 'y_min', 'x_max', 'y_max']);
    expect(known!.userid).toBe('salley');
  });
});
