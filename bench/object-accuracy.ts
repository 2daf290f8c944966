// Object detector accuracy on the hand-checked labels (testkit/labels/objects.json): per model, input size and
// score threshold, recall at IoU >= 0.5 with the right class, labelled boxes whose top-scoring overlapping
// detection has the wrong class, detections on completely labelled photos that match nothing, and latency.
//
//   node dist/bench/object-accuracy.js [--quick]     the table alone (npm run bench prints it too)
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Engine, OBJECT_DETECTOR_MODELS, type DetectedObject } from '../src/index.js';
import { median } from '../src/metrics/percentiles.js';
import { IOU_MATCH, labelsSummary, loadObjectLabels, scorePhoto, sumScores } from '../testkit/object-labels.js';
import { findRoot } from '../models/model-packages.js';
import { table } from '../testkit/table.js';

export const THRESHOLDS = [0.2, 0.25, 0.3, 0.4, 0.5] as const;

type Row = Record<string, string | number>;

/** Every object model at every threshold on the labelled photos; latency is the p50 over the photos (indicative). */
export async function benchObjectAccuracy(root: string, opts: { quick?: boolean; threadsPerWorker?: number } = {}): Promise<Row[]> {
  const labels = loadObjectLabels(root);
  const photos = Object.entries(labels.photos).map(([file, photo]) => ({ file, photo, bytes: readFileSync(join(root, 'test', 'data', file)) }));
  const completePhotos = photos.filter((p) => p.photo.complete).length;
  const passes = opts.quick ? 1 : 3;
  const rows: Row[] = [];
  for (const model of OBJECT_DETECTOR_MODELS) {
    const engine = await Engine.open({
      workers: 1,
      threadsPerWorker: opts.threadsPerWorker ?? 2,
      objectDetector: model,
      poseModel: null,
      faceEmbedder: null,
    });
    try {
      const detections: DetectedObject[][] = [];
      const ms: number[] = [];
      await engine.detectObjects(photos[0]!.bytes); // warm caches outside the timing
      for (let pass = 0; pass < passes; pass++) {
        for (const [i, p] of photos.entries()) {
          const t = performance.now();
          const r = await engine.detectObjects(p.bytes, { scoreThreshold: Math.min(...THRESHOLDS), maxObjects: 1000 });
          ms.push(performance.now() - t);
          detections[i] = r.objects;
        }
      }
      for (const threshold of THRESHOLDS) {
        const s = sumScores(photos.map((p, i) => scorePhoto(p.photo, detections[i]!, threshold)));
        rows.push({
          model,
          input: engine.objectModel!.inputSize,
          threshold,
          recall: `${s.found}/${s.labelled} (${((100 * s.found) / s.labelled).toFixed(0)}%)`,
          'wrong top label': s.wrongTop,
          [`unmatched (${completePhotos} complete photos)`]: s.unmatched,
          'unmatched per photo': s.unmatched / completePhotos,
          'persons found': `${s.personsFound}/${s.persons}`,
          'p50 ms': median(ms),
        });
      }
    } finally {
      await engine.close();
    }
  }
  return rows;
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const root = findRoot();
  const rows = await benchObjectAccuracy(root, { quick: process.argv.includes('--quick') });
  table(`Object detectors on testkit/labels/objects.json (${labelsSummary(loadObjectLabels(root))}; IoU >= ${IOU_MATCH})`, rows);
}
