// Pose accuracy on the hand-checked person boxes (testkit/labels/objects.json, photos with `personsComplete`):
// per pose model, mode (whole image, or crops around the object detector's persons) and person limit, the
// labelled persons that got a pose, those under 120 px tall among them, poses that belong to no labelled
// person, and latency.
//
// A pose belongs to a person when it has at least MIN_KEYPOINTS confident keypoints (score >= the route's
// keypoint threshold) and most of them lie inside the person's box (grown by 10% on each side: wrists and
// ankles stick out of tight boxes). Each person takes at most one pose, greedily by that share.
//
//   node dist/bench/pose-accuracy.js [--quick]     the table alone (npm run bench prints it too)
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Engine, type ObjectDetectorModel, type Pose, type PoseMode, type PoseModel } from '../src/index.js';
import { ENGINE_DEFAULTS } from '../src/engine/limits.js';
import { findRoot } from '../models/model-packages.js';
import { median } from '../src/metrics/percentiles.js';
import { loadObjectLabels } from '../testkit/object-labels.js';
import { MIN_KEYPOINTS, scorePoses, SMALL_PERSON_PX, type PoseScore } from '../testkit/pose-scoring.js';
import { table } from '../testkit/table.js';

type Row = Record<string, string | number>;

const pct = (n: number, d: number) => `${n}/${d} (${d ? ((100 * n) / d).toFixed(0) : '-'}%)`;

/** The configurations compared: whole-image passes of each pose model, and person crops behind each person detector. */
const CONFIGS: { poseModel: PoseModel; mode: PoseMode; maxPoses: number; personDetector: ObjectDetectorModel | null }[] = [
  { poseModel: 'movenet-multipose', mode: 'whole', maxPoses: 6, personDetector: null },
  { poseModel: 'movenet-multipose', mode: 'whole', maxPoses: 20, personDetector: null },
  { poseModel: 'movenet-multipose-384', mode: 'whole', maxPoses: 20, personDetector: null },
  { poseModel: 'movenet-multipose-512', mode: 'whole', maxPoses: 20, personDetector: null },
  { poseModel: 'movenet-multipose', mode: 'persons', maxPoses: 20, personDetector: 'yolov5s-320' },
  { poseModel: 'movenet-multipose', mode: 'persons', maxPoses: 20, personDetector: 'yolov5s-416' },
  { poseModel: 'movenet-multipose', mode: 'persons', maxPoses: 20, personDetector: 'yolov5s' },
];

/** Every configuration on the photos whose persons are all labelled; latency is the p50 over those photos. */
export async function benchPoseAccuracy(root: string, opts: { quick?: boolean; threadsPerWorker?: number } = {}): Promise<Row[]> {
  const labels = loadObjectLabels(root);
  const photos = Object.entries(labels.photos)
    .filter(([, p]) => p.personsComplete)
    .map(([file, photo]) => ({ file, photo, bytes: readFileSync(join(root, 'test', 'data', file)) }));
  const rows: Row[] = [];
  for (const c of CONFIGS) {
    const engine = await Engine.open({
      workers: 1,
      threadsPerWorker: opts.threadsPerWorker ?? 2,
      poseModel: c.poseModel,
      objectDetector: null,
      personDetector: c.personDetector,
      faceEmbedder: null,
    });
    try {
      const results: Pose[][] = [];
      const ms: number[] = [];
      await engine.detectPoses(photos[0]!.bytes, { mode: c.mode }); // warm up outside the timing
      for (let pass = 0; pass < (opts.quick ? 1 : 3); pass++) {
        for (const [i, p] of photos.entries()) {
          const t = performance.now();
          results[i] = (await engine.detectPoses(p.bytes, { mode: c.mode, maxPoses: c.maxPoses })).poses;
          ms.push(performance.now() - t);
        }
      }
      const s = photos.map((p, i) => scorePoses(p.photo, results[i]!, c.maxPoses));
      const sum = (k: keyof PoseScore) => s.reduce((n, x) => n + x[k], 0);
      rows.push({
        'pose model': c.poseModel,
        mode:
          c.mode === 'persons'
            ? `persons (${c.personDetector}${c.personDetector === ENGINE_DEFAULTS.personDetector ? ', the default' : ''})`
            : 'whole image',
        'max poses': c.maxPoses,
        'persons posed': pct(sum('posed'), sum('persons')),
        [`under ${SMALL_PERSON_PX} px`]: pct(sum('smallPosed'), sum('small')),
        [`extra poses (${photos.length} photos)`]: sum('extra'),
        'p50 ms': median(ms),
      });
    } finally {
      await engine.close();
    }
  }
  return rows;
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const root = findRoot();
  const rows = await benchPoseAccuracy(root, { quick: process.argv.includes('--quick') });
  table(`Pose models on the labelled persons of testkit/labels/objects.json (>= ${MIN_KEYPOINTS} keypoints, most inside the box)`, rows);
}
