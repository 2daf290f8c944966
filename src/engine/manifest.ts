// From <modelDir>/manifest.json (written by the model converter at set-up) to the native specs: each model's
// files, input normalization and decoder settings, checked so that a stale or hand-edited manifest fails with
// a message saying what to do, not deep inside native code.

import fs from 'node:fs/promises';
import path from 'node:path';
import { COCO_CLASSES } from './objects.js';
import { checkModelFile, isModelPath, objectLabels, OBJECT_DETECTOR_MODELS, type ObjectDetectorModel, type ObjectModelInfo } from './object-model.js';
import { FACE_ALIGNMENT, type FaceEmbedderInfo } from './face-embedding.js';
import { verifyModelFile } from './model-integrity.js';
import { CROP_SCALE_RANGE, CUSTOM_OBJECT_INPUT_SIZE, ENGINE_DEFAULTS, ENGINE_RANGES, YOLO_NMS_IOU, YOLO_PAD_VALUE } from './limits.js';
import { intOption, invalidArgument, isRecord, modelOption, pathOption } from './options.js';
import type {
  NativeFaceDetectorSpec,
  NativeFaceEmbedderSpec,
  NativeObjectDetectorSpec,
  NativePoseEstimatorSpec,
  NativeRawModelSpec,
  NativeRuntime,
  NativeYoloDetectorSpec,
} from './native.js';
import type { EngineOptions, FaceDetectorModel, FaceEmbedderModel, PoseModel, Precision, RuntimeChoice } from './types.js';

function setupError(message: string, cause?: unknown): Error {
  return new Error(`${message}; run \`npm run setup\` to download and convert the models`, { cause });
}

function manifestError(file: string, message: string): Error {
  return new Error(`${file}: ${message}; run \`npm run setup\` to regenerate it`);
}

function stringArray(value: unknown): value is string[] {
  return Array.isArray(value) && value.length > 0 && value.every((v) => typeof v === 'string' && v.length > 0);
}

export interface LoadedManifest {
  file: string;
  models: Record<string, unknown>;
}

/** <modelDir>/manifest.json, written by the model converter at set-up. */
export async function readManifest(modelDir: string): Promise<LoadedManifest> {
  const file = path.join(modelDir, 'manifest.json');
  let text: string;
  try {
    text = await fs.readFile(file, 'utf8');
  } catch (e) {
    throw setupError(`model manifest ${file} not found`, e);
  }
  let manifest: unknown;
  try {
    manifest = JSON.parse(text);
  } catch (e) {
    throw manifestError(file, `not valid JSON (${(e as Error).message})`);
  }
  const models = isRecord(manifest) ? manifest['models'] : undefined;
  if (!isRecord(models)) throw manifestError(file, 'no "models" object');
  return { file, models };
}

/** The int8 onnxruntime file of a manifest entry, or null when it has none (the model stays fp32). */
function int8OrtFile(manifest: LoadedManifest, name: string, entry: Record<string, unknown>): string | null {
  const int8 = entry['int8'];
  if (int8 === undefined) return null;
  if (!isRecord(int8) || typeof int8['ortFile'] !== 'string') throw manifestError(manifest.file, `model "${name}": int8 lacks ortFile`);
  return int8['ortFile'];
}

/** The converted manifest's entry of model `name` (own keys only: a name like "constructor" finds nothing). */
function manifestEntry(manifest: LoadedManifest, name: string): unknown {
  return Object.hasOwn(manifest.models, name) ? manifest.models[name] : undefined;
}

/**
 * The precision model `name` runs at when `precision` is asked for: int8 only where the manifest has an int8 file,
 * onnxruntime may run it (OpenCV runs the fp32 file), and it gives its scored answers on this CPU architecture
 * (`int8.architectures`, set by set-up where a float upsampling between its integer layers rounds otherwise on
 * other architectures: docs/int8.md, "The same answers on every CPU").
 */
export function modelPrecision(
  manifest: LoadedManifest,
  name: string,
  precision: Precision,
  runtime: RuntimeChoice,
  arch: string = process.arch,
): Precision {
  const entry = manifestEntry(manifest, name);
  if (precision === 'fp32' || runtime === 'opencv' || !isRecord(entry) || int8OrtFile(manifest, name, entry) === null) return 'fp32';
  const architectures = (entry['int8'] as Record<string, unknown>)['architectures'];
  if (architectures === undefined) return 'int8';
  if (!Array.isArray(architectures) || !architectures.every((a) => typeof a === 'string'))
    throw manifestError(manifest.file, `model "${name}": int8.architectures must be a list of names`);
  return architectures.includes(arch) ? 'int8' : 'fp32';
}

