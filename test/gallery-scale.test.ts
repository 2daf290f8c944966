// The approximate (HNSW) gallery index against exact search, on real embeddings: faces of the test photos embedded
// by the real engine from augmented crops (testkit/face-corpus.ts), among distractors drawn to their statistics.
// Also: adds, removes and a replace during the background build keep it right; the graph saved to a file is loaded
// back (patched where the gallery changed) and a stale, damaged or half-saved file is rebuilt instead; a service
// restarted over the same SQLite store loads its graph and answers the same; the import's 503 window covers only
// the swap.

import fs from 'node:fs';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { distractors, embedRealFaces, statistics, type RealFace } from '../testkit/face-corpus.js';
import { calibratedDistance, EER_DISTANCE } from '../src/engine/face-embedding.js';
import { Int8Rows } from '../src/engine/gallery/int8-rows.js';
import { GalleryBusyError, RecognitionService } from '../src/gallery/recognition-service.js';
import { SqliteGalleryStore } from '../src/gallery/sqlite-store.js';
import type { Engine, GalleryEntry, GalleryIndex, GalleryMatch } from '../src/index.js';
import { DATA_DIR, sharedEngine, photo, useTempDirs } from './helpers.js';

const DISTRACTORS = 4000;
let engine: Engine;
let faces: RealFace[];
let entries: GalleryEntry[];
let queries: Float32Array[];
let realQueries: number;
let scale: number;
const tempDir = useTempDirs();

beforeAll(async () => {
  engine = await sharedEngine({ workers: 2 });
  scale = engine.faceEmbedder()!.distanceScale;
  annConfirmBelow = 1 - EER_DISTANCE / scale;
  faces = await embedRealFaces(engine, DATA_DIR, 4, 30);
  // Variants 1..3 of every face are enrolled; variant 0 of each is a query that should find its face.
  entries = faces.filter((f) => f.variant > 0).map((f, i) => ({ id: i + 1, subject: f.face, embedding: f.embedding }));
  const stats = statistics(faces.map((f) => f.embedding));
  const noise = distractors(stats, DISTRACTORS, 11);
  for (let i = 0; i < DISTRACTORS; i++)
    entries.push({ id: 100_000 + i, subject: `distractor-${i}`, embedding: noise.subarray(i * 1024, (i + 1) * 1024) });
  queries = faces.filter((f) => f.variant === 0).map((f) => f.embedding);
  realQueries = queries.length;
  const unknown = distractors(stats, 200, 12); // nobody enrolled: mostly rejections
  for (let i = 0; i < 200; i++) queries.push(unknown.slice(i * 1024, (i + 1) * 1024));
}, 240_000);

/** Exact galleries and their answers by list: several tests compare with the same list, and its answers do not change. */
const exactOf = new WeakMap<GalleryEntry[], { gallery: GalleryIndex; answers?: Promise<GalleryMatch[]> }>();

async function exactGallery(list: GalleryEntry[]): Promise<GalleryIndex> {
  let known = exactOf.get(list);
  if (!known) {
    known = { gallery: engine.createGallery({ annThreshold: Infinity }) };
    known.gallery.replace(list);
    exactOf.set(list, known);
  }
  return known.gallery;
}

/** Exact search's nearest sample over `list` for every query, in order (searched once per list). */
async function exactAnswers(list: GalleryEntry[]): Promise<GalleryMatch[]> {
  const gallery = await exactGallery(list);
  const known = exactOf.get(list)!;
  known.answers ??= (async () => {
    const out: GalleryMatch[] = [];
    for (const q of queries) out.push((await engine.searchGallery(gallery, q)).match!);
    return out;
  })();
  return known.answers;
}

async function annGallery(list: GalleryEntry[], annFile?: string): Promise<GalleryIndex> {
  const g = engine.createGallery({ annThreshold: 1, annConfirmBelow, ...(annFile ? { annFile } : {}) });
  g.replace(list);
  expect(g.approximate).toBe(false); // exact until the background build is done
  await g.indexed;
  expect(g.approximate).toBe(true);
  return g;
}

