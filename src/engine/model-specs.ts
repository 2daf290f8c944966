// The native specs of the models an engine loads, each at its own precision (one for all, or per model with
// precision 'auto'; precision-choice.ts).

import {
  chooseObjectDetector,
  choosePersonDetector,
  faceDetectorSpec,
  faceEmbedderSpec,
  modelPrecision,
  poseEstimatorSpec,
  type LoadedManifest,
} from './manifest.js';
import type { CheckedEngineOptions } from './options.js';
import type { EngineOptions, Precision } from './types.js';

export interface ModelSpecs {
  face: Awaited<ReturnType<typeof faceDetectorSpec>>;
  pose: Awaited<ReturnType<typeof poseEstimatorSpec>> | undefined;
  objects: Awaited<ReturnType<typeof chooseObjectDetector>>;
  persons: Awaited<ReturnType<typeof choosePersonDetector>>;
  embedder: Awaited<ReturnType<typeof faceEmbedderSpec>> | null;
}

/** A model's precision by its manifest name. */
export type PrecisionOf = (model: string) => Precision;

/** The specs of every model `checked` asks for, the form of each file from `precisionOf`. */
export async function modelSpecs(
  opts: EngineOptions,
  checked: CheckedEngineOptions,
  manifest: LoadedManifest,
  precisionOf: PrecisionOf,
): Promise<ModelSpecs> {
  const { modelDir, runtime, faceDetector, poseModel, faceEmbedder } = checked;
  const face = await faceDetectorSpec(manifest, modelDir, faceDetector, runtime);
  const pose = poseModel === null ? undefined : await poseEstimatorSpec(manifest, modelDir, poseModel, runtime, precisionOf(poseModel));
  // The object models' names come with their specs: resolved at int8 first, again where their own precision differs.
  let objects = await chooseObjectDetector(opts, manifest, modelDir, runtime, 'int8');
  if (objects && precisionOf(objects.info.name) !== 'int8') {
    objects = await chooseObjectDetector(opts, manifest, modelDir, runtime, precisionOf(objects.info.name));
  }
  let persons = await choosePersonDetector(opts, poseModel, objects, manifest, modelDir, runtime, 'int8');
  if (persons && precisionOf(persons.info.name) !== 'int8') {
    persons = await choosePersonDetector(opts, poseModel, objects, manifest, modelDir, runtime, precisionOf(persons.info.name));
  }
  const embedder = faceEmbedder === null ? null : await faceEmbedderSpec(manifest, modelDir, faceEmbedder, runtime, precisionOf(faceEmbedder));
  return { face, pose, objects, persons, embedder };
}

/** The loaded models' manifest names by the backend's keys (an own object model file has no manifest entry). */
export function specNames(checked: CheckedEngineOptions, specs: ModelSpecs): Record<string, string | undefined> {
  return {
    faceDetector: checked.faceDetector,
    poseEstimator: checked.poseModel ?? undefined,
    objectDetector: specs.objects?.info.name,
    personDetector: specs.persons?.info.name,
    faceEmbedder: checked.faceEmbedder ?? undefined,
  };
}

/** The models among `names` that have an int8 and an fp32 file this engine could run: what 'auto' times. */
export function modelsWithBothForms(manifest: LoadedManifest, checked: CheckedEngineOptions, names: Record<string, string | undefined>): string[] {
  const onnxRuntime = checked.runtime !== 'opencv' && checked.library !== null && 'path' in checked.library;
  if (!onnxRuntime) return [];
  const out = new Set<string>();
  for (const name of Object.values(names)) {
    if (name !== undefined && modelPrecision(manifest, name, 'int8', checked.runtime) === 'int8') out.add(name);
  }
  return [...out];
}
