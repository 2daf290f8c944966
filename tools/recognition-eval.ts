// Recognition as a camera sees it: enrolled people recognised on other photos of theirs, changed as a camera
// changes a face (turned in the image plane, small, JPEG quality 30, blurred, dim), and strangers that must not be
// named. For each embedder, precision and alignment, and each matching rule:
//   - rank-1 per change (the nearest subject is the right one),
//   - the open-set equal error rate (a genuine probe rejected or named wrong, against a stranger named),
//   - at the server's threshold (105) and at the rule's own threshold (its EER point on the calibration half):
//     strangers named (false accepts) and genuine probes not named right (false rejects).
// Calibration and scoring use different photos: per john, photos 1-3 are enrolled, 4-7 calibrate, 8-11 are scored;
// the strangers of every other group photo calibrate, the rest are scored.
//
//   node dist/tools/recognition-eval.js [--quick] [--only TEXT]     (after `node scripts/setup/setup.mjs --test`)
// --only: the configurations whose name contains TEXT (e.g. --only mobile).
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { calibratedDistance, Engine, type EmbedFaceOptions, type FaceEmbedderModel, type Precision } from '../src/index.js';
import { EER_DISTANCE } from '../src/engine/face-embedding.js';
import { cosine, equalErrorRate, loadJohns } from '../testkit/face-verification.js';
import { decode, type Rgba } from '../testkit/vga-photos.js';
import { CAMERA_CHANGES, type CameraChange } from './camera-changes.js';
import { jpegOf } from '../testkit/degraded-photos.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const dataDir = join(root, 'test', 'data');

interface Probe {
  /** The john it shows, or null for a stranger. */
  subject: string | null;
  change: string;
  half: 'calibration' | 'scored';
  bytes: Buffer;
}

/** A face of a group photo, cut out with a margin of its own size around it, as its own JPEG. */
function cutFace(src: Rgba, rect: readonly number[]): Rgba {
  const [l, t, r, b] = rect as [number, number, number, number];
  const side = Math.max(r - l, b - t) * 2;
  const cx = (l + r) / 2;
  const cy = (t + b) / 2;
  const x0 = Math.max(0, Math.round(cx - side / 2));
  const y0 = Math.max(0, Math.round(cy - side / 2));
  const x1 = Math.min(src.width, Math.round(cx + side / 2));
  const y1 = Math.min(src.height, Math.round(cy + side / 2));
  const out = new Uint8Array((x1 - x0) * (y1 - y0) * 4);
  for (let y = y0; y < y1; y++) out.set(src.data.subarray((y * src.width + x0) * 4, (y * src.width + x1) * 4), (y - y0) * (x1 - x0) * 4);
  return { width: x1 - x0, height: y1 - y0, data: out };
}

const toJpeg = (img: Rgba) => jpegOf(img, 92);

/** The strangers: every face at least 28 px wide of the test photos that show no john, each with its half. */
async function strangerFaces(engine: Engine): Promise<{ face: Rgba; half: Probe['half'] }[]> {
  const files = readdirSync(join(dataDir, 'dlib', 'faces'))
    .filter((n) => /\.jpe?g$/i.test(n) && !n.startsWith('dogs'))
    .sort()
    .map((n) => join('dlib', 'faces', n));
  files.push(join('darknet', 'person.jpg'), join('skimage', 'astronaut.png'));
  const out: { face: Rgba; half: Probe['half'] }[] = [];
  for (const [i, file] of files.entries()) {
    const src = decode(join(dataDir, file));
    for (const face of (await engine.detectFaces(readFileSync(join(dataDir, file)))).faces) {
      if (face.rect[2] - face.rect[0] < 28) continue;
      out.push({ face: cutFace(src, face.rect), half: i % 2 === 0 ? 'calibration' : 'scored' });
    }
  }
  return out;
}

/** Every probe: the johns' photos 4-11 and every stranger, each under every camera change. */
export interface EvalSet {
  enrolled: { subject: string; bytes: Buffer }[];
  probes: Probe[];
}