let entriesGraph: { gallery: Promise<GalleryIndex>; file: string } | undefined;
/**
 * The approximate index of `entries`, built once and saved to a file, for the tests that only search it or load
 * its file (none changes it): each build of 4,000 rows costs seconds of CPU.
 */
function entriesAnn(): { gallery: Promise<GalleryIndex>; file: string } {
  if (!entriesGraph) {
    const file = path.join(tempDir(), 'gallery.hnsw');
    entriesGraph = { gallery: annGallery(entries, file), file };
  }
  return entriesGraph;
}

/** A copy, under a folder of its own, of the graph saved by entriesAnn() or distractorAnn(). */
async function copyOfGraph({ gallery, file }: { gallery: Promise<GalleryIndex>; file: string }): Promise<string> {
  await gallery;
  const copy = path.join(tempDir(), 'gallery.hnsw');
  fs.copyFileSync(file, copy);
  fs.copyFileSync(`${file}.json`, `${copy}.json`);
  return copy;
}

let distractorGraph: { gallery: Promise<GalleryIndex>; file: string } | undefined;
/**
 * The approximate index of the distractors alone, built once and saved to a file: one test changes the gallery
 * (not the file, which only persist() or a build writes), another loads the file.
 */
function distractorAnn(): { gallery: Promise<GalleryIndex>; file: string } {
  if (!distractorGraph) {
    const file = path.join(tempDir(), 'gallery.hnsw');
    distractorGraph = { gallery: annGallery(distractorEntries(), file), file };
  }
  return distractorGraph;
}

/** The distractors alone (the real faces come one by one in the tests that use them). */
const distractorEntries = () => entries.filter((e) => e.subject.startsWith('distractor-'));

const accepted = (cosine: number) => calibratedDistance(cosine, scale) <= EER_DISTANCE;
/** As RecognitionService sets it: a would-be rejection is confirmed by a scan of every row. */
let annConfirmBelow: number;

