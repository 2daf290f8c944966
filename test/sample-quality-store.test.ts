// Each sample's quality is kept with it in the store (issue 48, item 3), in both stores (a real SQLite file; a real
// redis-server on loopback, reopened as a restarted server or another server of the fleet would): a page listed
// once is listed again after a reopen without measuring anything; enrolment's quality is stored with the sample and
// a move takes it along; the service stores what enrolment and an import measured; a quality written back never
// brings back a sample removed meanwhile. A gallery an older edgecv wrote (SQLite: its schema as it created it;
// Redis: records without the field, as it wrote them) opens, lists, and gets the listed pages' qualities written.

import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { exportLine, parseImport } from '../src/gallery/jsonl.js';
import { libraryPage, type LibraryPage } from '../src/gallery/library-page.js';
import { RecognitionService } from '../src/gallery/recognition-service.js';
import { qualityWrites } from '../src/gallery/redis-records.js';
import { QUALITY_SCRIPT } from '../src/gallery/redis-scripts.js';
import { RedisGalleryStore } from '../src/gallery/redis-store.js';
import { SampleQualities } from '../src/gallery/sample-qualities.js';
import { sampleQuality } from '../src/gallery/sample-quality.js';
import { SqliteGalleryStore } from '../src/gallery/sqlite-store.js';
import { embeddingToBytes, type GalleryStore, type NewSample, type Rect } from '../src/gallery/types.js';
import type { Engine } from '../src/index.js';
import { Database } from '../src/sqlite.js';
import { loadJohns } from '../testkit/face-verification.js';
import { startRedis, type RedisServer } from '../testkit/redis-server.js';
import { DATA_DIR, openEngine, useTempDirs } from './helpers.js';

const newTmpDir = useTempDirs();
const crops: { jpeg: Buffer; rect: Rect; embedding: Float32Array }[] = [];
let photo: Buffer;
let engine: Engine;
let model = '';
let version = '';
const redises: RedisServer[] = [];
const open: GalleryStore[] = [];

beforeAll(async () => {
  engine = await openEngine({ workers: 1 });
  ({ model, version } = engine.faceEmbedder()!);
  const johns = loadJohns(DATA_DIR).slice(0, 4);
  photo = johns[0]!.bytes;
  for (const p of johns) {
    const r = await engine.embedFace(p.bytes, { keepCrop: true });
    if (r.crop && r.embedding) crops.push({ jpeg: Buffer.from(r.crop.jpeg), rect: r.crop.rect, embedding: r.embedding });
  }
  expect(crops.length).toBe(4);
}, 60_000);

afterAll(async () => {
  for (const s of open) await s.close();
  for (const r of redises) await r.stop();
  await engine?.close();
});

/** A sample with a real face crop, written without a quality (as an older edgecv wrote every sample). */
function sample(subject: string, i: number): NewSample {
  const c = crops[i % crops.length]!;
  return { subject, createdAt: 1_700_000_000_000 + i, model, modelVersion: version, embedding: c.embedding, crop: c.jpeg, cropRect: c.rect };
}

/** A page listed with a fresh measurer (a server's memory after a restart): the page, and how many crops it measured. */
async function listed(store: GalleryStore, subject: string, after: number, limit: number): Promise<{ page: LibraryPage; measured: number }> {
  const qualities = new SampleQualities({ threaded: false });
  const page = await libraryPage(store, qualities, subject, { after, limit });
  await qualities.close();
  return { page, measured: qualities.measured };
}

const qualitiesOf = (page: LibraryPage) => page.samples.map((s) => s.quality);

