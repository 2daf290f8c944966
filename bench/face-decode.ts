// Face detection on large JPEGs: the engine decodes a JPEG only as large as the detector's whole-image pass needs
// (libjpeg's DCT scaling, native/jobs/jpeg_decoder.h), so decoding and letterboxing shrink with it while the
// inference stays the same. The astronaut as a square JPEG (quality 90) at three sizes, tiles off, one call at a
// time, medians of the engine's stage timings.
//   node dist/bench/face-decode.js     (docs/performance.md, "Face detection on large photos", reports a run)
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Engine } from '../src/index.js';
import { median } from '../src/metrics/percentiles.js';
import { scaledJpeg } from './shared/vga-photos.js';
import { table } from './table.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const SIDES = [640, 1280, 1900];
const RUNS = 40;

export async function benchFaceDecode(): Promise<Record<string, string | number>[]> {
  const engine = await Engine.open({ objectDetector: null, poseModel: null, faceEmbedder: null });
  const rows: Record<string, string | number>[] = [];
  try {
    for (const side of SIDES) {
      const { bytes, width, height } = scaledJpeg(ROOT, 'skimage/astronaut.png', side);
      for (let i = 0; i < 5; i++) await engine.detectFaces(bytes, { tiles: 0 });
      const stages: Record<string, number[]> = { total: [], decode: [], preprocess: [], inference: [] };
      let faces = 0;
      for (let i = 0; i < RUNS; i++) {
        const t0 = performance.now();
        const r = await engine.detectFaces(bytes, { tiles: 0 });
        stages['total']!.push(performance.now() - t0);
        stages['decode']!.push(r.timings.decodeMs);
        stages['preprocess']!.push(r.timings.preprocessMs);
        stages['inference']!.push(r.timings.inferenceMs);
        faces = r.faces.length;
      }
      rows.push({
        photo: `${width}x${height} JPEG`,
        faces,
        'p50 ms': median(stages['total']!),
        'decode p50 ms': median(stages['decode']!),
        'preprocess p50 ms': median(stages['preprocess']!),
        'inference p50 ms': median(stages['inference']!),
      });
    }
  } finally {
    await engine.close();
  }
  return rows;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === path.resolve(process.argv[1])) {
  table(`Face detection on large JPEGs (default detector, tiles off, ${RUNS} calls each)`, await benchFaceDecode());
}