/**
 * A default threshold an int8 detector's entry sets (its scores run a little lower than fp32's; measured on the
 * labelled set, docs/int8.md): 'scoreThreshold' for detectObjects, 'personThreshold' for pose's person boxes.
 */
export function int8ScoreThreshold(manifest: LoadedManifest, name: string, key: 'scoreThreshold' | 'personThreshold'): number | undefined {
  const entry = manifestEntry(manifest, name);
  const int8 = isRecord(entry) ? entry['int8'] : undefined;
  const threshold = isRecord(int8) ? int8[key] : undefined;
  if (threshold === undefined) return undefined;
  if (typeof threshold !== 'number' || !(threshold > 0 && threshold < 1))
    throw manifestError(manifest.file, `model "${name}": int8.${key} must be in (0, 1)`);
  return threshold;
}

/** A raw-tensor spec (file, input shape, output names) for any manifest model; null if `name` is not there. */
export function rawModelSpec(
  manifest: LoadedManifest,
  modelDir: string,
  name: string,
  runtime: NativeRuntime,
  precision: Precision = 'fp32',
): NativeRawModelSpec | null {
  const entry = manifestEntry(manifest, name);
  if (!isRecord(entry)) return null;
  const input = entry['input'];
  const outputs = entry['outputs'];
  const shape = isRecord(input) ? input['shape'] : undefined;
  if (
    typeof entry['file'] !== 'string' ||
    typeof entry['ortFile'] !== 'string' ||
    !Array.isArray(shape) ||
    !shape.every((d) => Number.isInteger(d) && d > 0) ||
    !Array.isArray(outputs) ||
    !outputs.every((o) => isRecord(o) && typeof o['name'] === 'string')
  ) {
    throw manifestError(manifest.file, `model "${name}" lacks file, ortFile, input.shape or outputs[].name`);
  }
  const ortFile = modelPrecision(manifest, name, precision, runtime) === 'int8' ? int8OrtFile(manifest, name, entry)! : entry['ortFile'];
  return {
    path: path.join(modelDir, runtime === 'onnxruntime' ? ortFile : entry['file']),
    runtime,
    inputShape: shape as number[],
    outputs: outputs.map((o) => (o as Record<string, string>)['name']!),
  };
}

/** What every image model's spec needs: its files and runtime, square input side and input normalization. */
interface SquareImageModel {
  entry: Record<string, unknown>;
  path: string;
  ortPath: string;
  runtime: RuntimeChoice;
  inputSize: number;
  meanValue: number;
  scale: number;
  swapRB: boolean;
}

/**
 * Reads and checks a manifest model with a square NCHW image input [1,3,S,S]; `role` names its extra settings key.
 * Its onnxruntime file is the int8 one where modelPrecision says int8.
 */
async function squareImageModel(
  manifest: LoadedManifest,
  modelDir: string,
  model: string,
  role: string,
  runtime: RuntimeChoice,
  precision: Precision = 'fp32',
): Promise<SquareImageModel> {
  const file = manifest.file;
  const entry = manifestEntry(manifest, model);
  if (!isRecord(entry)) throw setupError(`model "${model}" is not in ${file}`);

  const input = entry['input'];
  if (typeof entry['file'] !== 'string' || typeof entry['ortFile'] !== 'string' || !isRecord(input) || !isRecord(entry[role])) {
    throw manifestError(file, `model "${model}" lacks file, ortFile, input or ${role}`);
  }
  const shape = input['shape'];
  if (
    !Array.isArray(shape) ||
    shape.length !== 4 ||
    !shape.every((d) => Number.isInteger(d)) ||
    shape[1] !== 3 ||
    shape[2] !== shape[3] ||
    (input['layout'] !== undefined && input['layout'] !== 'NCHW')
  ) {
    throw manifestError(file, `model "${model}": expected a square NCHW input [1,3,S,S], got ${JSON.stringify(shape)}`);
  }
  const mean = input['mean'];
  const scale = input['scale'];
  const color = input['color'];
  if (typeof mean !== 'number' || typeof scale !== 'number' || (color !== 'RGB' && color !== 'BGR')) {
    throw manifestError(file, `model "${model}": input needs numeric mean/scale and color RGB or BGR`);
  }
  const modelPath = path.join(modelDir, entry['file']);
  const ortFile = modelPrecision(manifest, model, precision, runtime) === 'int8' ? int8OrtFile(manifest, model, entry)! : entry['ortFile'];
  const ortPath = path.join(modelDir, ortFile);
  for (const f of [modelPath, ortPath]) {
    try {
      await fs.access(f);
    } catch (e) {
      throw setupError(`model file ${f} not found`, e);
    }
    await verifyModelFile(manifest.file, manifest.models, f);
  }
  // decoded images are BGR
  return { entry, path: modelPath, ortPath, runtime, inputSize: shape[2] as number, meanValue: mean, scale, swapRB: color === 'RGB' };
}

