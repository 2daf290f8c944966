// GET /trainer/samples/ a page at a time (issue 48, item 3): a subject of 100,000 samples, written straight into a
// real SQLite gallery file, is listed page by page (default page, a walk to the end, a bounded page of large
// crops, bad paging fields answered 400); the qualities measured on a worker thread are those measured inline.
// The rows carry a one-float embedding, which the index quarantines: the listing reads the store, not the index,
// so that such rows can be seen and removed, and loading 100,000 real vectors would only slow the test down.

import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_BODY_LIMIT } from '../src/config.js';
import { DEFAULT_PAGE_LIMIT, MAX_PAGE_LIMIT, PAGE_CROP_BYTES } from '../src/gallery/library-page.js';
import { RecognitionService } from '../src/gallery/recognition-service.js';
import { SqliteGalleryStore } from '../src/gallery/sqlite-store.js';
import type { Rect } from '../src/gallery/types.js';
import type { Engine } from '../src/index.js';
import { createApp } from '../src/server/app.js';
import { Database } from '../src/sqlite.js';
import { loadJohns } from '../testkit/face-verification.js';
import { DATA_DIR, ROOT, sharedEngine, useTempDirs } from './helpers.js';

const KEY = 'test-admin-key-0123456789';
const CROWD = 100_000;
/** Every CROP_EVERY-th sample of the crowd has a real face crop (the others none, as with --no-store-crops). */
const CROP_EVERY = 500;
const tempDir = useTempDirs();
let engine: Engine;
let service: RecognitionService;
let app: ReturnType<typeof createApp>;
const crops: { jpeg: Buffer; rect: Rect }[] = [];
const crowdIds: number[] = [];
const bigIds: number[] = [];

beforeAll(async () => {
  engine = await sharedEngine({ workers: 1 }); // it embeds four crops; nothing here reads its stats
  for (const p of loadJohns(DATA_DIR).slice(0, 4)) {
    const r = await engine.embedFace(p.bytes, { keepCrop: true });
    if (r.crop) crops.push({ jpeg: Buffer.from(r.crop.jpeg), rect: r.crop.rect });
  }
  const dir = tempDir('edgecv-library-paging-');
  await SqliteGalleryStore.open(dir).close(); // the schema
  const db = new Database(path.join(dir, 'gallery.db'));
  const { model, version } = engine.faceEmbedder()!;
  const insert = db.prepare(
    'INSERT INTO samples (subject, created_at, model, model_version, embedding, crop, crop_rect) VALUES (?, ?, ?, ?, ?, ?, ?)',
  );
  const row = (subject: string, crop: Buffer | null, rect: Rect | null) =>
    Number(insert.run(subject, 1_700_000_000_000, model, version, Buffer.alloc(4), crop, rect ? JSON.stringify(rect) : null).lastInsertRowid);
  db.transaction(() => {
    for (let i = 0; i < CROWD; i++) {
      const c = i % CROP_EVERY === 0 ? crops[(i / CROP_EVERY) % crops.length]! : null;
      crowdIds.push(row('crowd', c?.jpeg ?? null, c?.rect ?? null));
      if (i % 10_000 === 0) row('someone else', null, null); // interleaved ids of another subject
    }
    // Crops of 3 MB (imported crops are not resized): PAGE_CROP_BYTES holds two of them.
    for (let i = 0; i < 5; i++) bigIds.push(row('big crops', Buffer.alloc(3 * 1024 * 1024, i), [0, 0, 10, 10]));
  })();
  db.close();
  service = await RecognitionService.open(engine, SqliteGalleryStore.open(dir), { log: () => {} });
  await service.ready;
  app = createApp({ engine, config: { bodyLimit: DEFAULT_BODY_LIMIT, adminKey: KEY }, recognition: service });
}, 120_000);

afterAll(async () => {
  await service?.close();
});

interface Page {
  success: string;
  subject: string;
  samples: { id: number; created: string; crop: string | null; crop_rect: Rect | null; quality: { face_side: number; sharpness: number } | null }[];
  total: number;
  limit: number;
  next_after: number | null;
}

async function list(query: string): Promise<{ status: number; body: Page & { error?: string } }> {
  const res = await app.request(`/trainer/samples/?${query}`, { headers: { authorization: `Bearer ${KEY}` } });
  return { status: res.status, body: (await res.json()) as Page & { error?: string } };
}

