// Engine.open's use of the GPU check (gpu-check.ts): whether to run it, with what, and the specs it changes.

import { planGpuNets, type GpuPlan } from './gpu-check.js';
import { modelPrecision, type LoadedManifest } from './manifest.js';
import type { ModelSpecs } from './model-specs.js';
import type { NativeBinding, NativeEngineOptions, NativeImageInput } from './native.js';
import type { CheckedEngineOptions } from './options.js';
import type { NetKey, Precision } from './types.js';

export type { GpuPlan };

/**
 * The check's verdict for backend 'gpu' or 'auto' with onnxruntime loaded; null otherwise ('cpu' and 'cuda' never
 * touch Vulkan, nor does OpenCV). `names`: the loaded nets' manifest names by key (specNames).
 */
export async function planGpu(
  binding: NativeBinding,
  checked: CheckedEngineOptions,
  engine: Pick<NativeEngineOptions, 'threadsPerWorker' | 'onnxRuntimeLibrary'>,
  manifest: LoadedManifest,
  names: Record<string, string | undefined>,
  cpuPrecision: Precision,
): Promise<GpuPlan | null> {
  const { backend, runtime, modelDir, netDevices } = checked;
  if ((backend !== 'gpu' && backend !== 'auto') || runtime === 'opencv' || engine.onnxRuntimeLibrary === undefined) return null;
  return planGpuNets(binding, {
    engine,
    backend,
    manifest,
    modelDir,
    names: names as Partial<Record<NetKey, string>>,
    forced: netDevices,
    cpuPrecision: (name) => modelPrecision(manifest, name, cpuPrecision, runtime),
  });
}

/** The manifest names of the nets the plan put on the GPU (`names`: by key, as specNames gives them). */
export function gpuNetNames(plan: GpuPlan | null, names: Record<string, string | undefined>): Set<string | undefined> {
  return new Set(
    Object.entries(plan?.nets ?? {})
      .filter(([, c]) => c.device === 'gpu')
      .map(([key]) => names[key]),
  );
}

/** `specs` with device 'gpu' (and the checked graph) on each net the plan put on the GPU. */
export function withGpuDevices(specs: ModelSpecs, plan: GpuPlan | null): ModelSpecs {
  const on = <T extends NativeImageInput>(key: NetKey, spec: T): T => {
    const check = plan?.nets[key];
    return check?.device === 'gpu' ? { ...spec, device: 'gpu', gpuGraph: check.graph ?? 'optimized' } : spec;
  };
  return {
    face: on('faceDetector', specs.face),
    pose: specs.pose && on('poseEstimator', specs.pose),
    objects: specs.objects && { ...specs.objects, spec: on('objectDetector', specs.objects.spec) },
    persons: specs.persons && { ...specs.persons, spec: on('personDetector', specs.persons.spec) },
    embedder: specs.embedder && { ...specs.embedder, spec: on('faceEmbedder', specs.embedder.spec) },
  };
}
