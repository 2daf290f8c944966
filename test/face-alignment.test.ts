// Face alignment (native/models/face_alignment.h): a face its detected landmarks show tilted is cut turned upright
// before embedding. Photos turned in the image plane by a known angle (in JS, testkit/rotate-photo.ts) must
// come out upright: the tilt reported is the angle, the embedding stays the upright photo's, and recognition
// names the right person. A gallery enrolled before alignment is re-embedded at start.

import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { Database } from '../src/sqlite.js';
import { RecognitionService } from '../src/gallery/recognition-service.js';
import { SqliteGalleryStore } from '../src/gallery/sqlite-store.js';
import { calibratedDistance, EER_DISTANCE, FACE_ALIGNMENT } from '../src/engine/face-embedding.js';
import { embeddingFromBytes, embeddingToBytes } from '../src/gallery/types.js';
import type { Engine } from '../src/index.js';
import { cosine, loadJohns, type LabelledPhoto } from '../testkit/face-verification.js';
import { DATA_DIR, openEngine, sharedEngine, useTempDirs } from './helpers.js';
import { rotatedPhoto } from './support/turned-photos.js';

const tempDir = useTempDirs();
let engine: Engine;
let johns: LabelledPhoto[];
const bySubject = new Map<string, LabelledPhoto[]>();

beforeAll(async () => {
  engine = await sharedEngine({ workers: 2, poseModel: null, objectDetector: null });
  johns = loadJohns(DATA_DIR);
  for (const p of johns) bySubject.set(p.subject, [...(bySubject.get(p.subject) ?? []), p]);
});

/** One photo of each person (the 5th: not one the gallery below enrols). */
const onePerPerson = () => [...bySubject.values()].map((photos) => photos[4]!);

describe('alignment on synthetic rotations', () => {
  it('undoes a known in-plane rotation up to 60 degrees: the angle comes back, the embedding stays the upright one', async () => {
    // References: photos whose face the detector already sees upright (within 5 degrees), so the angle turned in
    // is the face's whole tilt.
    const references: { p: LabelledPhoto; rotation: number; embedding: Float32Array }[] = [];
    for (const p of onePerPerson()) {
      const upright = await engine.embedFace(p.bytes);
      if (Math.abs(upright.face!.rotation!) < 5) references.push({ p, rotation: upright.face!.rotation!, embedding: upright.embedding! });
    }
    expect(references.length).toBeGreaterThanOrEqual(3);
    for (const { p, rotation, embedding } of references) {
      for (const degrees of [-60, -45, 30, 45, 60]) {
        const what = `${p.file} turned ${degrees}`;
        const turned = await engine.embedFace(rotatedPhoto(p.file, degrees));
        expect(turned.face, what).not.toBeNull();
        expect(Math.abs(turned.face!.rotation! - rotation - degrees), what).toBeLessThan(6);
        const aligned = cosine(turned.embedding!, embedding);
        expect(aligned, what).toBeGreaterThan(0.9);
        if (Math.abs(degrees) !== 45) continue;
        // Cut as a plain box, the same turned face reads much less like the upright one.
        const box = await engine.embedFace(rotatedPhoto(p.file, degrees), { align: false });
        const boxUpright = await engine.embedFace(p.bytes, { align: false });
        expect(aligned, what).toBeGreaterThan(cosine(box.embedding!, boxUpright.embedding!) + 0.1);
      }
    }
  });

  it('finds faces turned 60 degrees that the detector misses, with the turned detection passes', async () => {
    let missed = 0;
    for (const p of onePerPerson()) {
      for (const degrees of [-60, 60]) {
        const bytes = rotatedPhoto(p.file, degrees);
        if ((await engine.embedFace(bytes, { rotatedPasses: false })).face === null) {
          missed++;
          expect((await engine.embedFace(bytes)).face, `${p.file} turned ${degrees}`).not.toBeNull();
        }
      }
    }
    expect(missed).toBeGreaterThan(0); // else this test shows nothing: the detector found them all unaided
  });

  it('aligns a given rect by the keypoints given, or by the ones it detects there', async () => {
    const bytes = rotatedPhoto(johns[0]!.file, 30);
    const found = await engine.embedFace(bytes);
    const { rect, keypoints } = found.faces[0]!;
    const given = await engine.embedFace(bytes, { rect, keypoints });
    const looked = await engine.embedFace(bytes, { rect });
    expect(Array.from(given.embedding!)).toEqual(Array.from(found.embedding!));
    expect(Array.from(looked.embedding!)).toEqual(Array.from(found.embedding!));
    expect(given.face!.rotation).toBe(found.face!.rotation);
    const unaligned = await engine.embedFace(bytes, { rect, align: false });
    expect(unaligned.face!.rotation).toBeNull();
    expect(cosine(unaligned.embedding!, found.embedding!)).toBeLessThan(0.999);
    await expect(engine.embedFace(bytes, { keypoints })).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    await expect(engine.embedFace(bytes, { rect, keypoints: keypoints.slice(1) })).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    await expect(engine.embedFace(bytes, { align: 'yes' as unknown as boolean })).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
  });

  it('an engine opened with faceAlignment: false embeds every face as the box crop, under another version', async () => {
    await expect(openEngine({ faceAlignment: 'no' as unknown as boolean })).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    const boxed = await openEngine({ workers: 1, poseModel: null, objectDetector: null, faceAlignment: false });
    try {
      const bytes = rotatedPhoto(johns[0]!.file, 30);
      const [box, aligned, asked] = [await boxed.embedFace(bytes), await engine.embedFace(bytes), await engine.embedFace(bytes, { align: false })];
      expect(box.face!.rotation).toBeNull();
      expect(aligned.face!.rotation).not.toBeNull();
      expect(cosine(box.embedding!, asked.embedding!)).toBeGreaterThan(0.9999);
      expect(cosine(box.embedding!, aligned.embedding!)).toBeLessThan(0.999);
      expect(engine.faceEmbedder()!.version).toMatch(new RegExp(`-${FACE_ALIGNMENT}$`));
      expect(boxed.faceEmbedder()!.version).toBe(engine.faceEmbedder()!.version.replace(`-${FACE_ALIGNMENT}`, '-box'));
    } finally {
      await boxed.close();
    }
  });
});

