// precision 'auto' at Engine.open: the models' int8 and fp32 files timed on a worker of a model-less engine of
// their own (one worker, the engine's threads per worker, idle cores kept: the session each worker runs), which is
// closed before the real engine loads the chosen files.

import { rawModelSpec, type LoadedManifest } from './manifest.js';
import type { NativeBinding, NativeEngineOptions } from './native.js';
import { choosePrecisions, type FormTimer, type PrecisionChoiceLimits, PRECISION_CHOICE_LIMITS } from './precision-choice.js';
import type { Precision, PrecisionTiming } from './types.js';

/**
 * A made-up input in [0, 1), the same every time: the kernels' speed does not depend on the pixels, only on the
 * shape; the GPU check (gpu-check.ts) compares devices on it.
 */
export function madeUpInput(length: number): Float32Array {
  const out = new Float32Array(length);
  let x = 12345;
  for (let i = 0; i < length; i++) {
    x = (x * 1103515245 + 12345) >>> 0;
    out[i] = (x >>> 8) / 16777216;
  }
  return out;
}

/** Times both forms of `models` (manifest names, each with an int8 file) and chooses per model. */
export async function timeModelForms(
  binding: NativeBinding,
  engine: Pick<NativeEngineOptions, 'threadsPerWorker' | 'backend' | 'onnxRuntimeLibrary'>,
  manifest: LoadedManifest,
  modelDir: string,
  models: readonly string[],
  limits: PrecisionChoiceLimits = PRECISION_CHOICE_LIMITS,
): Promise<Record<string, PrecisionTiming>> {
  if (models.length === 0) return {};
  const native = binding.createEngine({ ...engine, workers: 1, queueLimit: 4, idleCores: 'keep', warmUp: false }); // no model loaded: nothing to warm
  const inputs = new Map<string, Float32Array>();
  const timeRun: FormTimer = async (model: string, precision: Precision) => {
    const spec = rawModelSpec(manifest, modelDir, model, 'onnxruntime', precision);
    if (spec === null) throw new Error(`precision auto: model "${model}" is not in the manifest`);
    const key = spec.inputShape.join('x');
    let tensor = inputs.get(key);
    if (!tensor) inputs.set(key, (tensor = madeUpInput(spec.inputShape.reduce((a, b) => a * b, 1))));
    const t0 = performance.now();
    await native.runModel(tensor, spec);
    return performance.now() - t0;
  };
  try {
    return await choosePrecisions(models, timeRun, limits);
  } finally {
    await native.close();
  }
}