/** A store kind: `reopen` gives a new handle on the same gallery (a restarted server, or another of the fleet). */
const kinds: [string, () => Promise<() => Promise<GalleryStore>>][] = [
  [
    'sqlite',
    async () => {
      const dir = newTmpDir('edgecv-quality-sqlite-');
      return async () => {
        const s = SqliteGalleryStore.open(dir); // another connection to the file, as a restarted server opens it
        open.push(s);
        return s;
      };
    },
  ],
  [
    'redis',
    async () => {
      const r = await startRedis(newTmpDir('edgecv-quality-redis-'), ['--save', '', '--appendonly', 'no']);
      redises.push(r);
      return async () => {
        const s = await RedisGalleryStore.open(r.url, () => {});
        open.push(s);
        return s;
      };
    },
  ],
];

describe.each(kinds)('%s store: qualities kept with the samples', (_kind, gallery) => {
  let reopen: () => Promise<GalleryStore>;
  beforeAll(async () => {
    reopen = await gallery();
  });

  it('a page listed once is listed again after a reopen without measuring; the next page measures only itself', async () => {
    const store = await reopen();
    const ids = (
      await store.addMany(
        Array.from({ length: 12 }, (_, i) => sample('alice', i)),
        false,
      )
    ).map((s) => s.id);
    const first = await listed(store, 'alice', 0, 5);
    expect(first.measured).toBe(5);
    expect(first.page.samples.map((s) => s.id)).toEqual(ids.slice(0, 5));
    expect(qualitiesOf(first.page)).toEqual(ids.slice(0, 5).map((_, i) => sampleQuality(crops[i % 4]!.jpeg, crops[i % 4]!.rect)));
    expect(qualitiesOf(first.page).every((q) => q !== null && q.sharpness > 0)).toBe(true);

    const again = await reopen();
    const second = await listed(again, 'alice', 0, 5);
    expect(second.measured).toBe(0);
    expect(second.page).toEqual(first.page);
    const next = await listed(again, 'alice', first.page.next!, 5);
    expect(next.measured).toBe(5);
    expect(next.page.samples.map((s) => s.id)).toEqual(ids.slice(5, 10));
  });

  it("enrolment's quality is stored with the sample, and a move takes it along", async () => {
    const store = await reopen();
    const quality = sampleQuality(crops[1]!.jpeg, crops[1]!.rect);
    const enrolled = await store.add({ ...sample('carol', 1), quality });
    const listedNow = await listed(await reopen(), 'carol', 0, 10);
    expect(listedNow.measured).toBe(0);
    expect(qualitiesOf(listedNow.page)).toEqual([quality]);

    const other = await reopen();
    expect(await other.move(enrolled.id, 'carol', 'dave')).not.toBeNull();
    const moved = await listed(await reopen(), 'dave', 0, 10);
    expect(moved.measured).toBe(0);
    expect(moved.page.samples.map((s) => [s.id, s.quality])).toEqual([[enrolled.id, quality]]);
  });

  it('a quality written back never brings back a sample removed meanwhile, nor replaces one kept', async () => {
    const store = await reopen();
    const [gone, kept] = await store.addMany([sample('erin', 0), sample('erin', 1)], false);
    await (await reopen()).remove('erin', gone!.id);
    const kept1 = (await listed(store, 'erin', 0, 10)).page.samples[0]!.quality;
    await store.setQualities([
      { id: gone!.id, quality: { faceSide: 1, sharpness: 1 } },
      { id: kept!.id, quality: { faceSide: 2, sharpness: 2 } },
    ]);
    const after = await listed(await reopen(), 'erin', 0, 10);
    expect(after.page.total).toBe(1);
    expect(after.page.samples.map((s) => [s.id, s.quality])).toEqual([[kept!.id, kept1]]);
    expect(after.measured).toBe(0);
  });
});