describe('approximate gallery index on real embeddings', () => {
  it('has real faces to work with', () => {
    expect(new Set(faces.map((f) => f.face)).size).toBe(30);
    expect(realQueries).toBe(30);
    // Variants of one face are close (same person), distractors are not.
    const exact = (a: Float32Array, b: Float32Array) => a.reduce((s, v, i) => s + v * b[i]!, 0);
    const sameFace = faces.filter((f) => f.face === faces[0]!.face);
    expect(accepted(exact(sameFace[0]!.embedding, sameFace[1]!.embedding))).toBe(true);
    expect(accepted(exact(faces[0]!.embedding, entries.at(-1)!.embedding))).toBe(false);
  });

  it('finds what exact search finds: the same decision and subject for every real face, the same sample and unknown-face decision but for 1%', async () => {
    const exact = await exactAnswers(entries);
    const ann = await entriesAnn().gallery;
    let sameTop1 = 0;
    for (const [i, q] of queries.entries()) {
      const e = exact[i]!;
      const a = (await engine.searchGallery(ann, q)).match!;
      if (i < realQueries) expect(a.id).toBe(e.id);
      if (a.id === e.id) {
        sameTop1++;
        expect(a.cosine).toBeCloseTo(e.cosine, 5); // re-ranked with the float32 embeddings: exact cosines
        expect(a.subject).toBe(e.subject);
      }
      expect(accepted(a.cosine)).toBe(accepted(e.cosine));
    }
    expect(sameTop1).toBeGreaterThanOrEqual(realQueries);
  });

  it('takes another beam for one search (what the bench compares), refuses beams out of range, and doubles the default beam from annLargeGallery entries', async () => {
    const exact = await exactAnswers(entries);
    const ann = await entriesAnn().gallery;
    for (const [i, q] of queries.slice(0, realQueries).entries()) {
      expect(ann.searchApproximate(q, { expansion: 128 })?.id).toBe(exact[i]!.id);
    }
    expect(() => ann.searchApproximate(queries[0]!, { expansion: 0 })).toThrow(/expansion must be an integer from 1 to 65536/);
    expect(() => ann.searchApproximate(queries[0]!, { expansion: 1.5 })).toThrow(/expansion must be an integer/);
    const large = engine.createGallery({ annThreshold: 1, annLargeGallery: 50 });
    large.add(entries.slice(0, 49));
    expect(large.searchBeam).toBe(64);
    large.add(entries.slice(49, 50));
    expect(large.searchBeam).toBe(128);
    const chosen = engine.createGallery({ annThreshold: 1, annLargeGallery: 50, annExpansion: 32 });
    chosen.add(entries.slice(0, 60));
    expect(chosen.searchBeam).toBe(32); // a beam the caller set is kept at any size
    expect(engine.createGallery().searchBeam).toBe(64);
    expect(() => engine.createGallery({ annLargeGallery: -1 })).toThrow(/annLargeGallery must be a number >= 0/);
  });

  it('recognizes a photo through the approximate index as through the exact one', async () => {
    const exact = await exactGallery(entries);
    const ann = await entriesAnn().gallery;
    const bytes = photo('dlib/johns/John_Simm/000306_00470222.jpg');
    const e = await engine.recognizeFace(bytes, exact);
    const a = await engine.recognizeFace(bytes, ann);
    expect(a.match).not.toBeNull();
    expect(a.match!.id).toBe(e.match!.id);
    expect(a.match!.cosine).toBeCloseTo(e.match!.cosine, 5);
    expect(a.timings.searchMs).toBeGreaterThanOrEqual(0);
  });

  it('takes adds, replacements and removes without a rebuild, in step with exact search', async () => {
    const base = distractorEntries();
    const ann = await distractorAnn().gallery; // changed here, and by no other test
    const exact = await exactGallery(base);
    const indexed = ann.indexed;
    const target = faces.find((f) => f.variant === 0)!;
    const twin = faces.find((f) => f.face === target.face && f.variant === 1)!;
    const person = (f: RealFace) => f.face.split('/')[2]; // dlib/johns/<person>/...
    const other = faces.find((f) => person(f) !== person(target) && f.variant === 1)!;
    const both = (op: (g: GalleryIndex) => unknown) => [op(ann), op(exact)];
    const nearest = async (q: Float32Array) => {
      const [a, e] = [(await engine.searchGallery(ann, q)).match!, (await engine.searchGallery(exact, q)).match!];
      expect([a.id, a.subject]).toEqual([e.id, e.subject]);
      return a;
    };
    expect((await nearest(target.embedding)).subject).toMatch(/^distractor-/);
    both((g) => g.add([{ id: 7_000_007, subject: 'added', embedding: twin.embedding }]));
    const m = await nearest(target.embedding);
    expect([m.id, m.subject, accepted(m.cosine)]).toEqual([7_000_007, 'added', true]);
    // Same id, another face: the old vector must not answer any more.
    both((g) => g.add([{ id: 7_000_007, subject: 'replaced', embedding: other.embedding }]));
    expect((await nearest(target.embedding)).cosine).toBeLessThan(m.cosine - 0.1); // the twin is gone
    expect((await nearest(other.embedding)).subject).toBe('replaced');
    expect(both((g) => g.remove([7_000_007]))).toEqual([1, 1]);
    expect((await nearest(other.embedding)).subject).toMatch(/^distractor-/);
    expect(ann.approximate).toBe(true);
    expect(ann.indexed).toBe(indexed); // no rebuild happened
  });

  it('keeps adds and removes made while the background build runs', async () => {
    const g = engine.createGallery({ annThreshold: 1, annConfirmBelow });
    g.replace(entries);
    const target = faces.find((f) => f.variant === 0 && f.face !== faces[0]!.face)!;
    const enrolledIds = entries.filter((e) => e.subject === target.face).map((e) => e.id);
    expect(enrolledIds.length).toBe(3);
    g.remove(enrolledIds); // before the build reaches them
    g.add([{ id: 9_000_009, subject: 'late', embedding: faces.find((f) => f.face === target.face && f.variant === 2)!.embedding }]);
    await g.indexed;
    expect(g.approximate).toBe(true);
    const m = (await engine.searchGallery(g, target.embedding)).match!;
    expect([m.id, m.subject]).toEqual([9_000_009, 'late']);
    expect(g.size).toBe(entries.length - 3 + 1);
  });
});

