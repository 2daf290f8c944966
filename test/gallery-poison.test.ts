// One bad row must not take the gallery down. An import with one poisoned line (NaN, Infinity,
// a zero vector, the wrong length, bad base64) is refused whole before anything is stored; rows a store already
// holds that the index cannot take are quarantined at load (left out, logged, counted), and the rest loads and
// predicts. Real engine, real photos, real SQLite files.

import path from 'node:path';
import { Database } from '../src/sqlite.js';
import { beforeAll, describe, expect, it } from 'vitest';
import { loadJohns, type LabelledPhoto } from '../testkit/face-verification.js';
import { DEFAULT_BODY_LIMIT } from '../src/config.js';
import { RecognitionService } from '../src/gallery/recognition-service.js';
import { SqliteGalleryStore } from '../src/gallery/sqlite-store.js';
import { embeddingToBytes } from '../src/gallery/types.js';
import type { Engine } from '../src/index.js';
import { createApp } from '../src/server/app.js';
import { registry, unwatchGallery, watchGallery } from '../src/server/prometheus.js';
import { DATA_DIR, sharedEngine, useTempDirs } from './helpers.js';

const KEY = 'poison-admin-key-0123456789';
const AUTH = { authorization: `Bearer ${KEY}` };
const newTmpDir = useTempDirs();

let engine: Engine;
let johns: Map<string, LabelledPhoto[]>;
let dim: number;

beforeAll(async () => {
  engine = await sharedEngine({ workers: 2 });
  dim = engine.faceEmbedder()!.dim;
  johns = new Map();
  for (const p of loadJohns(DATA_DIR)) johns.set(p.subject, [...(johns.get(p.subject) ?? []), p]);
});

async function openService(dir: string, log: string[] = []): Promise<RecognitionService> {
  const service = await RecognitionService.open(engine, SqliteGalleryStore.open(dir), { log: (m) => log.push(m) });
  await service.ready;
  return service;
}

const appFor = (service: RecognitionService) => createApp({ engine, config: { bodyLimit: DEFAULT_BODY_LIMIT, adminKey: KEY }, recognition: service });

async function predict(service: RecognitionService, bytes: Buffer): Promise<{ status: number; subject?: string }> {
  const res = await appFor(service).request('/recognizer/predict/', { method: 'POST', body: bytes, headers: { 'content-type': 'image/jpeg' } });
  const body = (await res.json()) as { subject?: string };
  return res.status === 200 ? { status: 200, subject: body.subject! } : { status: res.status };
}

function rowCount(dir: string): number {
  const db = new Database(path.join(dir, 'gallery.db'), { readonly: true });
  const n = (db.prepare('SELECT count(*) AS n FROM samples').get() as { n: number }).n;
  db.close();
  return n;
}

/** A float32 vector of `n` values, as an export line carries it. */
function base64Of(values: number[]): string {
  return embeddingToBytes(Float32Array.from(values)).toString('base64');
}

/** Two people enrolled (3 photos each) in a fresh folder; returns it and one valid export line. */
async function enrolledGallery(): Promise<{ dir: string; line: Record<string, unknown>; people: string[] }> {
  const dir = newTmpDir('edgecv-poison-');
  const service = await openService(dir);
  const people = [...johns.keys()].slice(0, 2);
  for (const subject of people) for (const p of johns.get(subject)!.slice(0, 3)) await service.enrol(subject, p.bytes);
  let first = '';
  for await (const l of service.exportLines()) {
    first = l;
    break;
  }
  await service.close();
  return { dir, line: JSON.parse(first) as Record<string, unknown>, people };
}

