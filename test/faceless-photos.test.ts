// No face where there is none (issue 48): recognition's second passes (the photo padded inside a border, then turned
// 45 degrees each way: native/pipelines/rotated_face_pass.h) must not make up a face that the detector would not report.
// On the faceless photos (testkit/faceless-photos.ts: animals, plants, food, objects, vehicles, flowers,
// buildings, landscapes, textures), recognition and enrolment find a face only where the detector reports one
// itself; faces turned 45 and 60 degrees are still found and named. The routes answer "no face" as their contracts
// say on such a photo.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cosine, loadJohns, type LabelledPhoto } from '../testkit/face-verification.js';
import { facelessPhotos } from '../testkit/faceless-photos.js';
import { rotatedPhoto } from '../testkit/rotate-photo.js';
import { RecognitionService } from '../src/gallery/recognition-service.js';
import { SqliteGalleryStore } from '../src/gallery/sqlite-store.js';
import { DEFAULT_BODY_LIMIT } from '../src/config.js';
import type { Engine } from '../src/index.js';
import { createApp } from '../src/server/app.js';
import { DATA_DIR, openEngine, photo, ROOT, useTempDirs } from './helpers.js';

// Two faceless photos the turned passes gave a face before the bar: scikit-learn's flower, MATE's garden.
const FLOWER = 'sklearn/flower.jpg';
const GARDEN = 'mate/nature/Garden.jpg';
const ADMIN = 'faceless-admin-key-0123456789';

const tempDir = useTempDirs();
let engine: Engine;
let service: RecognitionService;
const bySubject = new Map<string, LabelledPhoto[]>();

beforeAll(async () => {
  engine = await openEngine({ workers: 2, poseModel: null, objectDetector: null });
  for (const p of loadJohns(DATA_DIR)) bySubject.set(p.subject, [...(bySubject.get(p.subject) ?? []), p]);
  service = await RecognitionService.open(engine, SqliteGalleryStore.open(tempDir('edgecv-faceless-')), { log: () => {} });
});
afterAll(async () => {
  await service?.close();
  await engine?.close();
});

type Rect = readonly [number, number, number, number];
function iou(a: Rect, b: Rect): number {
  const w = Math.max(0, Math.min(a[2], b[2]) - Math.max(a[0], b[0]));
  const h = Math.max(0, Math.min(a[3], b[3]) - Math.max(a[1], b[1]));
  const area = (r: Rect) => (r[2] - r[0]) * (r[3] - r[1]);
  return (w * h) / (area(a) + area(b) - w * h);
}