describe('int8 scan that confirms a would-be rejection', () => {
  /** The exact nearest sample of every query in `list`. */
  const exactNearest = async (list: GalleryEntry[]) => (await exactAnswers(list)).map((m) => m.id);
  const packedRows = (list: GalleryEntry[]) => {
    const embeddings = new Float32Array(list.length * 1024);
    list.forEach((e, i) => embeddings.set(e.embedding, i * 1024));
    return { ids: Float64Array.from(list, (e) => e.id), embeddings };
  };

  it('proposes the exact nearest sample among its 64 best for every query, through adds in batches, replacements and removes', async () => {
    const rows = new Int8Rows(1024);
    // Batches of 500: the matrix grows past its first 1,024 rows several times.
    for (let start = 0; start < entries.length; start += 500) {
      const part = packedRows(entries.slice(start, start + 500));
      rows.set(part.ids, part.embeddings);
    }
    expect(rows.size).toBe(entries.length);
    const check = async (list: GalleryEntry[]) => {
      const nearest = await exactNearest(list);
      const live = new Set(list.map((e) => e.id));
      for (const [i, q] of queries.entries()) {
        const proposed = [...rows.nearest(q, 64)];
        expect(proposed.length).toBe(64);
        expect([i, proposed.includes(nearest[i]!)]).toEqual([i, true]);
        expect(proposed.every((id) => live.has(id))).toBe(true); // nothing removed, nothing stale
      }
    };
    await check(entries);
    // Remove every enrolled sample of half the faces (the nearest of their queries) and every 3rd distractor;
    // give the first remaining enrolled ids other faces' embeddings.
    const gone = new Set(
      entries
        .filter(
          (e, i) =>
            (!e.subject.startsWith('distractor-') && faces.findIndex((f) => f.face === e.subject) % 2 === 0) ||
            (e.subject.startsWith('distractor-') && i % 3 === 0),
        )
        .map((e) => e.id),
    );
    rows.delete(Float64Array.from(gone));
    rows.delete(Float64Array.of(123_456_789)); // not there: ignored
    const kept = entries.filter((e) => !gone.has(e.id));
    const moved = kept.slice(0, 5).map((e, i) => ({ ...e, embedding: entries.at(-1 - i)!.embedding }));
    const part = packedRows(moved);
    rows.set(part.ids, part.embeddings);
    const now = moved.concat(kept.slice(5));
    expect(rows.size).toBe(now.length);
    await check(now);
    expect(new Int8Rows(1024).nearest(queries[0]!, 64).length).toBe(0);
  });

  it('holds every row once the index is built or loaded, and none when the gallery does not confirm', async () => {
    const { gallery, file } = entriesAnn();
    const built = await gallery;
    expect(built.scanRows).toBe(entries.length);
    const loaded = await annGallery(entries, file);
    expect(loaded.annBuild).toMatchObject({ how: 'loaded' }); // the graph file holds no int8 rows: copied after the load
    expect(loaded.scanRows).toBe(entries.length);
    loaded.remove([entries[0]!.id]);
    expect(loaded.scanRows).toBe(entries.length - 1);
    const plain = engine.createGallery({ annThreshold: 1 });
    plain.replace(entries.slice(0, 1000)); // a graph of its own (8 build chunks): its size does not matter here
    await plain.indexed;
    expect(plain.approximate).toBe(true);
    expect(plain.scanRows).toBe(0);
  });
});