describe('import validation', () => {
  it('refuses an import with one poisoned line whole: nothing stored, and the gallery loads and predicts at the next start', async () => {
    const { dir, line, people } = await enrolledGallery();
    const good = JSON.stringify({ ...line, subject: 'Newcomer' });
    const unit = Array.from({ length: dim }, (_, i) => (i === 0 ? 1 : 0));
    const poisons: [string, string | Record<string, unknown>][] = [
      ['NaN', { ...line, subject: 'Poison', embedding: base64Of(unit.map((v, i) => (i === 3 ? NaN : v))) }],
      ['Infinity', { ...line, subject: 'Poison', embedding: base64Of(unit.map((v, i) => (i === 5 ? Infinity : v))) }],
      ['a zero vector', { ...line, subject: 'Poison', embedding: base64Of(unit.map(() => 0)) }],
      ['the wrong length', { ...line, subject: 'Poison', embedding: base64Of(unit.slice(0, dim - 1)) }],
      ['bad base64', { ...line, subject: 'Poison', embedding: 'AAA' }],
      ['base64 with foreign letters', { ...line, subject: 'Poison', embedding: `${String(line['embedding']).slice(0, 40)}*!*!` }],
      ['not JSON', '{"subject": "Poison", '],
    ];
    const service = await openService(dir);
    const app = appFor(service);
    const before = rowCount(dir);
    for (const [what, poison] of poisons) {
      for (const mode of ['append', 'replace']) {
        const body = [good, typeof poison === 'string' ? poison : JSON.stringify(poison), good].join('\n');
        const res = await app.request(`/trainer/import/?mode=${mode}`, {
          method: 'POST',
          body,
          headers: { 'content-type': 'application/x-ndjson', ...AUTH },
        });
        expect(res.status, `${what} (${mode})`).toBe(400);
        expect(((await res.json()) as { error: string }).error, what).toMatch(/^line 2: /);
        expect(rowCount(dir), `${what} (${mode}): the store holds nothing of the refused import`).toBe(before);
        expect(service.subjects().map((s) => s.subject)).toEqual([...people].sort());
      }
    }
    expect(service.state).toBe('ready');
    await service.close();

    const again = await openService(dir);
    expect(again.state).toBe('ready');
    expect(again.quarantined).toBe(0);
    expect(again.size).toBe(6);
    for (const subject of people) expect(await predict(again, johns.get(subject)![7]!.bytes)).toEqual({ status: 200, subject });
    // the good line alone still imports
    const ok = await appFor(again).request('/trainer/import/', {
      method: 'POST',
      body: good,
      headers: { 'content-type': 'application/x-ndjson', ...AUTH },
    });
    expect(ok.status).toBe(200);
    expect(rowCount(dir)).toBe(7);
    await again.close();
  });
});

describe('quarantine at load', () => {
  it('leaves rows the index cannot take out, reports them, and loads and predicts with the rest', async () => {
    const { dir, people } = await enrolledGallery();
    const { model, version } = engine.faceEmbedder()!;
    const unit = Array.from({ length: dim }, (_, i) => (i === 1 ? 1 : 0));
    const db = new Database(path.join(dir, 'gallery.db'));
    const insert = db.prepare('INSERT INTO samples (subject, created_at, model, model_version, embedding) VALUES (?, 0, ?, ?, ?)');
    const bad = [
      ['Nan', embeddingToBytes(Float32Array.from(unit.map((v, i) => (i === 2 ? NaN : v))))],
      ['Zero', Buffer.alloc(dim * 4)],
      ['Short', embeddingToBytes(Float32Array.from(unit.slice(0, 8)))],
      ['Odd', Buffer.alloc(6)], // not even float32
      ['', embeddingToBytes(Float32Array.from(unit))], // no subject
    ] as const;
    const badIds = bad.map(([subject, blob]) => Number(insert.run(subject, model, version, blob).lastInsertRowid));
    db.close();

    const log: string[] = [];
    const service = await openService(dir, log);
    expect(service.state).toBe('ready');
    expect(service.size).toBe(6);
    expect(service.quarantined).toBe(bad.length);
    expect(service.quarantine().map((q) => q.id)).toEqual(badIds);
    expect(log.join('\n')).toMatch(/5 stored rows quarantined/);
    for (const subject of people) expect(await predict(service, johns.get(subject)![7]!.bytes)).toEqual({ status: 200, subject });

    // reported: capabilities, Prometheus
    const caps = (await (await appFor(service).request('/server/capabilities/')).json()) as {
      gallery: { state: string; quarantined: number; store: { persistence: string } };
    };
    expect(caps.gallery).toMatchObject({ state: 'ready', quarantined: bad.length, store: { kind: 'sqlite', persistence: 'wal-fsync' } });
    watchGallery(service);
    try {
      expect(await registry.getSingleMetricAsString('edgecv_gallery_quarantined')).toMatch(/^edgecv_gallery_quarantined 5$/m);
    } finally {
      unwatchGallery(service);
    }

    // export still works (the unreadable row is left out), and a quarantined row can be removed by id
    let lines = 0;
    for await (const _ of service.exportLines()) lines++;
    expect(lines).toBe(6 + bad.length - 1);
    const res = await appFor(service).request(`/trainer/remove/?subject=Zero&id=${badIds[1]}`, { method: 'POST', headers: AUTH });
    expect(res.status).toBe(200);
    expect(service.quarantined).toBe(bad.length - 1);
    await service.close();
  });
});
