// The int8 YOLOs give on this CPU the answers another CPU class gave (docs/int8.md, "The same answers on every CPU"):
// test/int8-cross-cpu.answers.json holds the boxes that onnxruntime's arm64 build gave under emulation, whose
// integer kernels (dot product) and float kernels (NEON) are not x86's; here the same files run with exact integer
// products, as the engine runs them (test/int8-models.test.ts checks the engine against onnxruntime bit for bit), on
// the same JS-made tensors. Equal boxes mean the labelled-set verdicts of test/int8-models.test.ts do not depend on
// the CPU. A file kept partly fp32 in front of its int8 layers fails here: scores moved by up to 0.086 on arm64.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import * as ort from 'onnxruntime-node';
import { describe, expect, it } from 'vitest';
import type { ConvertedManifest } from '../models/model-manifest.js';
import { ORT_EXACT_INT8 } from '../testkit/cpu-int8.js';
import { int8Input, photoInput, readRecordedAnswers, RECORD_COMMAND } from '../testkit/int8-answers.js';
import { compareBoxes, decodeYolo, type YoloSpec } from '../testkit/yolo-decode.js';
import { ROOT } from './helpers.js';

const manifest = JSON.parse(readFileSync(join(ROOT, 'models', 'onnx', 'manifest.json'), 'utf8')) as ConvertedManifest;
const recorded = readRecordedAnswers(ROOT);
/** The heads of yolov5s-320 stay fp32: float kernels differ by about 1e-7 between CPUs, and nothing more may move. */
const SCORE_TOLERANCE = 1e-4;
const BOX_TOLERANCE_PX = 0.01;

describe(`int8 answers recorded on ${recorded.cpu}`, () => {
  it('cover both int8 YOLOs on several photos', () => {
    expect(Object.keys(recorded.models).sort()).toEqual(['yolov5s', 'yolov5s-320']);
    expect(recorded.photos.length).toBeGreaterThanOrEqual(4);
    for (const m of Object.values(recorded.models)) expect(m.answers.flat().length).toBeGreaterThan(2 * recorded.photos.length);
  });

  for (const [model, record] of Object.entries(recorded.models)) {
    it(`${model}: the same boxes here, labels equal, scores within ${SCORE_TOLERANCE}`, async () => {
      const input = int8Input(manifest, model);
      expect(input.sha256, `models/onnx/${input.file} changed since the answers were recorded: rerun ${RECORD_COMMAND}`).toBe(record.sha256);
      const yolo = (manifest.models[model] as { yolo?: YoloSpec }).yolo!;
      const session = await ort.InferenceSession.create(join(ROOT, 'models', 'onnx', input.file), { intraOpNumThreads: 2, ...ORT_EXACT_INT8 });
      try {
        for (const [p, file] of recorded.photos.entries()) {
          const result = await session.run({ [session.inputNames[0]!]: new ort.Tensor('float32', photoInput(ROOT, file, input), input.dims) });
          const heads = session.outputNames.map((o) => ({ data: result[o]!.data as Float32Array, dims: result[o]!.dims }));
          const c = compareBoxes(record.answers[p]!, decodeYolo(heads, yolo, record.threshold));
          expect(c, file).toMatchObject({ flips: 0, reference: record.answers[p]!.length });
          expect(c.maxScoreChange, file).toBeLessThanOrEqual(SCORE_TOLERANCE);
          expect(c.maxBoxShift, file).toBeLessThanOrEqual(BOX_TOLERANCE_PX);
        }
      } finally {
        await session.release();
      }
    }, 60_000);
  }
});
