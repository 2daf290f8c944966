// Face recognition in the engine: embeddings, the native gallery, identification and verification accuracy on
// real identity-labelled photos (dlib's examples/johns: 5 people x 11 photos).

import { beforeAll, describe, expect, it } from 'vitest';
import { errorRates, loadJohns, verificationReport, type LabelledPhoto } from '../testkit/face-verification.js';
import { calibratedDistance, EngineError, GalleryIndex, type Engine } from '../src/index.js';
import { DATA_DIR, garbage, sharedEngine, photo } from './helpers.js';

const GROUP = 'dlib/faces/2008_002506.jpg'; // 3 faces
const NO_FACE = 'skimage/rocket.jpg';

function norm(v: Float32Array): number {
  return Math.sqrt(v.reduce((s, x) => s + x * x, 0));
}

function dot(a: Float32Array, b: Float32Array): number {
  let s = 0;
  for (let i = 0; i < a.length; i++) s += a[i]! * b[i]!;
  return s;
}

/** Deterministic pseudo-random unit vectors. */
function randomUnit(dim: number, seed: number): Float32Array {
  let x = seed * 2654435761 + 1;
  const v = new Float32Array(dim).map(() => {
    x = (x * 1103515245 + 12345) & 0x7fffffff;
    return x / 0x7fffffff - 0.5;
  });
  const n = norm(v);
  return v.map((e) => e / n);
}

let engine: Engine;
let johns: LabelledPhoto[];

beforeAll(async () => {
  engine = await sharedEngine({ workers: 2 });
  johns = loadJohns(DATA_DIR);
});

describe('embedFace', () => {
  it('embeds the face of a photo as a unit vector, the same every time', async () => {
    const info = engine.faceEmbedder()!;
    expect(info.model).toBe('faceres');
    expect(info.dim).toBe(1024);
    const a = await engine.embedFace(johns[0]!.bytes);
    const b = await engine.embedFace(johns[0]!.bytes);
    expect(a.embedding).toBeInstanceOf(Float32Array);
    expect(a.embedding!.length).toBe(1024);
    expect(norm(a.embedding!)).toBeCloseTo(1, 5);
    expect(Array.from(b.embedding!)).toEqual(Array.from(a.embedding!));
    expect(a.face!.rect[2]).toBeGreaterThan(a.face!.rect[0]);
  });

  it('finds the face in every tight 150x150 johns crop (second pass inside a border)', async () => {
    const results = await Promise.all(johns.map((p) => engine.embedFace(p.bytes)));
    expect(results).toHaveLength(55); // 5 people x 11 photos
    expect(results.filter((r) => r.embedding === null)).toHaveLength(0);
    for (const r of results) {
      const [l, t, rr, b] = r.face!.rect;
      expect(rr - l).toBeGreaterThan(60); // the face fills most of the crop
      expect(0 <= l && rr <= 150 && 0 <= t && b <= 150).toBe(true);
    }
  });

  it('uses the highest-scoring face of a group photo', async () => {
    const detected = await engine.detectFaces(photo(GROUP));
    expect(detected.faces.length).toBeGreaterThan(1);
    const best = [...detected.faces].sort((x, y) => y.score - x.score)[0]!;
    const r = await engine.embedFace(photo(GROUP));
    expect(r.faces.length).toBe(detected.faces.length);
    // The same face: detectFaces decodes a JPEG only as large as its detector needs, embedFace at full size for
    // the crop, so their rects may differ by a pixel or two.
    r.face!.rect.forEach((v, i) => expect(Math.abs(v - best.rect[i]!)).toBeLessThanOrEqual(2));
    expect(r.faces.map((f) => f.score)).toEqual([...r.faces.map((f) => f.score)].sort((x, y) => y - x));
  });

  it('answers no face (not an error) on a faceless photo', async () => {
    const r = await engine.embedFace(photo(NO_FACE));
    expect(r.face).toBeNull();
    expect(r.embedding).toBeNull();
    expect(r.faces).toEqual([]);
  });

  it('embeds a given rect, and the kept crop re-embeds to the same person', async () => {
    const first = await engine.embedFace(johns[0]!.bytes, { keepCrop: true });
    expect(first.crop!.jpeg.subarray(0, 2)).toEqual(Buffer.from([0xff, 0xd8]));
    const again = await engine.embedFace(first.crop!.jpeg, { rect: first.crop!.rect });
    expect(again.faces).toEqual([]);
    expect(dot(first.embedding!, again.embedding!)).toBeGreaterThan(0.95);
  });

  it('rejects bad arguments with typed errors', async () => {
    await expect(engine.embedFace(garbage())).rejects.toMatchObject({ code: 'UNSUPPORTED_FORMAT' });
    await expect(engine.embedFace(johns[0]!.bytes, { rect: [10, 10, 5, 20] })).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    await expect(engine.embedFace(johns[0]!.bytes, { rect: [500, 500, 600, 600] })).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    await expect(engine.embedFace(johns[0]!.bytes, { cropScale: 9 })).rejects.toBeInstanceOf(EngineError);
    await expect(engine.embedFace('x' as unknown as Buffer)).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
  });
});

