// The DeepStack recognition confidence (src/server/deepstack/similarity.ts): derives its width from the calibration
// set and measures it, beside the straight line it replaced, on people who are not in that set.
//
//   node dist/tools/deepstack-confidence.js [--people DIR]...     (after `node scripts/setup/setup.mjs --test`)
//
// 1. Derivation, on the calibration set (dlib's johns, 5 people x 11, the photos that fixed the distance scale):
//    every pair's calibrated distance; w = pooled variance / (impostor mean - genuine mean), the slope of the
//    log-likelihood ratio of two equal-variance normal fits.
// 2. Strangers of the test photos: every john enrolled (55 samples), then every face of the other test photos
//    (dlib's group photos, darknet's person.jpg, skimage's astronaut; nobody there is a john) as a probe.
// 3. Each --people DIR (one folder per person, photos inside; none of them a john): half the people enrolled
//    with one photo each, the other half strangers; every rotation of who is enrolled and of which of the first
//    five photos enrols them. A probe is named when its nearest enrolled sample's confidence reaches the threshold
//    (the rule of POST /v1/vision/face/recognize); a genuine probe is named right when that sample is its own person.
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { calibratedDistance, Engine } from '../src/index.js';
import { CONFIDENCE_WIDTH, DEEPSTACK_RECOGNITION_THRESHOLD, EER_DISTANCE, similarityFromDistance } from '../src/server/deepstack/similarity.js';
import { cosine, embedAll, loadJohns, pairDistances } from '../testkit/face-verification.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const dataDir = join(root, 'test', 'data');
/** Home Assistant's face integration (deepstack-python's default) and DeepStack's own default. */
const THRESHOLDS = [0.45, DEEPSTACK_RECOGNITION_THRESHOLD] as const;

/** The confidence before: a straight line through (0, 1) and (105, 0.67). */
const straightLine = (d: number) => Math.max(0, 1 - ((1 - DEEPSTACK_RECOGNITION_THRESHOLD) * d) / EER_DISTANCE);
/** The same logistic with w twice as wide: how much the figures hang on w. */
const twiceAsWide = (d: number) => 1 / (1 + (0.33 / 0.67) * Math.exp((d - EER_DISTANCE) / (2 * CONFIDENCE_WIDTH)));
export const CURVES = {
  'straight line (before)': straightLine,
  [`logistic, w = ${CONFIDENCE_WIDTH} (in use)`]: similarityFromDistance,
  [`logistic, w = ${2 * CONFIDENCE_WIDTH} (check: twice as wide)`]: twiceAsWide,
} as const;

interface Probe {
  /** Calibrated distance to the nearest enrolled sample. */
  distance: number;
  /** Whether that sample is the probe's own person (false for a stranger). */
  right: boolean;
  stranger: boolean;
  /** The probe's person and the nearest enrolled sample's person (section 3). */
  who?: string;
  nearestWho?: string;
}

export interface Counts {
  strangers: number;
  genuine: number;
  /** Per threshold: strangers named, genuine probes named right, genuine probes named wrong. */
  at: Record<string, { strangersNamed: number; genuineRight: number; genuineWrong: number }>;
}

export function count(probes: Probe[], curve: (d: number) => number): Counts {
  const at: Counts['at'] = {};
  for (const t of THRESHOLDS) {
    const named = probes.filter((p) => curve(p.distance) >= t);
    at[t] = {
      strangersNamed: named.filter((p) => p.stranger).length,
      genuineRight: named.filter((p) => !p.stranger && p.right).length,
      genuineWrong: named.filter((p) => !p.stranger && !p.right).length,
    };
  }
  return { strangers: probes.filter((p) => p.stranger).length, genuine: probes.filter((p) => !p.stranger).length, at };
}

interface Person {
  name: string;
  embeddings: Float32Array[];
}

function nearest(probe: Float32Array, gallery: { person: string; embedding: Float32Array }[], scale: number): { person: string; distance: number } {
  let best = { person: '', distance: Infinity };
  for (const g of gallery) {
    const d = calibratedDistance(cosine(probe, g.embedding), scale);
    if (d < best.distance) best = { person: g.person, distance: d };
  }
  return best;
}

/** Section 3's protocol: every rotation of the enrolled half, and of the enrolling photo among the first five. */
export function rotations(people: Person[], scale: number): Probe[] {
  const probes: Probe[] = [];
  const half = Math.floor(people.length / 2);
  for (let r = 0; r < people.length; r++) {
    const enrolled = Array.from({ length: half }, (_, i) => people[(r + i) % people.length]!);
    for (let e = 0; e < 5; e++) {
      const gallery = enrolled.filter((p) => p.embeddings.length > e).map((p) => ({ person: p.name, embedding: p.embeddings[e]! }));
      for (const p of people) {
        const isEnrolled = enrolled.includes(p) && p.embeddings.length > e;
        p.embeddings.forEach((embedding, i) => {
          if (isEnrolled && i === e) return;
          const m = nearest(embedding, gallery, scale);
          probes.push({
            distance: m.distance,
            right: isEnrolled && m.person === p.name,
            stranger: !enrolled.includes(p),
            who: p.name,
            nearestWho: m.person,
          });
        });
      }
    }
  }
  return probes;
}

async function loadPeople(engine: Engine, dir: string): Promise<{ people: Person[]; photos: number; noFace: number }> {
  const people: Person[] = [];
  let photos = 0;
  let noFace = 0;
  for (const name of readdirSync(dir, { withFileTypes: true })
    .filter((d) => d.isDirectory())
    .map((d) => d.name)
    .sort()) {
    const embeddings: Float32Array[] = [];
    for (const f of readdirSync(join(dir, name))
      .filter((n) => /\.(jpe?g|png)$/i.test(n))
      .sort()) {
      photos++;
      const r = await engine.embedFace(readFileSync(join(dir, name, f)));
      if (r.embedding) embeddings.push(r.embedding);
      else noFace++;
    }
    if (embeddings.length >= 2) people.push({ name, embeddings });
  }
  return { people, photos, noFace };
}