describe('recognition of turned photos', () => {
  it('names the right person, under the threshold, on photos turned 45 and 60 degrees', async () => {
    const gallery = engine.createGallery();
    let id = 0;
    for (const [subject, photos] of bySubject) {
      for (const p of photos.slice(0, 3)) gallery.add([{ id: ++id, subject, embedding: (await engine.embedFace(p.bytes)).embedding! }]);
    }
    const scale = engine.faceEmbedder()!.distanceScale;
    for (const p of onePerPerson()) {
      for (const degrees of [45, -60]) {
        const r = await engine.recognizeFace(rotatedPhoto(p.file, degrees), gallery);
        expect(r.match?.subject, `${p.file} at ${degrees}`).toBe(p.subject);
        expect(calibratedDistance(r.match!.cosine, scale)).toBeLessThan(EER_DISTANCE);
      }
    }
  });
});

describe('a gallery enrolled before alignment', () => {
  it('is re-embedded from its stored crops at start, aligned', async () => {
    const dir = tempDir('edgecv-align-');
    const info = engine.faceEmbedder()!;
    const enrolled = [...bySubject].map(([subject, photos]) => ({ subject, photo: photos[0]! }));
    const first = await RecognitionService.open(engine, SqliteGalleryStore.open(dir), { log: () => {} });
    await first.ready;
    for (const { subject, photo } of enrolled) await first.enrol(subject, photo.bytes);
    await first.close();

    // As the previous release stored them: the version without the alignment, the vector of the box crop.
    const unalignedVersion = info.version.replace(`-${FACE_ALIGNMENT}`, '');
    expect(unalignedVersion).not.toBe(info.version);
    const db = new Database(join(dir, 'gallery.db'));
    const rows = db.prepare('SELECT id, crop, crop_rect FROM samples').all() as { id: number; crop: Buffer; crop_rect: string }[];
    const aligned = new Map<number, Float32Array>();
    for (const row of rows) {
      const rect = JSON.parse(row.crop_rect) as [number, number, number, number];
      const old = (await engine.embedFace(row.crop, { rect, align: false })).embedding!;
      aligned.set(row.id, (await engine.embedFace(row.crop, { rect })).embedding!);
      db.prepare('UPDATE samples SET model_version = ?, embedding = ? WHERE id = ?').run(unalignedVersion, embeddingToBytes(old), row.id);
    }
    db.close();

    const logs: string[] = [];
    const second = await RecognitionService.open(engine, SqliteGalleryStore.open(dir), { log: (m) => logs.push(m) });
    await second.ready;
    expect(logs.some((m) => m.includes(`re-embedding ${rows.length} samples`))).toBe(true);
    const turned = enrolled[2]!;
    expect(await second.predict(rotatedPhoto(bySubject.get(turned.subject)![6]!.file, 45))).toMatchObject({ subject: turned.subject });
    await second.close();

    const check = new Database(join(dir, 'gallery.db'), { readonly: true });
    const stored = check.prepare('SELECT id, model_version, embedding FROM samples').all() as {
      id: number;
      model_version: string;
      embedding: Buffer;
    }[];
    check.close();
    expect(stored).toHaveLength(enrolled.length);
    for (const s of stored) {
      expect(s.model_version).toBe(info.version);
      expect(cosine(embeddingFromBytes(s.embedding), aligned.get(s.id)!)).toBeGreaterThan(0.9999);
    }
  });
});