/** The native face detector spec for `model`. */
export async function faceDetectorSpec(
  manifest: LoadedManifest,
  modelDir: string,
  model: FaceDetectorModel,
  runtime: RuntimeChoice,
): Promise<NativeFaceDetectorSpec> {
  const file = manifest.file;
  const { entry, ...common } = await squareImageModel(manifest, modelDir, model, 'detector', runtime);
  const detector = entry['detector'] as Record<string, unknown>;
  const layers = detector['anchorLayers'];
  if (
    !Array.isArray(layers) ||
    layers.length === 0 ||
    !layers.every((l) => isRecord(l) && Number.isInteger(l['stride']) && Number.isInteger(l['anchors']))
  ) {
    throw manifestError(file, `model "${model}": detector.anchorLayers must be [{stride, anchors}, ...]`);
  }
  const scoreOutputs = detector['scoreOutputs'];
  const boxOutputs = detector['boxOutputs'];
  if (!stringArray(scoreOutputs) || !stringArray(boxOutputs)) {
    throw manifestError(file, `model "${model}": detector.scoreOutputs and boxOutputs must be lists of output names`);
  }
  return {
    ...common,
    anchorLayers: layers.map((l) => ({ stride: (l as Record<string, number>)['stride']!, anchors: (l as Record<string, number>)['anchors']! })),
    scoreOutputs,
    boxOutputs,
  };
}

/** The native pose estimator spec for `model` (its manifest entry's `pose.outputs`: the 6 heads in decoder order). */
export async function poseEstimatorSpec(
  manifest: LoadedManifest,
  modelDir: string,
  model: PoseModel,
  runtime: RuntimeChoice,
  precision: Precision = 'fp32',
): Promise<NativePoseEstimatorSpec> {
  const { entry, ...common } = await squareImageModel(manifest, modelDir, model, 'pose', runtime, precision);
  const outputs = (entry['pose'] as Record<string, unknown>)['outputs'];
  if (!stringArray(outputs) || outputs.length !== 6) {
    throw manifestError(manifest.file, `model "${model}": pose.outputs must name the 6 heads`);
  }
  return { ...common, outputs };
}

/**
 * The native spec and the public info of embedding model `model`: its manifest entry's `recognition` (crop
 * margin, calibrated distance scale), an output named "embedding", and the converted file's sha256 (the version).
 */
export async function faceEmbedderSpec(
  manifest: LoadedManifest,
  modelDir: string,
  model: FaceEmbedderModel,
  runtime: RuntimeChoice,
  precision: Precision = 'fp32',
): Promise<{ spec: NativeFaceEmbedderSpec; info: Omit<FaceEmbedderInfo, 'dim'> }> {
  const fail = (what: string) => manifestError(manifest.file, `model "${model}": ${what}`);
  const { entry, ...common } = await squareImageModel(manifest, modelDir, model, 'recognition', runtime, precision);
  const outputs = entry['outputs'];
  if (typeof entry['sha256'] !== 'string') throw fail('lacks sha256');
  if (!Array.isArray(outputs) || !outputs.some((o) => isRecord(o) && o['name'] === 'embedding')) throw fail('has no output named "embedding"');
  const recognition = entry['recognition'] as Record<string, unknown>;
  const { cropScale, distanceScale } = recognition;
  const { min, max } = CROP_SCALE_RANGE;
  if (typeof cropScale !== 'number' || typeof distanceScale !== 'number' || !(cropScale >= min && cropScale <= max) || !(distanceScale > 0)) {
    throw fail(`recognition.cropScale must be ${min}..${max}, distanceScale > 0`);
  }
  // An int8 embedder embeds differently: its own version, so a gallery enrolled at the other precision is re-embedded.
  const int8 = modelPrecision(manifest, model, precision, runtime) === 'int8' ? entry['int8'] : undefined;
  const sha = isRecord(int8) && typeof int8['sha256'] === 'string' ? `int8-${int8['sha256'].slice(0, 16)}` : entry['sha256'].slice(0, 16);
  return {
    spec: { ...common, output: 'embedding' },
    info: { model, version: `${sha}-crop${cropScale}-${FACE_ALIGNMENT}`, cropScale, distanceScale },
  };
}