/** Every face (at least 24 px wide) of the test photos that show no john. */
async function testPhotoStrangers(engine: Engine): Promise<Float32Array[]> {
  const files = readdirSync(join(dataDir, 'dlib', 'faces'))
    .filter((n) => /\.jpe?g$/i.test(n) && !n.startsWith('dogs'))
    .sort()
    .map((n) => join(dataDir, 'dlib', 'faces', n));
  files.push(join(dataDir, 'darknet', 'person.jpg'), join(dataDir, 'skimage', 'astronaut.png'));
  const out: Float32Array[] = [];
  for (const file of files) {
    const bytes = readFileSync(file);
    for (const face of (await engine.detectFaces(bytes)).faces) {
      if (face.rect[2] - face.rect[0] < 24) continue;
      const r = await engine.embedFace(bytes, { rect: face.rect });
      if (r.embedding) out.push(r.embedding);
    }
  }
  return out;
}

const mean = (a: number[]) => a.reduce((x, y) => x + y, 0) / a.length;
const sumSq = (a: number[]) => {
  const m = mean(a);
  return a.reduce((x, y) => x + (y - m) ** 2, 0);
};
const share = (n: number, of: number) => `${n} / ${of} (${((100 * n) / of).toFixed(1)}%)`;

function printTable(title: string, probes: Probe[]): void {
  console.log(`\n${title}`);
  console.log(
    '| curve | strangers named at 0.45 | strangers named at 0.67 | genuine named right at 0.67 | genuine named right at 0.45 | genuine named wrong at 0.45 |',
  );
  console.log('|---|---|---|---|---|---|');
  for (const [name, curve] of Object.entries(CURVES)) {
    const c = count(probes, curve);
    const [lo, hi] = THRESHOLDS.map((t) => c.at[t]!);
    const g = (n: number) => (c.genuine ? share(n, c.genuine) : '-');
    console.log(
      `| ${name} | ${share(lo!.strangersNamed, c.strangers)} | ${share(hi!.strangersNamed, c.strangers)} | ${g(hi!.genuineRight)} | ${g(lo!.genuineRight)} | ${g(lo!.genuineWrong)} |`,
    );
  }
  // Which people the strangers named at 0.45 by the curve in use are, and whom they were taken for.
  const pairs = new Map<string, number>();
  for (const p of probes) {
    if (!p.stranger || p.who === undefined || similarityFromDistance(p.distance) < THRESHOLDS[0]) continue;
    const key = `${p.who} as ${p.nearestWho}`;
    pairs.set(key, (pairs.get(key) ?? 0) + 1);
  }
  const top = [...pairs.entries()].sort((a, b) => b[1] - a[1]).slice(0, 4);
  if (top.length) console.log(`strangers named at 0.45 (logistic), most often: ${top.map(([k, n]) => `${k} ${n}`).join('; ')}`);
}

async function main(): Promise<void> {
  const dirs: string[] = [];
  const args = process.argv.slice(2);
  for (let i = 0; i < args.length; i++) {
    if (args[i] === '--people' && args[i + 1]) dirs.push(args[++i]!);
    else throw new Error(`unknown argument ${args[i]}: usage: deepstack-confidence.js [--people DIR]...`);
  }
  const engine = await Engine.open({ workers: 2 });
  try {
    const embedder = engine.faceEmbedder()!;
    const scale = embedder.distanceScale;
    const { embedded } = await embedAll(engine, loadJohns(dataDir));
    const pairs = pairDistances(embedded);
    const genuine = pairs.genuine.map((c) => calibratedDistance(1 - c, scale));
    const impostor = pairs.impostor.map((c) => calibratedDistance(1 - c, scale));
    const pooled = (sumSq(genuine) + sumSq(impostor)) / (genuine.length + impostor.length - 2);
    const w = pooled / (mean(impostor) - mean(genuine));
    console.log(`model ${embedder.model} (distance scale ${scale}); calibration set: dlib's johns, ${embedded.length} photos`);
    console.log(`| pairs | genuine mean | impostor mean | pooled sd | w = variance / mean gap | w in similarity.ts |`);
    console.log('|---|---|---|---|---|---|');
    console.log(
      `| ${genuine.length} genuine, ${impostor.length} impostor | ${mean(genuine).toFixed(1)} | ${mean(impostor).toFixed(1)} | ${Math.sqrt(pooled).toFixed(1)} | ${w.toFixed(2)} | ${CONFIDENCE_WIDTH} |`,
    );

    const gallery = embedded.map((p) => ({ person: p.subject, embedding: p.embedding }));
    const strangers = await testPhotoStrangers(engine);
    printTable(
      `Strangers of the test photos (${strangers.length} faces of dlib's group photos, darknet person.jpg, astronaut) against all 55 johns enrolled`,
      strangers.map((e) => ({ distance: nearest(e, gallery, scale).distance, right: false, stranger: true })),
    );

    for (const dir of dirs) {
      const { people, photos, noFace } = await loadPeople(engine, dir);
      printTable(
        `${dir}: ${people.length} people, ${photos} photos (${noFace} without a face); ${Math.floor(people.length / 2)} enrolled with one photo each, every rotation`,
        rotations(people, scale),
      );
    }
  } finally {
    await engine.close();
  }
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  main().catch((e: unknown) => {
    console.error(e);
    process.exit(1);
  });
}