describe('the face library a page at a time', () => {
  it("answers the first page of the default size, with the total and the next page's cursor", async () => {
    const { status, body } = await list('subject=crowd');
    expect(status).toBe(200);
    expect(Object.keys(body)).toEqual(['success', 'subject', 'samples', 'total', 'limit', 'next_after']);
    expect(body.total).toBe(CROWD);
    expect(body.limit).toBe(DEFAULT_PAGE_LIMIT);
    expect(body.samples.map((s) => s.id)).toEqual(crowdIds.slice(0, DEFAULT_PAGE_LIMIT));
    expect(body.next_after).toBe(crowdIds[DEFAULT_PAGE_LIMIT - 1]);
    // The samples' fields as before paging: the first has a real crop, and its quality.
    const first = body.samples[0]!;
    expect(Object.keys(first)).toEqual(['id', 'created', 'crop', 'crop_rect', 'quality']);
    expect(Buffer.from(first.crop!, 'base64').equals(crops[0]!.jpeg)).toBe(true);
    expect(first.crop_rect).toEqual(crops[0]!.rect);
    expect(first.quality!.face_side).toBe(Math.min(crops[0]!.rect[2] - crops[0]!.rect[0], crops[0]!.rect[3] - crops[0]!.rect[1]));
    expect(first.quality!.sharpness).toBeGreaterThan(0);
    expect(body.samples[1]).toMatchObject({ crop: null, crop_rect: null, quality: null });
  });

  it('walks 100,000 samples to the end, each once and in order', async () => {
    const seen: number[] = [];
    let after = 0;
    let withQuality = 0;
    for (let pages = 0; pages <= CROWD / MAX_PAGE_LIMIT; pages++) {
      const { status, body } = await list(`subject=crowd&limit=${MAX_PAGE_LIMIT}&after=${after}`);
      expect(status).toBe(200);
      expect(body.total).toBe(CROWD);
      for (const s of body.samples) {
        seen.push(s.id);
        if (s.quality) withQuality++;
      }
      if (body.next_after === null) break;
      expect(body.samples.length).toBe(MAX_PAGE_LIMIT);
      after = body.next_after;
    }
    expect(seen).toEqual(crowdIds);
    expect(withQuality).toBe(CROWD / CROP_EVERY);
  }, 120_000);

  it('ends a page early rather than answer more than PAGE_CROP_BYTES of crops', async () => {
    const first = await list('subject=big%20crops');
    expect(first.status).toBe(200);
    const perPage = Math.floor(PAGE_CROP_BYTES / (3 * 1024 * 1024));
    expect(first.body.samples.map((s) => s.id)).toEqual(bigIds.slice(0, perPage));
    expect(first.body.samples[0]!.quality).toBeNull(); // not a JPEG
    expect(first.body.next_after).toBe(bigIds[perPage - 1]);
    const seen = [...first.body.samples.map((s) => s.id)];
    let after = first.body.next_after;
    for (let i = 0; i < 5 && after !== null; i++) {
      const next = await list(`subject=big%20crops&after=${after}`);
      seen.push(...next.body.samples.map((s) => s.id));
      after = next.body.next_after;
    }
    expect(seen).toEqual(bigIds);
  });

  it('answers 400 to a bad limit or cursor, 404 past nothing', async () => {
    for (const q of ['limit=0', `limit=${MAX_PAGE_LIMIT + 1}`, 'limit=ten', 'limit=-5', 'limit=2.5', 'after=-1', 'after=x', 'after=1e3']) {
      const r = await list(`subject=crowd&${q}`);
      expect(r.status, q).toBe(400);
      expect(r.body.error).toMatch(/'(limit|after)'/);
    }
    // Past the last sample: an empty last page (the subject exists).
    const past = await list(`subject=crowd&after=${crowdIds.at(-1)}`);
    expect(past.status).toBe(200);
    expect(past.body).toMatchObject({ samples: [], total: CROWD, next_after: null });
    expect((await list('subject=nobody')).status).toBe(404);
  });
});

describe('sample qualities', () => {
  it('are measured on a worker thread exactly as on the calling thread', async () => {
    // The compiled class (dist/) has its worker file beside it; run from TS sources it measures inline.
    const { SampleQualities: Compiled } = (await import(
      path.join(ROOT, 'dist/src/gallery/sample-qualities.js')
    )) as typeof import('../src/gallery/sample-qualities.js');
    const threaded = new Compiled();
    const inline = new Compiled({ threaded: false });
    try {
      expect(threaded.threaded).toBe(true);
      expect(inline.threaded).toBe(false);
      const samples = crops.map((c) => ({ crop: c.jpeg, cropRect: c.rect }));
      samples.push({ crop: Buffer.from('not a jpeg'), cropRect: [0, 0, 4, 4] });
      const [a, b] = await Promise.all([threaded.of(samples), inline.of(samples)]);
      expect(a).toEqual(b);
      expect(a.filter((q) => q !== null)).toHaveLength(crops.length);
      expect(a.at(-1)).toBeNull();
      expect([threaded.measured, inline.measured]).toEqual([samples.length, samples.length]);
    } finally {
      await threaded.close();
      await inline.close();
    }
  });
});
