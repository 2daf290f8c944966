// The C++ MoveNet post-processing against the original graph's own (the TF.js graph run to its final Identity
// node): the same 256x256 image in both, so no letterbox stands between them.
import { PNG } from 'pngjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TfjsReference, useTfjsBackend } from '../testkit/tfjs-reference.js';
import { Engine } from '../src/index.js';
import { photoTensor } from '../testkit/photo-tensor.js';
import { photo } from './helpers.js';

const SIZE = 256;
const ROW = 56; // 17 x (y, x, score), box (ymin, xmin, ymax, xmax), person score

/** The photo at SIZE x SIZE as a PNG and as the NHWC tensor of exactly those pixels. */
function squarePhoto(name: string): { png: Buffer; nhwc: Float32Array } {
  const { nhwc } = photoTensor(photo(name), SIZE, SIZE, 0, 1);
  const png = new PNG({ width: SIZE, height: SIZE });
  for (let i = 0; i < SIZE * SIZE; i++) {
    for (let c = 0; c < 3; c++) png.data[4 * i + c] = nhwc[3 * i + c]!;
    png.data[4 * i + 3] = 255;
  }
  return { png: PNG.sync.write(png), nhwc };
}

describe('pose post-processing matches the original graph', () => {
  let engine: Engine;
  let reference: TfjsReference;
  beforeAll(async () => {
    await useTfjsBackend('cpu');
    // fp32: the reference is the original graph's own output (the int8 model's bounds are int8-models.test.ts's)
    engine = await Engine.open({ workers: 1, threadsPerWorker: 2, objectDetector: null, precision: 'fp32', warmUp: false }); // nothing timed
    reference = await TfjsReference.cached('models/movenet-multipose.json', 'StatefulPartitionedCall/Cast', ['Identity']);
  });
  afterAll(async () => {
    reference?.dispose();
    await engine?.close();
  });

  for (const name of ['skimage/astronaut.png', 'skimage/camera.png']) {
    it(`${name}: the same people, boxes, keypoints and scores`, async () => {
      const { png, nhwc } = squarePhoto(name);
      const [rows] = await reference.run(nhwc, [1, SIZE, SIZE, 3]);
      const ours = await engine.detectPoses(png, { scoreThreshold: 0, keypointThreshold: 0 });
      expect(ours.poses.length).toBeGreaterThan(0);
      let keypoints = 0;
      let moved = 0;
      for (const pose of ours.poses) {
        // The reference row with the same box (ours: [l, t, r, b]; the graph's: normalized [ymin, xmin, ymax, xmax]).
        const matches = Array.from({ length: 6 }, (_, r) => rows!.subarray(r * ROW, (r + 1) * ROW)).filter((row) => {
          const box = [row[52]! * SIZE, row[51]! * SIZE, row[54]! * SIZE, row[53]! * SIZE];
          return box.every((v, i) => Math.abs(v - pose.box[i]!) < 0.01);
        });
        expect(matches.length, `box ${pose.box.join(',')}`).toBeGreaterThanOrEqual(1);
        const row = matches[0]!;
        expect(pose.score).toBeCloseTo(row[55]!, 3);
        pose.keypoints.forEach((k, j) => {
          keypoints++;
          // A near-tie in the heatmap argmax may pick the neighbouring cell under float noise: count those.
          if (Math.hypot(k.x - row[3 * j + 1]! * SIZE, k.y - row[3 * j]! * SIZE) > 0.05) moved++;
          else expect(k.score).toBeCloseTo(row[3 * j + 2]!, 3);
        });
      }
      console.log(`pose decode ${name}: ${ours.poses.length} people, ${moved} of ${keypoints} keypoints on another cell`);
      expect(moved / keypoints).toBeLessThanOrEqual(0.02);
    });
  }
});