describe('redis store: the write-back is compare-and-set', () => {
  it('a record changed between its read and the write-back (a move) is left as the change made it', async () => {
    const r = await startRedis(newTmpDir('edgecv-quality-cas-'), ['--save', '', '--appendonly', 'no']);
    redises.push(r);
    const store = await RedisGalleryStore.open(r.url, () => {});
    open.push(store);
    const [s] = await store.addMany([sample('judy', 0)], false);
    const key = 'edgecv:gallery:samples';
    const read = r.cli('HGET', key, String(s!.id)); // what a listing read
    const args = qualityWrites([{ id: s!.id, quality: { faceSide: 7, sharpness: 7 } }], [read]);
    expect(args).toHaveLength(3);
    expect(await store.move(s!.id, 'judy', 'kate')).not.toBeNull(); // meanwhile
    const moved = r.cli('HGET', key, String(s!.id));
    expect(r.cli('EVAL', QUALITY_SCRIPT, '1', key, ...args)).toBe('0');
    expect(r.cli('HGET', key, String(s!.id))).toBe(moved);
    // As read now, it is written.
    expect(r.cli('EVAL', QUALITY_SCRIPT, '1', key, ...qualityWrites([{ id: s!.id, quality: { faceSide: 7, sharpness: 7 } }], [moved]))).toBe('1');
    expect(JSON.parse(r.cli('HGET', key, String(s!.id)))).toMatchObject({ subject: 'kate', quality: { faceSide: 7, sharpness: 7 } });
  });
});

describe('a SQLite gallery an older edgecv wrote', () => {
  it("opens with its rows intact, lists, and gets the listed pages' qualities written, once", async () => {
    const dir = newTmpDir('edgecv-quality-old-schema-');
    // The schema exactly as the code before the quality column created it.
    const db = new Database(path.join(dir, 'gallery.db'));
    db.pragma('journal_mode = WAL');
    db.exec(`
        CREATE TABLE IF NOT EXISTS samples (
          id            INTEGER PRIMARY KEY AUTOINCREMENT,
          subject       TEXT    NOT NULL,
          created_at    INTEGER NOT NULL,
          model         TEXT    NOT NULL,
          model_version TEXT    NOT NULL,
          embedding     BLOB    NOT NULL,
          crop          BLOB,
          crop_rect     TEXT
        );
        CREATE INDEX IF NOT EXISTS samples_subject ON samples(subject);
      `);
    db.pragma('user_version = 1');
    const insert = db.prepare(
      'INSERT INTO samples (subject, created_at, model, model_version, embedding, crop, crop_rect) VALUES (?, ?, ?, ?, ?, ?, ?)',
    );
    const rows = Array.from({ length: 8 }, (_, i) => sample('frank', i));
    const ids = rows.map((s) =>
      Number(
        insert.run(s.subject, s.createdAt, s.model, s.modelVersion, embeddingToBytes(s.embedding), s.crop, JSON.stringify(s.cropRect))
          .lastInsertRowid,
      ),
    );
    insert.run('grace', 1, model, version, embeddingToBytes(crops[0]!.embedding), null, null); // no crop
    db.close();

    const store = SqliteGalleryStore.open(dir);
    open.push(store);
    const { vectors, unreadable } = await store.vectors();
    expect(unreadable).toEqual([]);
    expect(vectors.map((v) => v.id)).toEqual([...ids, ids.at(-1)! + 1]);
    const first = await listed(store, 'frank', 0, 5);
    expect(first.measured).toBe(5);
    expect(first.page.total).toBe(8);
    first.page.samples.forEach((s, i) => {
      expect(s.crop!.equals(rows[i]!.crop!)).toBe(true);
      expect(s.quality).toEqual(sampleQuality(rows[i]!.crop!, rows[i]!.cropRect!));
    });
    const noCrop = await listed(store, 'grace', 0, 5);
    expect(noCrop.measured).toBe(0);
    expect(qualitiesOf(noCrop.page)).toEqual([null]);
    await store.close();

    // The column is there, the version as it was; the listed page's qualities are in it, the rest not yet.
    const check = new Database(path.join(dir, 'gallery.db'), { readonly: true });
    expect(check.pragma('user_version', { simple: true })).toBe(1);
    const stored = check.prepare('SELECT id, quality FROM samples WHERE subject = ? ORDER BY id').all('frank') as {
      id: number;
      quality: string | null;
    }[];
    check.close();
    expect(stored.map((r) => (r.quality === null ? null : JSON.parse(r.quality)))).toEqual([...qualitiesOf(first.page), null, null, null]);

    const reopened = SqliteGalleryStore.open(dir);
    open.push(reopened);
    const again = await listed(reopened, 'frank', 0, 5);
    expect(again.measured).toBe(0);
    expect(again.page).toEqual(first.page);
  });
});