/** At most one in a hundred of `n`, and at least one: what an approximate index may get wrong in a test. */
const approximationBudget = (n: number) => Math.max(1, Math.floor(n / 100));

/**
 * Queries answered through `ann` as through exact search over `list`. Every query, real or unknown: the same
 * decision (a would-be rejection is confirmed by scanning every row, so a face or distractor within the threshold
 * that the graph missed is still found). Real faces whose nearest is an enrolled face (not a distractor: among
 * those "nearest" is noise): the same subject, which is what a client is told, and the same sample too but for
 * the budget (a build now and then ranks another sample of the same person first: seen once in CI). Two samples
 * with the same embedding tie exactly, and either is a right answer.
 */
async function expectAgreement(ann: GalleryIndex, list: GalleryEntry[]): Promise<void> {
  const exact = await exactAnswers(list);
  let enrolledNearest = 0;
  let otherSample = 0;
  for (const [i, q] of queries.entries()) {
    const e = exact[i]!;
    const a = (await engine.searchGallery(ann, q)).match!;
    expect([i, accepted(a.cosine)]).toEqual([i, accepted(e.cosine)]);
    if (i >= realQueries || e.subject.startsWith('distractor-')) continue;
    enrolledNearest++;
    if (a.id === e.id || Math.abs(a.cosine - e.cosine) < 1e-6) continue;
    otherSample++;
    expect([i, a.subject]).toEqual([i, e.subject]);
  }
  expect(otherSample).toBeLessThanOrEqual(approximationBudget(enrolledNearest));
}