describe('GalleryIndex (native, one matrix product)', () => {
  it('finds the nearest entry exactly as a brute-force search does', async () => {
    const dim = 1024;
    const gallery = engine.createGallery();
    const entries = Array.from({ length: 1000 }, (_, i) => ({ id: i + 1, subject: `s${i % 37}`, embedding: randomUnit(dim, i) }));
    gallery.add(entries.slice(0, 600));
    gallery.add(entries.slice(600));
    expect(gallery.size).toBe(1000);
    for (let q = 0; q < 20; q++) {
      const query = randomUnit(dim, 10_000 + q);
      let best = entries[0]!;
      for (const e of entries) if (dot(e.embedding, query) > dot(best.embedding, query)) best = e;
      const { match } = await engine.searchGallery(gallery, query);
      expect(match!.id).toBe(best.id);
      expect(match!.subject).toBe(best.subject);
      expect(match!.cosine).toBeCloseTo(dot(best.embedding, query), 4);
    }
  });

  it('removes, replaces an id, and answers null when empty', async () => {
    const gallery = new GalleryIndex(8);
    const unit = (k: number) => Float32Array.from({ length: 8 }, (_, i) => (i === k ? 1 : 0));
    expect((await engine.searchGallery(gallery, unit(0))).match).toBeNull();
    gallery.add([
      { id: 1, subject: 'a', embedding: unit(0) },
      { id: 2, subject: 'b', embedding: unit(1) },
    ]);
    expect((await engine.searchGallery(gallery, unit(1))).match).toMatchObject({ id: 2, subject: 'b' });
    expect(gallery.remove([2, 99])).toBe(1);
    expect((await engine.searchGallery(gallery, unit(1))).match).toMatchObject({ id: 1, subject: 'a' });
    gallery.add([{ id: 1, subject: 'c', embedding: unit(3) }]); // same id: replaced
    expect(gallery.size).toBe(1);
    expect((await engine.searchGallery(gallery, unit(3))).match).toMatchObject({ id: 1, subject: 'c', cosine: 1 });
    gallery.replace([]);
    expect((await engine.searchGallery(gallery, unit(3))).match).toBeNull();
    // unnormalized input is normalized; a zero vector is refused
    gallery.add([{ id: 5, subject: 'd', embedding: unit(2).map((v) => v * 7) }]);
    expect((await engine.searchGallery(gallery, unit(2))).match!.cosine).toBeCloseTo(1, 6);
    expect(() => gallery.add([{ id: 6, subject: 'e', embedding: new Float32Array(8) }])).toThrow(/no direction/);
    expect(() => gallery.add([{ id: 6, subject: 'e', embedding: new Float32Array(7) }])).toThrow(/values/);
    expect(() => gallery.add([{ id: 1.5, subject: 'e', embedding: unit(1) }])).toThrow(/safe integer/);
  });

  it('stays correct when removals compact the matrix and adds grow it', async () => {
    const gallery = new GalleryIndex(16);
    const entries = Array.from({ length: 3000 }, (_, i) => ({ id: i + 1, subject: `s${i}`, embedding: randomUnit(16, i) }));
    for (let i = 0; i < 3000; i += 100) gallery.add(entries.slice(i, i + 100)); // grows the buffer again and again
    expect(gallery.remove(entries.slice(0, 2000).map((e) => e.id))).toBe(2000); // dead rows outnumber live ones: compacted
    expect(gallery.size).toBe(1000);
    gallery.add([{ id: 5, subject: 'back', embedding: entries[4]!.embedding }]);
    for (const e of [entries[4]!, entries[2000]!, entries[2999]!, entries[2500]!]) {
      const { match } = await engine.searchGallery(gallery, e.embedding);
      expect(match).toMatchObject({ id: e.id, subject: e.id === 5 ? 'back' : e.subject });
      expect(match!.cosine).toBeCloseTo(1, 5);
    }
    expect((await engine.searchGallery(gallery, entries[10]!.embedding)).match!.id).not.toBe(11);
  });

  it('a search keeps the gallery it was submitted with while updates swap in new ones', async () => {
    const dim = 1024;
    const gallery = engine.createGallery();
    const vectors = Array.from({ length: 1000 }, (_, i) => randomUnit(dim, i));
    const entries = (subject: string) => vectors.map((embedding, i) => ({ id: i + 1, subject, embedding }));
    const [olds, news] = [entries('old'), entries('new')];
    gallery.add(olds);
    const query = randomUnit(dim, 5);
    const searches: Promise<{ match: { subject: string } | null }>[] = [];
    for (let round = 0; round < 12; round++) {
      searches.push(engine.searchGallery(gallery, query));
      // every round replaces the whole gallery: a search sees one gallery or the other, never a mix or nothing
      gallery.replace(round % 2 ? olds : news);
    }
    const results = await Promise.all(searches);
    // search i was submitted after replace round i-1: 'new' after even rounds, 'old' after odd ones
    const expected = results.map((_, i) => (i === 0 ? 'old' : (i - 1) % 2 === 0 ? 'new' : 'old'));
    expect(results.map((r) => r.match!.subject)).toEqual(expected);
  });
});

