// Every converted model, run through the addon on each of its runtimes (OpenCV DNN, onnxruntime) and in
// onnxruntime-node, against the original TF.js graph on the same real photo:
// max |runtime - tfjs| / max |tfjs| <= 1e-4 on every output used.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import * as ort from 'onnxruntime-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TfjsReference, useTfjsBackend } from '../testkit/tfjs-reference.js';
import { Engine } from '../src/index.js';
import type { ConvertedManifest } from '../models/model-manifest.js';
import { photoTensor } from '../testkit/photo-tensor.js';
import { photo, ROOT } from './helpers.js';

const manifest = JSON.parse(readFileSync(join(ROOT, 'models', 'onnx', 'manifest.json'), 'utf8')) as ConvertedManifest;

function maxRelativeError(actual: Float32Array, expected: Float32Array): number {
  let maxDiff = 0;
  let maxRef = 0;
  for (let i = 0; i < expected.length; i++) {
    maxDiff = Math.max(maxDiff, Math.abs(actual[i] - expected[i]));
    maxRef = Math.max(maxRef, Math.abs(expected[i]));
  }
  return maxDiff / maxRef;
}

describe('converted models match TF.js', () => {
  let engine: Engine;
  beforeAll(async () => {
    await useTfjsBackend('cpu');
    // the fp32 files: the int8 ones are checked against fp32 in int8-models.test.ts
    engine = await Engine.open({ workers: 1, threadsPerWorker: 2, precision: 'fp32', warmUp: false }); // nothing here is timed
    // The onnxruntime half must not be skipped silently: the addon must have loaded it.
    expect(engine.backend().onnxRuntime?.version).toMatch(/^\d+\.\d+/);
  });
  afterAll(async () => {
    await engine.close();
  });

  for (const [name, model] of Object.entries(manifest.models)) {
    it(`${name}: every output within 1e-4 of TF.js on a real photo`, async () => {
      const [, c, h, w] = model.input.shape;
      const input = photoTensor(photo('skimage/astronaut.png'), w, h, model.input.mean, model.input.scale);
      expect(c).toBe(3);
      const reference = await TfjsReference.cached(
        model.source.file,
        model.input.tfNode,
        model.outputs.map((o) => o.tfNode),
        [1, h, w, c],
        model.source.package,
      );
      const expected = await reference.run(input.nhwc, [1, h, w, c]);
      const errors: string[] = [];
      reference.dispose();
      // Every runtime the addon ships (OpenCV DNN on the .opencv.onnx file, onnxruntime on the .ort.onnx file).
      for (const runtime of ['opencv', 'onnxruntime'] as const) {
        const actual = await engine.runModel(name, input.nchw, { runtime });
        expect(actual).toHaveLength(model.outputs.length);
        model.outputs.forEach((o, i) => {
          expect(actual[i].length, o.name).toBe(expected[i].length);
          const error = maxRelativeError(actual[i], expected[i]);
          errors[i] = `${errors[i] ?? o.name} ${runtime} ${error.toExponential(1)}`;
          // A model that outputs all zeros would pass a relative check vacuously.
          expect(Math.max(...expected[i].slice(0, 4096).map(Math.abs)), o.name).toBeGreaterThan(0);
          expect(error, `${runtime} ${o.name}`).toBeLessThanOrEqual(1e-4);
        });
      }

      // The same .ort.onnx file in onnxruntime-node, the runtime the bench compares against, agrees too.
      const session = await ort.InferenceSession.create(join(ROOT, 'models', 'onnx', model.ortFile));
      const result = await session.run({ [model.input.name]: new ort.Tensor('float32', input.nchw, model.input.shape) });
      await session.release();
      model.outputs.forEach((o, i) => {
        const error = maxRelativeError(result[o.name].data as Float32Array, expected[i]);
        errors[i] += ` onnxruntime-node ${error.toExponential(1)}`;
        expect(error, `onnxruntime-node ${o.name}`).toBeLessThanOrEqual(1e-4);
      });
      console.log(`parity ${name} (max rel. error): ${errors.join(', ')}`);
    });
  }
});