describe('enrolment and import', () => {
  it('store the quality of each crop they keep: measured, or as an export wrote it', async () => {
    const dir = newTmpDir('edgecv-quality-import-');
    const service = await RecognitionService.open(engine, SqliteGalleryStore.open(dir), { log: () => {} });
    const [l, t, r, b] = crops[2]!.rect;
    const given = { faceSide: Math.min(r - l, b - t), sharpness: 1.5 }; // not what the crop measures: kept as given
    const exported: string[] = [];
    try {
      await service.ready;
      await service.enrol('ivan', photo);
      const lines = [0, 1, 2].map((i) => exportLine({ ...sample('heidi', i), id: i + 1, ...(i === 2 ? { quality: given } : {}) }));
      expect(lines.map((line) => 'quality' in JSON.parse(line))).toEqual([false, false, true]);
      expect((await service.import(lines.join('\n'), false)).added).toBe(3);
      for await (const line of service.exportLines()) exported.push(line);
    } finally {
      await service.close();
    }
    const db = new Database(path.join(dir, 'gallery.db'), { readonly: true });
    const stored = db.prepare('SELECT crop, crop_rect, quality FROM samples ORDER BY id').all() as {
      crop: Buffer;
      crop_rect: string;
      quality: string | null;
    }[];
    db.close();
    const measured = stored.map((row) => sampleQuality(row.crop, JSON.parse(row.crop_rect) as Rect));
    expect(stored.map((row) => JSON.parse(row.quality!))).toEqual([measured[0], measured[1], measured[2], given]);
    expect(measured[3]!.sharpness).not.toBe(given.sharpness);
    // Export writes each one as the library lists it.
    expect(exported.map((line) => (JSON.parse(line) as { quality: unknown }).quality)).toEqual(
      [measured[0], measured[1], measured[2], given].map((q) => ({ face_side: q!.faceSide, sharpness: q!.sharpness })),
    );
  });

  it("takes an import line's 'quality' as export writes it, and refuses one that is not", () => {
    const line = (quality: unknown, withCrop = true) =>
      JSON.stringify({ ...JSON.parse(exportLine({ ...sample('judy', 0), id: 1 })), quality, ...(withCrop ? {} : { crop: null, crop_rect: null }) });
    const [l, t, r, b] = crops[0]!.rect;
    const side = Math.min(r - l, b - t);
    expect(parseImport(line({ face_side: side, sharpness: 3 }))[0]).toMatchObject({ quality: { faceSide: side, sharpness: 3 } });
    expect(parseImport(line(null))[0]).toMatchObject({ quality: null });
    // Measured on another face box (the line's crop_rect was edited): measured again at import.
    expect(parseImport(line({ face_side: side + 1, sharpness: 3 }))[0]).toMatchObject({ quality: undefined });
    for (const [bad, message] of [
      [{ face_side: side }, /'quality' must be/],
      [{ face_side: side, sharpness: -1 }, /'quality' must be/],
      [{ face_side: String(side), sharpness: 3 }, /'quality' must be/],
      [[side, 3], /'quality' must be/],
      ['high', /'quality' must be/],
    ] as const)
      expect(() => parseImport(line(bad)), JSON.stringify(bad)).toThrow(message);
    expect(() => parseImport(line({ face_side: side, sharpness: 3 }, false))).toThrow(/'quality' needs 'crop'/);
  });
});
