// The enrolment quality thresholds (src/gallery/sample-quality.ts): sharpness and face size of the test photos and
// of degraded copies of them, and what the degradation does to recognition.
//
//   node dist/tools/sample-quality.js            (after `node scripts/setup/setup.mjs --test` and `npm run build:ts`)
//   node dist/tools/sample-quality.js --cost     only the time of one measure (jpeg-js decode + Laplacian) per crop
//
// Photos: every face photo of test/data (dlib's johns: 5 people x 11 tight crops; dlib's group photos, first face;
// skimage's astronaut). Degraded copies, made in JS (testkit/degraded-photos.ts): Gaussian blur of sigma 1 to
// 4 px, and shrinks that bring the face box's side to 48 down to 24 px. For each: the face found or not, its side,
// the sharpness of the kept crop (what enrolment measures), and, for the johns, whether the degraded copy still
// matches its own person among the 54 other johns' originals within the accept threshold (105): a copy that does
// not is a sample that would not recognise its person.
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { calibratedDistance, Engine } from '../src/index.js';
import { EER_DISTANCE } from '../src/engine/face-embedding.js';
import { MIN_FACE_SIDE, MIN_SHARPNESS, sampleQuality } from '../src/gallery/sample-quality.js';
import { blurred, jpegOf, shrunk } from '../testkit/degraded-photos.js';
import { facePhotos } from '../testkit/face-corpus.js';
import { cosine } from '../testkit/face-verification.js';
import { decode } from '../testkit/vga-photos.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const dataDir = join(root, 'test', 'data');
const BLURS = [1, 2, 3, 4];
const SIDES = [48, 40, 32, 24];

interface Measured {
  found: boolean;
  side: number;
  sharpness: number;
  /** The engine's own measure on the decoded photo (EmbeddedFace.sharpness), what recognition judges by. */
  nativeSharpness: number;
  embedding: Float32Array | null;
}

async function measure(engine: Engine, bytes: Buffer): Promise<Measured> {
  const r = await engine.embedFace(bytes, { keepCrop: true });
  if (!r.face || !r.crop || !r.embedding) return { found: false, side: 0, sharpness: 0, nativeSharpness: 0, embedding: null };
  const q = sampleQuality(r.crop.jpeg, r.crop.rect);
  const [l, t, rr, b] = r.face.rect;
  return { found: true, side: Math.min(rr - l, b - t), sharpness: q?.sharpness ?? 0, nativeSharpness: r.face.sharpness, embedding: r.embedding };
}

const pct = (values: number[], p: number) => {
  if (values.length === 0) return NaN;
  const s = [...values].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(p * (s.length - 1) + 0.5))]!;
};

interface Row {
  what: string;
  measured: Measured[];
  /** Per john: the degraded copy's nearest other john is its own person, within the accept threshold. */
  matched: boolean[];
}

function report(rows: Row[], scale: number): void {
  console.log(
    '| photos | faces found | face side p50 | sharpness min | p10 | p50 | engine sharpness p10 | p50 | refused (side or sharpness) | johns matched (rank 1, d <= 105) |',
  );
  console.log('|---|---|---|---|---|---|---|---|---|---|');
  for (const r of rows) {
    const found = r.measured.filter((m) => m.found);
    const sharp = found.map((m) => m.sharpness);
    const native = found.map((m) => m.nativeSharpness);
    const refused = found.filter((m) => m.side < MIN_FACE_SIDE || m.sharpness < MIN_SHARPNESS).length;
    const ok = r.matched.filter(Boolean).length;
    console.log(
      `| ${r.what} | ${found.length}/${r.measured.length} | ${pct(
        found.map((m) => m.side),
        0.5,
      )} | ${Math.min(...sharp).toFixed(0)} | ${pct(sharp, 0.1).toFixed(0)} | ${pct(sharp, 0.5).toFixed(0)} | ${pct(native, 0.1).toFixed(0)} | ${pct(native, 0.5).toFixed(0)} | ${refused} | ${ok}/${r.matched.length} |`,
    );
  }
  console.log(`\nthresholds: face side >= ${MIN_FACE_SIDE} px, sharpness >= ${MIN_SHARPNESS}; distance scale ${scale}`);
}

interface Probe {
  side: number;
  sharpness: number;
  matched: boolean;
}

