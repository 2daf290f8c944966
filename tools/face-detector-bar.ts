// Would a higher bar for the face detector drop the faces it reports on faceless photos, and keep the labelled faces?
// detectFaces with the defaults on dlib's annotated group photos (true positives at IoU >= 0.5), the johns (one face
// per photo) and the faceless photos (without the large wallpapers, where it reports none); then, for candidate
// bars of score, box size and landmark geometry, how many faces of each set each bar keeps (issue 48).
//   node dist/tools/face-detector-bar.js     (docs/models.md, "No face where there is none", reports a run)
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Engine, type Face } from '../src/index.js';
import { matchDetections, parseImglabXml, type Rect } from '../testkit/face-annotations.js';
import { ANNOTATION_FILES } from '../testkit/face-eval.js';
import { facelessPhotos } from '../testkit/faceless-photos.js';
import { loadJohns } from '../testkit/face-verification.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const DATA = path.join(ROOT, 'test', 'data');

interface Found {
  name: string;
  score: number;
  /** The box's longer side, px. */
  side: number;
  /** The eyes' distance over the box's width. */
  eyes: number;
  /** The ear tragions' distance over the box's width. */
  ears: number;
}

function found(name: string, f: Face): Found {
  const [l, t, r, b] = f.rect;
  const k = f.keypoints;
  const apart = (i: number, j: number) => Math.hypot(k[2 * j]! - k[2 * i]!, k[2 * j + 1]! - k[2 * i + 1]!) / (r - l);
  return { name, score: f.score, side: Math.max(r - l, b - t), eyes: apart(0, 1), ears: apart(4, 5) };
}

const BARS: [string, (f: Found) => boolean][] = [
  ['none (the default)', () => true],
  ['score >= 0.65', (f) => f.score >= 0.65],
  ['score >= 0.70', (f) => f.score >= 0.7],
  ['score >= 0.76', (f) => f.score >= 0.76],
  ['box >= 28 px', (f) => f.side >= 28],
  ['box >= 32 px', (f) => f.side >= 32],
  ['eyes >= 0.2 of the box width apart', (f) => f.eyes >= 0.2],
  ['ears >= 0.5 of the box width apart', (f) => f.ears >= 0.5],
];

const engine = await Engine.open({ workers: 2, poseModel: null, objectDetector: null, faceEmbedder: null });
const dlib: Found[] = [];
let dlibFaces = 0;
for (const xml of ANNOTATION_FILES) {
  for (const image of parseImglabXml(path.join(DATA, xml))) {
    dlibFaces += image.boxes.length;
    for (const f of (await engine.detectFaces(readFileSync(path.join(DATA, 'dlib/faces', image.file)))).faces) {
      if (matchDetections([f.rect as Rect], image.boxes, 0.5).truePositives) dlib.push(found(image.file, f));
    }
  }
}
const johnPhotos = loadJohns(DATA);
const johns: Found[] = [];
for (const p of johnPhotos) johns.push(...(await engine.detectFaces(p.bytes)).faces.map((f) => found(p.file, f)));
const faceless: Found[] = [];
for (const name of facelessPhotos(ROOT).filter((n) => !/^(mate|ukui|lomiri)\//.test(n))) {
  faceless.push(...(await engine.detectFaces(readFileSync(path.join(DATA, name)))).faces.map((f) => found(name, f)));
}
await engine.close();

console.log('| faceless face | score | box px | eyes apart / width | ears apart / width |\n|---|---|---|---|---|');
for (const f of faceless) console.log(`| ${f.name} | ${f.score.toFixed(2)} | ${f.side} | ${f.eyes.toFixed(2)} | ${f.ears.toFixed(2)} |`);
const range = (set: Found[], key: 'score' | 'side' | 'eyes' | 'ears') => {
  const v = set.map((f) => f[key]).sort((a, b) => a - b);
  return `${v[0]!.toFixed(2)}-${v.at(-1)!.toFixed(2)}`;
};
for (const key of ['score', 'side', 'eyes', 'ears'] as const) console.log(`${key}: dlib ${range(dlib, key)}, johns ${range(johns, key)}`);
console.log(`\n| bar | dlib faces kept (of ${dlibFaces}) | johns kept (of ${johnPhotos.length}) | faceless faces kept (of ${faceless.length}) |`);
console.log('|---|---|---|---|');
for (const [bar, keeps] of BARS) {
  const kept = faceless.filter(keeps).map((f) => path.basename(f.name));
  console.log(
    `| ${bar} | ${dlib.filter(keeps).length} | ${johns.filter(keeps).length} | ${kept.length}${kept.length ? ` (${kept.join(', ')})` : ''} |`,
  );
}
