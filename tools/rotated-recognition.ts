// Recognition of faces turned in the image plane, with and without alignment, on dlib's johns (5 people x 11
// photos): the first 3 photos of each person enrolled upright, the other 8 recognised turned by each angle (both
// ways; JS rotation, testkit/rotate-photo.ts). Per angle: rank-1 (the nearest sample is the right person) and
// the share named right under the 105 threshold. Then the equal error rate on all pairs of the upright photos, and
// the time a photo without a face costs with and without the turned detection passes, and what alignment costs an
// upright face. Run by `node dist/tools/calibrate-recognition.js --alignment` (the last alone: --alignment-cost).
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { median } from '../src/metrics/percentiles.js';
import { calibratedDistance, EER_DISTANCE } from '../src/engine/face-embedding.js';
import type { EmbedFaceOptions, Engine } from '../src/index.js';
import { cosine, errorRates, loadJohns, verificationReport, type LabelledPhoto } from '../testkit/face-verification.js';
import { rotatedPhoto } from '../testkit/rotate-photo.js';
import { VGA_FACE_PHOTO, vgaJpeg } from '../testkit/vga-photos.js';

export const ANGLES = [0, 15, 30, 45, 60];
const ENROLLED_PER_PERSON = 3;

/** How the faces are cut for the embedder: the three settings compared. */
export const ALIGNMENT_MODES: { name: string; options: EmbedFaceOptions }[] = [
  { name: 'box crop (before)', options: { align: false, rotatedPasses: false } },
  { name: 'aligned', options: { align: true, rotatedPasses: false } },
  { name: 'aligned + turned passes', options: { align: true, rotatedPasses: true } },
];

export interface AngleRow {
  mode: string;
  degrees: number;
  queries: number;
  noFace: number;
  rank1: number;
  namedUnder105: number;
}

interface Enrolled {
  subject: string;
  embedding: Float32Array;
}

async function enrol(engine: Engine, photos: LabelledPhoto[], options: EmbedFaceOptions): Promise<Enrolled[]> {
  const out: Enrolled[] = [];
  for (const p of photos) {
    const r = await engine.embedFace(p.bytes, options);
    if (r.embedding) out.push({ subject: p.subject, embedding: r.embedding });
  }
  return out;
}

/** Rank-1 and named-under-105 per angle magnitude (each query turned both ways) for one alignment mode. */
export async function rotatedRecognition(engine: Engine, dataDir: string, mode: (typeof ALIGNMENT_MODES)[number]): Promise<AngleRow[]> {
  const scale = engine.faceEmbedder()!.distanceScale;
  const johns = loadJohns(dataDir);
  const bySubject = new Map<string, LabelledPhoto[]>();
  for (const p of johns) bySubject.set(p.subject, [...(bySubject.get(p.subject) ?? []), p]);
  const gallery = await enrol(
    engine,
    [...bySubject.values()].flatMap((ps) => ps.slice(0, ENROLLED_PER_PERSON)),
    mode.options,
  );
  const queries = [...bySubject.values()].flatMap((ps) => ps.slice(ENROLLED_PER_PERSON));
  const rows: AngleRow[] = [];
  for (const degrees of ANGLES) {
    const row: AngleRow = { mode: mode.name, degrees, queries: 0, noFace: 0, rank1: 0, namedUnder105: 0 };
    for (const q of queries) {
      for (const turn of degrees === 0 ? [0] : [degrees, -degrees]) {
        row.queries++;
        const r = await engine.embedFace(rotatedPhoto(q.file, turn), mode.options);
        if (!r.embedding) {
          row.noFace++;
          continue;
        }
        let best = { subject: '', cosine: -2 };
        for (const g of gallery) {
          const c = cosine(r.embedding, g.embedding);
          if (c > best.cosine) best = { subject: g.subject, cosine: c };
        }
        if (best.subject !== q.subject) continue;
        row.rank1++;
        if (calibratedDistance(best.cosine, scale) <= EER_DISTANCE) row.namedUnder105++;
      }
    }
    rows.push(row);
  }
  return rows;
}