describe('approximate index saved to a file', () => {
  it('loads the saved graph instead of building it, and answers as exact search', async () => {
    const { gallery, file } = entriesAnn();
    const first = await gallery;
    expect(first.annBuild).toMatchObject({ how: 'built', reason: 'no saved graph' });
    expect(fs.existsSync(file) && fs.existsSync(`${file}.json`)).toBe(true);
    expect(fs.readdirSync(path.dirname(file)).filter((n) => n.endsWith('.tmp'))).toEqual([]);
    const second = await annGallery(entries, file);
    expect(second.annBuild).toMatchObject({ how: 'loaded', rows: entries.length, patched: 0 });
    await expectAgreement(second, entries);
  });

  it('patches a saved graph to the gallery it is loaded for: added, changed and removed rows', async () => {
    const file = await copyOfGraph(entriesAnn()); // the graph of entries as saved, patched (and saved) here
    const target = faces.find((f) => f.variant === 0 && f.face !== faces[0]!.face)!;
    const other = faces.find((f) => f.variant === 0 && f.face !== target.face && f.face !== faces[0]!.face)!;
    const targetIds = entries.filter((e) => e.subject === target.face).map((e) => e.id);
    const otherIds = entries.filter((e) => e.subject === other.face).map((e) => e.id);
    // Since the save: the target's samples removed but one, which now holds another face's embedding (re-embedded
    // under the same id), and a new sample of the other face.
    const changed: GalleryEntry[] = entries
      .filter((e) => !targetIds.includes(e.id))
      .concat([
        { id: targetIds[0]!, subject: 'moved', embedding: faces.find((f) => f.face === other.face && f.variant === 1)!.embedding },
        { id: 8_000_008, subject: 'new', embedding: faces.find((f) => f.face === other.face && f.variant === 2)!.embedding },
      ]);
    const g = await annGallery(changed, file);
    expect(g.annBuild).toMatchObject({ how: 'loaded', patched: 4 }); // 2 removed, 1 changed, 1 added
    expect(g.size).toBe(changed.length);
    const t = (await engine.searchGallery(g, target.embedding)).match!;
    expect(targetIds.slice(1)).not.toContain(t.id);
    const o = (await engine.searchGallery(g, other.embedding)).match!;
    expect([...otherIds, targetIds[0], 8_000_008]).toContain(o.id);
    await expectAgreement(g, changed);
    // The patched graph was saved: the next load has nothing left to patch.
    expect((await annGallery(changed, file)).annBuild).toMatchObject({ how: 'loaded', patched: 0 });
  });

  it('keeps adds and removes made after a load right, and persist() saves them', async () => {
    const file = await copyOfGraph(distractorAnn()); // the distractors' graph as saved; persist() below rewrites it
    const base = distractorEntries();
    const g = engine.createGallery({ annThreshold: 1, annConfirmBelow, annFile: file });
    g.replace(base);
    const target = faces.find((f) => f.variant === 0)!;
    const twin = faces.find((f) => f.face === target.face && f.variant === 1)!;
    g.add([{ id: 7_000_007, subject: 'during-load', embedding: twin.embedding }]); // arrives while the file is checked
    g.remove([base[0]!.id]);
    await g.indexed;
    expect(g.annBuild).toMatchObject({ how: 'loaded' });
    expect((await engine.searchGallery(g, target.embedding)).match!.subject).toBe('during-load');
    g.remove([7_000_007]);
    expect((await engine.searchGallery(g, target.embedding)).match!.subject).toMatch(/^distractor-/);
    const other = faces.find((f) => f.face !== target.face && f.variant === 1)!;
    g.add([{ id: 7_000_008, subject: 'after-load', embedding: other.embedding }]);
    expect((await engine.searchGallery(g, other.embedding)).match!.subject).toBe('after-load');
    const now = base.slice(1).concat([{ id: 7_000_008, subject: 'after-load', embedding: other.embedding }]);
    await expectAgreement(g, now);
    await g.persist();
    expect((await annGallery(now, file)).annBuild).toMatchObject({ how: 'loaded', patched: 0 });
  });

  it('rebuilds instead of using a damaged, half-saved, foreign or too stale graph', async () => {
    const dir = tempDir();
    const file = path.join(dir, 'gallery.hnsw');
    const small = entries.slice(0, 1500);
    await annGallery(small, file);
    const good = fs.readFileSync(file);
    const goodMeta = fs.readFileSync(`${file}.json`);
    const rebuiltBecause = async (list: GalleryEntry[], options: { annQuantization?: 'i8' } = {}) => {
      const g = engine.createGallery({ annThreshold: 1, annConfirmBelow, annFile: file, ...options });
      g.replace(list);
      await g.indexed;
      const report = g.annBuild!;
      expect(report.how).toBe('built');
      await expectAgreement(g, list);
      fs.writeFileSync(file, good); // back to the good pair for the next case
      fs.writeFileSync(`${file}.json`, goodMeta);
      return report.how === 'built' ? report.reason : '';
    };
    const flipped = Buffer.from(good);
    flipped[Math.floor(flipped.length / 2)]! ^= 0xff;
    fs.writeFileSync(file, flipped);
    expect(await rebuiltBecause(small)).toBe('graph file does not match its checksum');
    fs.writeFileSync(file, good.subarray(0, good.length - 4096)); // torn write
    expect(await rebuiltBecause(small)).toBe('graph file does not match its checksum');
    // A crash between the two renames of a save: the graph of another gallery (all of entries) beside this key list.
    const other = entriesAnn();
    await other.gallery;
    fs.copyFileSync(other.file, file);
    expect(await rebuiltBecause(small)).toBe('graph file does not match its checksum');
    fs.writeFileSync(`${file}.json`, '{"format":1,"dim":10');
    expect(await rebuiltBecause(small)).toBe('unreadable gallery.hnsw.json');
    expect(await rebuiltBecause(small, { annQuantization: 'i8' })).toBe('saved graph has quantization f16, not i8');
    expect(await rebuiltBecause(entries.slice(500, 2000))).toBe('1000 rows changed since the graph was saved');
    fs.rmSync(file);
    expect(await rebuiltBecause(small)).toBe('graph file missing or unreadable');
  });
});