export interface ObjectDetectorChoice {
  spec: NativeObjectDetectorSpec;
  info: ObjectModelInfo;
  labels: readonly string[];
}

/**
 * The native object detector spec for built-in `model`: its manifest entry's `objects` (centernet: output
 * names, class count) or `yolo` (layout, outputs, strides, anchors).
 */
async function objectDetectorSpec(
  manifest: LoadedManifest,
  modelDir: string,
  model: ObjectDetectorModel,
  runtime: RuntimeChoice,
  precision: Precision,
): Promise<ObjectDetectorChoice> {
  const raw = manifestEntry(manifest, model);
  const isYolo = isRecord(raw) && isRecord(raw['yolo']);
  const { entry, ...common } = await squareImageModel(manifest, modelDir, model, isYolo ? 'yolo' : 'objects', runtime, precision);
  const source = entry['source'];
  const licence = isRecord(source) && typeof source['licence'] === 'string' ? source['licence'] : 'unknown';
  const info = { name: model, inputSize: common.inputSize, licence, classes: COCO_CLASSES.length };
  if (isYolo) {
    const yolo = entry['yolo'] as Record<string, unknown>;
    const { layout, outputs, strides, anchors, classes } = yolo;
    const numbers = (v: unknown): v is number[] => Array.isArray(v) && v.every((n) => typeof n === 'number');
    if (
      (layout !== 'grid' && layout !== 'decoded') ||
      !stringArray(outputs) ||
      classes !== COCO_CLASSES.length ||
      (layout === 'grid' && (!numbers(strides) || !Array.isArray(anchors) || !anchors.every(numbers)))
    ) {
      throw manifestError(manifest.file, `model "${model}": yolo needs layout, outputs, strides, anchors and classes = ${COCO_CLASSES.length}`);
    }
    const spec: NativeYoloDetectorSpec = {
      ...common,
      kind: 'yolo',
      layout,
      outputs,
      classes,
      padValue: YOLO_PAD_VALUE,
      iouThreshold: YOLO_NMS_IOU,
      openInputSize: layout === 'grid' && entry['openInputSize'] === true,
      ...(layout === 'grid' ? { strides: strides as number[], anchors: anchors as number[][] } : {}),
    };
    return { spec, info: { ...info, kind: 'yolo' }, labels: COCO_CLASSES };
  }
  const objects = entry['objects'] as Record<string, unknown>;
  const { heatmapOutput, boxOutput, classes } = objects;
  if (typeof heatmapOutput !== 'string' || typeof boxOutput !== 'string' || classes !== COCO_CLASSES.length) {
    throw manifestError(
      manifest.file,
      `model "${model}": objects needs heatmapOutput, boxOutput and classes = ${COCO_CLASSES.length} (the COCO classes)`,
    );
  }
  return { spec: { ...common, kind: 'centernet', heatmapOutput, boxOutput, classes }, info: { ...info, kind: 'centernet' }, labels: COCO_CLASSES };
}

/**
 * An operator's own YOLO export: one output [1,N,5+classes] named by the file (OpenCV names it), RGB 0..1
 * input letterboxed on grey 114 as YOLOv5 trains. The class count comes from the labels; the native
 * warm-up checks it against the output.
 */