export async function evalSet(engine: Engine, changes: readonly CameraChange[]): Promise<EvalSet> {
  const johns = loadJohns(dataDir);
  const enrolled: { subject: string; bytes: Buffer }[] = [];
  const out: Probe[] = [];
  const index = new Map<string, number>();
  for (const photo of johns) {
    const n = index.get(photo.subject) ?? 0;
    index.set(photo.subject, n + 1);
    if (n < 3) {
      enrolled.push({ subject: photo.subject, bytes: photo.bytes });
      continue;
    }
    const img = decode(photo.file);
    for (const change of changes) {
      out.push({ subject: photo.subject, change: change.name, half: n < 7 ? 'calibration' : 'scored', bytes: toJpeg(change.apply(img, n)) });
    }
  }
  for (const [n, s] of (await strangerFaces(engine)).entries()) {
    for (const change of changes) out.push({ subject: null, change: change.name, half: s.half, bytes: toJpeg(change.apply(s.face, n)) });
  }
  return { enrolled, probes: out };
}

interface Sample {
  subject: string;
  embedding: Float32Array;
}

/** Per subject, the rule's distance of a probe to that subject. */
type Rule = { name: string; distances: (probe: Float32Array, gallery: readonly Sample[], scale: number) => Map<string, number> };

const bySubject = (gallery: readonly Sample[]) => {
  const m = new Map<string, Float32Array[]>();
  for (const s of gallery) m.set(s.subject, [...(m.get(s.subject) ?? []), s.embedding]);
  return m;
};

function meanOfNearest(k: number): Rule['distances'] {
  return (probe, gallery, scale) => {
    const out = new Map<string, number>();
    for (const [subject, list] of bySubject(gallery)) {
      const d = list
        .map((e) => calibratedDistance(cosine(probe, e), scale))
        .sort((a, b) => a - b)
        .slice(0, k);
      out.set(subject, d.reduce((a, b) => a + b, 0) / d.length);
    }
    return out;
  };
}

const RULES: Rule[] = [
  { name: 'nearest sample (today)', distances: meanOfNearest(1) },
  { name: 'mean of 2 nearest', distances: meanOfNearest(2) },
  {
    name: 'centroid',
    distances: (probe, gallery, scale) => {
      const out = new Map<string, number>();
      for (const [subject, list] of bySubject(gallery)) {
        const c = new Float32Array(list[0]!.length);
        for (const e of list) for (let i = 0; i < c.length; i++) c[i]! += e[i]!;
        const norm = Math.hypot(...c);
        out.set(
          subject,
          calibratedDistance(
            cosine(
              probe,
              c.map((v) => v / norm),
            ),
            scale,
          ),
        );
      }
      return out;
    },
  },
];

interface Scored {
  subject: string | null;
  change: string;
  half: Probe['half'];
  /** null: no face found. */
  best: { subject: string; distance: number; margin: number } | null;
}

/** A probe is named when its best subject is within `threshold` and ahead of the second by at least `margin`. */
function named(s: Scored, threshold: number, margin: number): string | null {
  return s.best && s.best.distance <= threshold && s.best.margin >= margin ? s.best.subject : null;
}

function rates(scored: readonly Scored[], threshold: number, margin: number): { far: number; frr: number; strangers: number; genuine: number } {
  const strangers = scored.filter((s) => s.subject === null);
  const genuine = scored.filter((s) => s.subject !== null);
  return {
    far: strangers.filter((s) => named(s, threshold, margin) !== null).length / strangers.length,
    frr: genuine.filter((s) => named(s, threshold, margin) !== s.subject).length / genuine.length,
    strangers: strangers.length,
    genuine: genuine.length,
  };
}

/** The open-set EER: a genuine probe's score is its distance when its best subject is right, else rejected (Infinity). */
function openSetEer(scored: readonly Scored[]): { eer: number; threshold: number } {
  const genuine = scored.filter((s) => s.subject !== null).map((s) => (s.best && s.best.subject === s.subject ? s.best.distance : Infinity));
  const impostor = scored.filter((s) => s.subject === null && s.best).map((s) => s.best!.distance);
  return equalErrorRate(genuine, impostor);
}

export interface EvalConfig {
  name: string;
  model: FaceEmbedderModel;
  precision: Precision;
  embed: EmbedFaceOptions;
}