/** Johns probes whose face was found, in bands of face side and of engine sharpness: how many still match right. */
function reportProbes(probes: Probe[]): void {
  const band = (what: string, keep: (p: Probe) => boolean) => {
    const inBand = probes.filter(keep);
    const ok = inBand.filter((p) => p.matched).length;
    console.log(`| ${what} | ${inBand.length} | ${ok} | ${inBand.length ? ((100 * ok) / inBand.length).toFixed(0) : '-'}% |`);
  };
  console.log('\n| johns probes (face found), by what recognition judges | probes | matched right | share |');
  console.log('|---|---|---|---|');
  const sides = [0, 28, 32, 36, 40, 48, Infinity];
  for (let i = 0; i + 1 < sides.length; i++)
    band(`face side ${sides[i]}-${sides[i + 1]! - 1} px`, (p) => p.side >= sides[i]! && p.side < sides[i + 1]!);
  const sharp = [0, 5, 8, 10, 12, 15, 20, 30, Infinity];
  const big = (p: Probe) => p.side >= MIN_FACE_SIDE;
  for (let i = 0; i + 1 < sharp.length; i++) {
    band(
      `side >= ${MIN_FACE_SIDE}, engine sharpness ${sharp[i]}-${sharp[i + 1]}`,
      (p) => big(p) && p.sharpness >= sharp[i]! && p.sharpness < sharp[i + 1]!,
    );
  }
}

/** Milliseconds of sampleQuality() per crop of the original photos: p50 and max over the photos, 20 runs each. */
async function cost(engine: Engine, files: string[]): Promise<void> {
  const times: number[] = [];
  const sides: number[] = [];
  for (const f of files) {
    const r = await engine.embedFace(jpegOf(decode(join(dataDir, f))), { keepCrop: true });
    if (!r.crop) continue;
    sampleQuality(r.crop.jpeg, r.crop.rect); // warm
    const t0 = performance.now();
    for (let i = 0; i < 20; i++) sampleQuality(r.crop.jpeg, r.crop.rect);
    times.push((performance.now() - t0) / 20);
    sides.push(r.crop.rect[2] - r.crop.rect[0]);
  }
  console.log(
    `sampleQuality per crop (${times.length} crops, face box ${Math.min(...sides)}-${Math.max(...sides)} px in the crop): p50 ${pct(times, 0.5).toFixed(1)} ms, max ${Math.max(...times).toFixed(1)} ms`,
  );
}

async function main(): Promise<void> {
  const engine = await Engine.open({ workers: 1 });
  if (process.argv.includes('--cost')) {
    await cost(engine, facePhotos(dataDir));
    await engine.close();
    return;
  }
  const scale = engine.faceEmbedder()!.distanceScale;
  const files = facePhotos(dataDir);
  const johns = files.filter((f) => f.includes('johns'));
  const who = (f: string) => f.split('/').at(-2)!;
  const originals = new Map<string, Measured>();
  for (const f of files) originals.set(f, await measure(engine, jpegOf(decode(join(dataDir, f)))));
  const matches = (file: string, m: Measured): boolean => {
    if (!m.embedding) return false;
    let best = { d: Infinity, file: '' };
    for (const other of johns) {
      const e = originals.get(other)!.embedding;
      if (other === file || !e) continue;
      const d = calibratedDistance(cosine(m.embedding, e), scale);
      if (d < best.d) best = { d, file: other };
    }
    return who(best.file) === who(file) && best.d <= EER_DISTANCE;
  };
  // Every john probe (originals and degraded copies) by the measures recognition judges by.
  const probes: Probe[] = [];
  const probe = (m: Measured, matched: boolean): boolean => {
    if (m.found) probes.push({ side: m.side, sharpness: m.nativeSharpness, matched });
    return matched;
  };
  for (const f of johns) probe(originals.get(f)!, matches(f, originals.get(f)!));
  const rows: Row[] = [{ what: 'originals (JPEG 90)', measured: [...originals.values()], matched: johns.map((f) => matches(f, originals.get(f)!)) }];
  for (const sigma of BLURS) {
    const measured: Measured[] = [];
    const matched: boolean[] = [];
    for (const f of files) {
      const m = await measure(engine, jpegOf(blurred(decode(join(dataDir, f)), sigma)));
      measured.push(m);
      if (johns.includes(f)) matched.push(probe(m, matches(f, m)));
    }
    rows.push({ what: `blur sigma ${sigma} px`, measured, matched });
  }
  for (const side of SIDES) {
    const measured: Measured[] = [];
    const matched: boolean[] = [];
    for (const f of files) {
      const o = originals.get(f)!;
      if (!o.found || o.side <= side) continue;
      const m = await measure(engine, jpegOf(shrunk(decode(join(dataDir, f)), o.side / side)));
      measured.push(m);
      if (johns.includes(f)) matched.push(probe(m, matches(f, m)));
    }
    rows.push({ what: `face shrunk to ${side} px`, measured, matched });
  }
  report(rows, scale);
  reportProbes(probes);
  await engine.close();
}

await main();