async function customObjectDetectorSpec(
  file: string,
  labelsFile: string | undefined,
  inputSize: number,
  runtime: RuntimeChoice,
): Promise<ObjectDetectorChoice> {
  const modelPath = path.resolve(file);
  await checkModelFile(modelPath);
  const labels = await objectLabels(labelsFile);
  const spec: NativeYoloDetectorSpec = {
    kind: 'yolo',
    // An operator's export is standard ONNX: the same file serves both runtimes.
    path: modelPath,
    ortPath: modelPath,
    runtime,
    inputSize,
    layout: 'decoded',
    outputs: [],
    classes: labels.length,
    meanValue: 0,
    scale: 1 / 255,
    swapRB: true,
    padValue: YOLO_PAD_VALUE,
    iouThreshold: YOLO_NMS_IOU,
    openInputSize: false,
  };
  const info: ObjectModelInfo = {
    name: path.basename(modelPath),
    kind: 'yolo',
    inputSize,
    licence: "operator's own model (licence not known to edgecv)",
    classes: labels.length,
  };
  return { spec, info, labels };
}

/** Resolves the objectDetector / objectLabels / objectInputSize options (null: no object model). */
export async function chooseObjectDetector(
  opts: EngineOptions,
  manifest: LoadedManifest,
  modelDir: string,
  runtime: RuntimeChoice,
  precision: Precision,
): Promise<ObjectDetectorChoice | null> {
  const value: unknown = opts.objectDetector;
  const custom = typeof value === 'string' && isModelPath(value);
  if (!custom && (opts.objectLabels !== undefined || opts.objectInputSize !== undefined)) {
    throw invalidArgument('objectLabels and objectInputSize apply only to an own model (objectDetector = a path to an .onnx file)');
  }
  if (custom) {
    const labels = pathOption(opts.objectLabels, 'objectLabels', 'a path to a labels file');
    const inputSize = intOption(opts.objectInputSize, 'objectInputSize', CUSTOM_OBJECT_INPUT_SIZE, ENGINE_RANGES.objectInputSize);
    if (inputSize % 32 !== 0) throw invalidArgument(`objectInputSize must be a multiple of 32 (got ${inputSize})`);
    return customObjectDetectorSpec(value, labels, inputSize, runtime);
  }
  const model = modelOption(value, 'objectDetector', OBJECT_DETECTOR_MODELS, ENGINE_DEFAULTS.objectDetector);
  return model === null ? null : objectDetectorSpec(manifest, modelDir, model, runtime, precision);
}

/**
 * True when the person detector is the object model itself (the same weights in the manifest) at a smaller input
 * size: then an image no larger than that input can run on it with nothing lost, since the object model would only
 * upscale it (docs/int8.md, "Small images"). An own model file never has a sibling.
 */
export function isSmallerSibling(manifest: LoadedManifest, objects: ObjectDetectorChoice, persons: ObjectDetectorChoice): boolean {
  const a = manifestEntry(manifest, objects.info.name);
  const b = manifestEntry(manifest, persons.info.name);
  return (
    isRecord(a) &&
    isRecord(b) &&
    a['source'] !== undefined &&
    JSON.stringify(a['source']) === JSON.stringify(b['source']) && // package, file and sha256 of the weights
    objects.info.kind === persons.info.kind &&
    persons.info.inputSize < objects.info.inputSize &&
    objects.labels.length === persons.labels.length &&
    objects.labels.every((l, i) => l === persons.labels[i])
  );
}

/**
 * Resolves the personDetector option: the model that finds people for detectPoses' persons mode, or null when the
 * object model does it or no pose model is loaded (no second model is loaded then). Default:
 * ENGINE_DEFAULTS.personDetector when the object model is a stock YOLOv5s of another size; else the object model
 * itself (an operator who chose centernet for its licence, or an own model, gets no YOLOv5 weights unasked).
 */
export async function choosePersonDetector(
  opts: EngineOptions,
  poseModel: PoseModel | null,
  objects: ObjectDetectorChoice | null,
  manifest: LoadedManifest,
  modelDir: string,
  runtime: RuntimeChoice,
  precision: Precision,
): Promise<ObjectDetectorChoice | null> {
  const stockYolo = objects !== null && objects.info.kind === 'yolo' && (OBJECT_DETECTOR_MODELS as readonly string[]).includes(objects.info.name);
  const fallback = stockYolo && objects.info.name !== ENGINE_DEFAULTS.personDetector ? ENGINE_DEFAULTS.personDetector : null;
  const model =
    opts.personDetector === undefined
      ? fallback
      : modelOption(opts.personDetector, 'personDetector', OBJECT_DETECTOR_MODELS, ENGINE_DEFAULTS.personDetector);
  if (model === null || model === objects?.info.name || poseModel === null) return null;
  return objectDetectorSpec(manifest, modelDir, model, runtime, precision);
}