describe('faceless photos', () => {
  it('get no face from the padded or turned passes: recognition finds only what the whole-image pass does', async () => {
    // The desktop wallpapers (2-24 megapixels) are left to the bench (tools/rotated-recognition.ts): they cost minutes.
    const names = facelessPhotos(ROOT).filter((n) => !/^(mate|ukui|lomiri)\//.test(n));
    expect(names.length).toBeGreaterThanOrEqual(300); // the set is there (set-up fetched it)
    const fromSecondPasses: string[] = [];
    let withFace = 0;
    for (const name of names) {
      const bytes = photo(name);
      const [detected, embedded, unturned] = await Promise.all([
        engine.detectFaces(bytes),
        engine.embedFace(bytes),
        engine.embedFace(bytes, { rotatedPasses: false }),
      ]);
      if (!embedded.face) continue;
      withFace++;
      if (detected.faces.some((f) => iou(f.rect, embedded.face!.rect) >= 0.5)) continue; // the detector's own
      // Not the detector's: the turned passes must not have given it (found without them too), nor the padded pass
      // (it keeps only faces of at least half the photo's longer side: pipelines/rotated_face_pass.h).
      const [l, t, r, b] = embedded.face.rect;
      if (!unturned.face || Math.max(r - l, b - t) >= 0.5 * Math.max(embedded.width, embedded.height)) fromSecondPasses.push(name);
    }
    expect(fromSecondPasses).toEqual([]);
    // The whole-image pass's own: a few animal heads and petals at most (docs/models.md lists them).
    expect(withFace).toBeLessThan(names.length * 0.02);
  });

  it('get no face from the padded or turned passes on the flower and the garden', async () => {
    for (const name of [FLOWER, GARDEN]) {
      expect((await engine.detectFaces(photo(name))).faces, name).toEqual([]);
      const r = await engine.embedFace(photo(name), { keepCrop: true });
      expect(r.face, name).toBeNull();
      expect(r.crop, name).toBeNull();
    }
  });
});

describe('turned faces', () => {
  it('are still found and named at 45 and 60 degrees each way', async () => {
    const gallery: { subject: string; embedding: Float32Array }[] = [];
    for (const [subject, photos] of bySubject) {
      for (const p of photos.slice(0, 3)) gallery.push({ subject, embedding: (await engine.embedFace(p.bytes)).embedding! });
    }
    let queries = 0;
    let named = 0;
    for (const [subject, photos] of bySubject) {
      for (const degrees of [-60, -45, 45, 60]) {
        const p = photos[4]!;
        const r = await engine.embedFace(rotatedPhoto(p.file, degrees));
        expect(r.face, `${p.file} turned ${degrees}`).not.toBeNull();
        queries++;
        const best = gallery.reduce((a, g) => (cosine(r.embedding!, g.embedding) > cosine(r.embedding!, a.embedding) ? g : a));
        if (best.subject === subject) named++;
      }
    }
    expect(named / queries).toBeGreaterThanOrEqual(0.9);
  });
});

describe('the face routes on a faceless photo', () => {
  it('answer no face on /v1/vision/face/register, /recognizer/predict/, /v1/vision/face/recognize and /trainer/add/', async () => {
    const app = createApp({ engine, config: { bodyLimit: DEFAULT_BODY_LIMIT, adminKey: ADMIN }, recognition: service });
    const simm = bySubject.get('John_Simm')![0]!;
    const form = (fields: Record<string, string>, image: Buffer) => {
      const f = new FormData();
      for (const [k, v] of Object.entries(fields)) f.append(k, v);
      f.append('image', new Blob([image]), 'image.jpg');
      return f;
    };
    const post = async (route: string, body: FormData | Buffer, headers: Record<string, string> = {}) => {
      const res = await app.request(route, { method: 'POST', body, headers });
      return { status: res.status, body: (await res.json()) as Record<string, unknown> };
    };
    const admin = { authorization: `Bearer ${ADMIN}` };
    expect((await post('/v1/vision/face/register', form({ userid: 'simm', admin_key: ADMIN }, simm.bytes))).body).toMatchObject({ success: true });

    for (const name of [FLOWER, GARDEN]) {
      const bytes = photo(name);
      const register = await post('/v1/vision/face/register', form({ userid: 'flower', admin_key: ADMIN }, bytes));
      expect({ name, ...register }).toEqual({ name, status: 400, body: { success: false, error: 'no face detected', duration: 0 } });
      const predict = await post('/recognizer/predict/', bytes, { 'content-type': 'image/jpeg' });
      expect(predict.status, name).toBe(200);
      expect(Object.keys(predict.body).sort(), name).toEqual(['server_processing_time', 'serverprocessingtime', 'success']);
      expect(predict.body.success, name).toBe('false');
      const recognize = await post('/v1/vision/face/recognize', form({}, bytes));
      expect(recognize.status, name).toBe(200);
      expect(recognize.body, name).toMatchObject({ success: true, predictions: [] });
      const add = await post('/trainer/add/', form({ subject: 'flower' }, bytes), admin);
      expect(add.status, name).toBe(200);
      expect(add.body, name).toMatchObject({ success: 'false', reason: 'No face detected' });
    }
    expect(service.subjects().map((s) => s.subject)).toEqual(['simm']);
  });
});
