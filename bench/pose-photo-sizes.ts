// The labelled pose set (testkit/labels/objects.json, photos with `personsComplete`) scaled up to camera sizes, as
// JPEG and as PNG of the same pixels, through the pose route's default (persons mode, default models). A JPEG is
// decoded only as large as the person detector needs, and larger again where a person's crop needs it
// (native/pipelines/detect_poses.h); a PNG is always decoded whole. Equal counts say the smaller decode costs no pose.
// Poses are scaled back onto the labelled photo's pixels before scoring.
//
//   node dist/bench/pose-photo-sizes.js [--precision int8|fp32]
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Engine, POSE_DEFAULTS, type Pose, type PrecisionChoice } from '../src/index.js';
import { findRoot } from '../models/model-packages.js';
import { argValue } from '../testkit/args.js';
import { loadObjectLabels } from '../testkit/object-labels.js';
import { scorePoses, type PoseScore } from '../testkit/pose-scoring.js';
import { decode, pngOfJpeg, scaledJpeg } from '../testkit/vga-photos.js';
import { table } from '../testkit/table.js';

/** Longer sides tried: the photo's own times 1.28 and 2, and two camera widths. */
const SIZES: { name: string; side: (longer: number) => number }[] = [
  { name: 'x1.28', side: (l) => Math.round(l * 1.28) },
  { name: 'x2', side: (l) => 2 * l },
  { name: '640 px', side: () => 640 },
  { name: '1280 px', side: () => 1280 },
];

function unscaled(poses: readonly Pose[], scale: number): Pose[] {
  return poses.map((p) => ({
    ...p,
    box: p.box.map((v) => v / scale) as Pose['box'],
    keypoints: p.keypoints.map((k) => ({ ...k, x: k.x / scale, y: k.y / scale })),
  }));
}

export async function benchPosePhotoSizes(root: string, precision: PrecisionChoice = 'int8'): Promise<Record<string, string | number>[]> {
  const labels = loadObjectLabels(root);
  const photos = Object.entries(labels.photos).filter(([, p]) => p.personsComplete);
  const engine = await Engine.open({ workers: 1, threadsPerWorker: 2, precision, faceEmbedder: null });
  const rows: Record<string, string | number>[] = [];
  try {
    for (const size of SIZES) {
      const scores: Record<'jpeg' | 'png', PoseScore[]> = { jpeg: [], png: [] };
      for (const [file, photo] of photos) {
        const src = decode(join(root, 'test', 'data', file));
        const { bytes, scale } = scaledJpeg(root, file, size.side(Math.max(src.width, src.height)));
        for (const [format, image] of [
          ['jpeg', bytes],
          ['png', pngOfJpeg(bytes)],
        ] as const) {
          const { poses } = await engine.detectPoses(image, { mode: 'persons' });
          scores[format].push(scorePoses(photo, unscaled(poses, scale), POSE_DEFAULTS.maxPosesPersons));
        }
      }
      const sum = (s: PoseScore[], k: keyof PoseScore) => s.reduce((n, x) => n + x[k], 0);
      const cell = (s: PoseScore[]) => `posed ${sum(s, 'posed')}/${sum(s, 'persons')}, extra ${sum(s, 'extra')}`;
      rows.push({
        'longer side': size.name,
        'JPEG (decoded as small as allowed)': cell(scores.jpeg),
        'PNG, same pixels (decoded whole)': cell(scores.png),
      });
    }
  } finally {
    await engine.close();
  }
  return rows;
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const precision = (argValue(process.argv.slice(2), '--precision') ?? 'int8') as PrecisionChoice;
  const root = findRoot();
  table(`labelled pose set at camera sizes, persons mode, ${precision}`, await benchPosePhotoSizes(root, precision));
}