describe('identification and verification on dlib johns (5 people x 11 photos)', () => {
  it('rank-1: enrol 4 photos per person, identify the 7 others of each', async () => {
    const gallery = engine.createGallery();
    const probes: LabelledPhoto[] = [];
    let id = 0;
    const bySubject = new Map<string, LabelledPhoto[]>();
    for (const p of johns) bySubject.set(p.subject, [...(bySubject.get(p.subject) ?? []), p]);
    for (const [subject, photos] of bySubject) {
      for (const p of photos.slice(0, 4)) {
        const r = await engine.embedFace(p.bytes);
        gallery.add([{ id: ++id, subject, embedding: r.embedding! }]);
      }
      probes.push(...photos.slice(4));
    }
    expect(gallery.size).toBe(20);
    expect(probes).toHaveLength(35);
    const answers = await Promise.all(probes.map((p) => engine.recognizeFace(p.bytes, gallery)));
    const correct = answers.filter((a, i) => a.match!.subject === probes[i]!.subject).length;
    console.log(`rank-1 identification: ${correct}/${probes.length}`);
    expect(correct / probes.length).toBeGreaterThanOrEqual(0.95);
  });

  it('equal error rate and the calibrated scale: 105 is the EER threshold', async () => {
    const info = engine.faceEmbedder()!;
    const report = await verificationReport(engine, johns);
    expect(report.missed).toEqual([]);
    expect(report.genuinePairs).toBe(5 * 55);
    expect(report.impostorPairs).toBe(1485 - 275);
    const at105 = errorRates(report.genuine, report.impostor, 105 / info.distanceScale);
    const eerDistance = calibratedDistance(1 - report.eerThreshold, info.distanceScale);
    console.log(
      `EER ${(report.eer * 100).toFixed(2)}% at distance ${eerDistance.toFixed(1)}; at 105: FAR ${(at105.far * 100).toFixed(2)}%, FRR ${(at105.frr * 100).toFixed(2)}%`,
    );
    expect(report.eer).toBeLessThan(0.02);
    expect(eerDistance).toBeGreaterThan(100);
    expect(eerDistance).toBeLessThan(110);
    expect(at105.far).toBeLessThan(0.02);
    expect(at105.frr).toBeLessThan(0.02);
  });
});