export const CONFIGS: EvalConfig[] = [
  { name: 'faceres int8, box crop (before)', model: 'faceres', precision: 'int8', embed: { align: false, rotatedPasses: false } },
  { name: 'faceres int8, aligned', model: 'faceres', precision: 'int8', embed: { rotatedPasses: false } },
  { name: 'faceres int8, aligned + turned passes (default)', model: 'faceres', precision: 'int8', embed: {} },
  { name: 'faceres fp32, aligned + turned passes', model: 'faceres', precision: 'fp32', embed: {} },
  { name: 'faceres-deep fp32, aligned + turned passes', model: 'faceres-deep', precision: 'fp32', embed: {} },
  // the package's two 112 px embedders (no int8 files: fp32 only)
  { name: 'mobilefacenet fp32, aligned + turned passes', model: 'mobilefacenet', precision: 'fp32', embed: {} },
  { name: 'mobilefacenet fp32, box crop', model: 'mobilefacenet', precision: 'fp32', embed: { align: false, rotatedPasses: false } },
  { name: 'mobileface fp32, aligned + turned passes', model: 'mobileface', precision: 'fp32', embed: {} },
  { name: 'mobileface fp32, box crop', model: 'mobileface', precision: 'fp32', embed: { align: false, rotatedPasses: false } },
];

const pct = (v: number) => `${(v * 100).toFixed(1)}%`;

export async function evaluate(config: EvalConfig, set: EvalSet, changes: readonly CameraChange[]): Promise<string[]> {
  const engine = await Engine.open({ faceEmbedder: config.model, precision: config.precision });
  try {
    const scale = engine.faceEmbedder()!.distanceScale;
    const { enrolled, probes: all } = set;
    const gallery: Sample[] = [];
    for (const e of enrolled) {
      const r = await engine.embedFace(e.bytes, config.embed);
      if (r.embedding) gallery.push({ subject: e.subject, embedding: r.embedding });
    }
    const embedded: { probe: Probe; embedding: Float32Array | null }[] = [];
    for (const probe of all) embedded.push({ probe, embedding: (await engine.embedFace(probe.bytes, config.embed)).embedding ?? null });
    const lines: string[] = [];
    for (const rule of RULES) {
      const scored: Scored[] = embedded.map(({ probe, embedding }) => {
        if (!embedding) return { subject: probe.subject, change: probe.change, half: probe.half, best: null };
        const ranked = [...rule.distances(embedding, gallery, scale)].sort((a, b) => a[1] - b[1]);
        const [first, second] = ranked;
        return {
          subject: probe.subject,
          change: probe.change,
          half: probe.half,
          best: { subject: first![0], distance: first![1], margin: second ? second[1] - first![1] : Infinity },
        };
      });
      const calibration = scored.filter((s) => s.half === 'calibration');
      const test = scored.filter((s) => s.half === 'scored');
      const own = openSetEer(calibration).threshold;
      const eer = openSetEer(test);
      const at105 = rates(test, EER_DISTANCE, 0);
      const atOwn = rates(test, own, 0);
      const withMargin = rates(test, own, 2);
      const rank1 = changes.map((c) => {
        const g = test.filter((s) => s.subject !== null && s.change === c.name);
        return pct(g.filter((s) => s.best?.subject === s.subject).length / g.length);
      });
      lines.push(
        `| ${config.name} | ${rule.name} | ${pct(eer.eer)} | ${pct(at105.far)} / ${pct(at105.frr)} | ${own.toFixed(1)}: ${pct(atOwn.far)} / ${pct(atOwn.frr)} | ${pct(withMargin.far)} / ${pct(withMargin.frr)} | ${rank1.join(' | ')} |`,
      );
      if (rule === RULES[0]) {
        lines.unshift(
          `<!-- ${config.name}: ${gallery.length} samples enrolled, ${at105.genuine} genuine and ${at105.strangers} stranger probes scored, ${embedded.filter((e) => !e.embedding).length} probes with no face -->`,
        );
      }
    }
    return lines;
  } finally {
    await engine.close();
  }
}

async function main(): Promise<void> {
  const quick = process.argv.includes('--quick');
  const changes = quick ? CAMERA_CHANGES.slice(0, 2) : CAMERA_CHANGES;
  const header = `| embedder | matching rule | open-set EER | at 105: strangers named / genuine not named right | own threshold: the same | own threshold, margin 2 | ${changes.map((c) => `rank-1 ${c.name}`).join(' | ')} |`;
  console.log(header);
  console.log(header.replace(/[^|]+/g, ' --- '));
  const finder = await Engine.open({});
  const set = await evalSet(finder, changes);
  await finder.close();
  const at = process.argv.indexOf('--only');
  const only = at > 0 ? (process.argv[at + 1] ?? '') : '';
  for (const config of CONFIGS.filter((c) => c.name.includes(only))) for (const line of await evaluate(config, set, changes)) console.log(line);
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  main().catch((e) => {
    console.error(e);
    process.exit(1);
  });
}