/** EER of all upright johns pairs, and the false accept / reject rates at 105, for one mode. */
export async function uprightErrorRates(engine: Engine, dataDir: string, options: EmbedFaceOptions) {
  const report = await verificationReport(engine, loadJohns(dataDir), options);
  const cosineAt105 = EER_DISTANCE / engine.faceEmbedder()!.distanceScale;
  return { ...report, at105: errorRates(report.genuine, report.impostor, cosineAt105) };
}

/**
 * What alignment costs an upright face: recognizeFace on the 640x480 face photo of the route bench (one face, one
 * enrolled sample), the box crop and the aligned cut interleaved call by call; medians after `warmUp` calls each.
 */
export async function uprightCostMs(engine: Engine, root: string, runs: number, warmUp = 30): Promise<{ box: number; aligned: number }> {
  const bytes = vgaJpeg(root, VGA_FACE_PHOTO);
  const gallery = engine.createGallery();
  gallery.add([{ id: 1, subject: 'astronaut', embedding: (await engine.embedFace(bytes)).embedding! }]);
  const times = { box: [] as number[], aligned: [] as number[] };
  for (let i = 0; i < warmUp + runs; i++) {
    for (const [key, options] of [
      ['box', { align: false }],
      ['aligned', {}],
    ] as const) {
      const t = performance.now();
      await engine.recognizeFace(bytes, gallery, options);
      if (i >= warmUp) times[key].push(performance.now() - t);
    }
  }
  return { box: median(times.box), aligned: median(times.aligned) };
}

/** Median time of embedFace on a photo without a face, `runs` times, with the given options. */
export async function noFaceMs(engine: Engine, dataDir: string, options: EmbedFaceOptions, runs: number): Promise<number> {
  const bytes = readFileSync(join(dataDir, 'skimage', 'rocket.jpg'));
  const times: number[] = [];
  for (let i = 0; i < runs; i++) {
    const t = performance.now();
    const r = await engine.embedFace(bytes, options);
    times.push(performance.now() - t);
    if (r.face) throw new Error('skimage/rocket.jpg gave a face: it is the no-face photo of this bench');
  }
  times.sort((a, b) => a - b);
  return times[Math.floor(times.length / 2)]!;
}

/** Faceless photos given a face by each face route's engine call (issue 48). */
export interface FacelessRow {
  photos: number;
  /** detectFaces with the defaults: POST /detector/detect/. */
  detector: string[];
  /** embedFace with the defaults, as recognition and enrolment call it (the recognize, register and trainer routes). */
  recognition: string[];
  /** embedFace without the turned passes: the whole-image pass and the padded one. */
  withoutTurnedPasses: string[];
  /** embedFace's face is none of detectFaces' (another box or score): enrolment would store what the detector does not report. */
  notTheDetectors: string[];
}

/** Runs every faceless photo (testkit/faceless-photos.ts) through the face routes' engine calls. */
export async function facelessFaces(engine: Engine, dataDir: string, names: readonly string[]): Promise<FacelessRow> {
  const row: FacelessRow = { photos: names.length, detector: [], recognition: [], withoutTurnedPasses: [], notTheDetectors: [] };
  for (const name of names) {
    const bytes = readFileSync(join(dataDir, name));
    const detected = (await engine.detectFaces(bytes)).faces;
    if (detected.length > 0) row.detector.push(name);
    const face = (await engine.embedFace(bytes)).face;
    if (face) row.recognition.push(name);
    if (face && !detected.some((f) => f.score === face.score && f.rect.every((v, i) => v === face.rect[i]))) row.notTheDetectors.push(name);
    if ((await engine.embedFace(bytes, { rotatedPasses: false })).face) row.withoutTurnedPasses.push(name);
  }
  return row;
}
