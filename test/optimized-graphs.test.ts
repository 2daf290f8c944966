// On the CPU the engine has onnxruntime optimize each model file once and every session of it (each worker's copy,
// the wide session, a raw run's) load the graph the optimizer wrote, with no further optimization
// (native/runtime/onnxruntime_model.cc, SessionGraph): optimizing was most of what a session cost to make. That
// must change no answer: every model the default engine runs answers, bit for bit, what onnxruntime-node's own
// session of the same file answers (its optimizer run in memory), at fp32 and at int8 where the model ships it.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import * as ort from 'onnxruntime-node';
import { describe, expect, it } from 'vitest';
import type { Precision } from '../src/index.js';
import { ORT_EXACT_INT8 } from '../testkit/cpu-int8.js';
import { photoTensor } from '../testkit/photo-tensor.js';
import { photo, ROOT, sharedEngine } from './helpers.js';
import { expectOnnxRuntimeFloats } from './support/same-floats.js';

const manifest = JSON.parse(readFileSync(join(ROOT, 'models', 'onnx', 'manifest.json'), 'utf8')) as {
  models: Record<string, { ortFile: string; input: { shape: number[]; mean: number; scale: number }; int8?: { ortFile: string } }>;
};
/** The default engine's nets: face detector, embedder, pose, objects, pose's person finder. */
const MODELS = ['facemesh-detection-full', 'faceres', 'movenet-multipose', 'yolov5s', 'yolov5s-320'];

describe('each model file optimized once and loaded as optimized', () => {
  it('covers the int8 file of every default net that ships one', () => {
    expect(MODELS.filter((m) => manifest.models[m]!.int8)).toEqual(['faceres', 'movenet-multipose', 'yolov5s', 'yolov5s-320']);
  });

  for (const model of MODELS) {
    const entry = manifest.models[model]!;
    const precisions: Precision[] = entry.int8 ? ['fp32', 'int8'] : ['fp32'];
    for (const precision of precisions) {
      const file = precision === 'int8' ? entry.int8!.ortFile : entry.ortFile;
      it(`${model} (${precision}) answers bit for bit what onnxruntime-node answers on ${file}`, async () => {
        const engine = await sharedEngine();
        const { shape, mean, scale } = entry.input;
        const [height, width] = [shape[2]!, shape[3]!];
        const { nchw } = photoTensor(photo('skimage/astronaut.png'), width, height, mean, scale);
        const session = await ort.InferenceSession.create(join(ROOT, 'models', 'onnx', file), {
          intraOpNumThreads: 1,
          ...(precision === 'int8' ? ORT_EXACT_INT8 : {}),
        });
        try {
          const ours = await engine.runModel(model, nchw, { precision });
          await expectOnnxRuntimeFloats(session, nchw, [1, 3, height, width], ours, file);
        } finally {
          await session.release();
        }
      });
    }
  }
});