describe('recognition service with the approximate index', () => {
  it('answers the same after a restart over the same store, and the import window covers only the swap', async () => {
    const dir = tempDir();
    const log: string[] = [];
    let probe: Promise<unknown> | undefined;
    const open = async (store: SqliteGalleryStore) => {
      const s = await RecognitionService.open(engine, store, {
        gallery: { annThreshold: 1, annFile: path.join(dir, 'gallery.hnsw') },
        log: (m) => {
          log.push(m);
          // Logged at the end of the import's update window, still inside it: a prediction now must wait.
          if (m.startsWith('gallery import:')) probe = s.predict(photo('skimage/astronaut.png')).catch((e: unknown) => e);
        },
      });
      await s.ready;
      return s;
    };
    const first = await open(await SqliteGalleryStore.open(dir));
    // Import real embeddings as JSON lines (export format without crops) plus one photo line.
    const model = first.embedder;
    const lines = entries.slice(0, 600).map((e) =>
      JSON.stringify({
        subject: e.subject,
        model: model.model,
        model_version: model.version,
        embedding: Buffer.from(e.embedding.buffer.slice(e.embedding.byteOffset, e.embedding.byteOffset + 4096)).toString('base64'),
        crop: null,
        crop_rect: null,
      }),
    );
    lines.push(JSON.stringify({ subject: 'astronaut', image: photo('skimage/astronaut.png').toString('base64') }));
    const importing = first.import(lines.join('\n'), false);
    expect(first.updating).toBe(false); // embedding the photo line: predictions are still served
    const r = await importing;
    expect(r).toEqual({ added: 601, total: 601 });
    expect(await probe).toBeInstanceOf(GalleryBusyError);
    const p1 = await first.predict(photo('skimage/astronaut.png'));
    expect(p1.face && p1.subject).toBe('astronaut');
    const removed = await first.remove(entries[0]!.subject);
    expect(removed.length).toBeGreaterThan(0);
    await first.close();

    const second = await open(await SqliteGalleryStore.open(dir));
    expect(second.size).toBe(601 - removed.length);
    const p2 = await second.predict(photo('skimage/astronaut.png'));
    expect(p2.face && [p2.subject, p2.sampleId]).toEqual(p1.face && [p1.subject, p1.sampleId]);
    expect(second.subjects().some((s) => s.subject === entries[0]!.subject)).toBe(false);
    // The first server saved its graph when it closed: the second loaded it as it was.
    expect(log.filter((m) => m.startsWith('gallery load: '))).toEqual([
      expect.stringMatching(/^gallery load: 0 samples in .* s, HNSW graph built \(no saved graph\)$/),
      expect.stringMatching(/^gallery load: \d+ samples in .* s, HNSW graph loaded \(0 rows patched\)$/),
    ]);
    await second.close();
    // A sample committed to the store that the saved graph never saw (a crash before the save): found and added.
    const simm = photo('dlib/johns/John_Simm/000306_00470222.jpg');
    const embedding = (await engine.embedFace(simm)).embedding!;
    const store = await SqliteGalleryStore.open(dir);
    await store.add({ subject: 'late', createdAt: 1, model: model.model, modelVersion: model.version, embedding, crop: null, cropRect: null });
    const third = await open(store);
    expect(log.at(-1)).toMatch(/HNSW graph loaded \(1 rows patched\)$/);
    const p3 = await third.predict(simm);
    expect(p3.face && [p3.subject, (p3.distance ?? Infinity) < 1]).toEqual(['late', true]);
    await third.close();
  });
});
