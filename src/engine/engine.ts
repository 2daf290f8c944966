// The engine: onnxruntime or OpenCV DNN on the addon's own worker threads, behind a small promise API.
//
//   const engine = await Engine.open();
//   const { faces } = await engine.detectFaces(jpegBytes);
//   await engine.close();
//
// Everything a caller can get wrong is checked here, in TS, with a friendly EngineError: option types and
// ranges, the image format (sniffed from the bytes) and its pixel count (read from the header, so an
// oversized image is refused before a single pixel is decoded).

import fs from 'node:fs/promises';
import path from 'node:path';
import { EngineError, toEngineError } from './errors.js';
import {
  checkEmbedOptions,
  checkEmbedding,
  faceEmbedderFromManifest,
  isFaceEmbedderModel,
  l2Normalized,
  FACE_EMBEDDER_MODELS,
  type EmbedFaceOptions,
  type FaceEmbedderInfo,
  type FaceEmbedderModel,
  type FaceEmbeddingResult,
  type GalleryMatch,
} from './face-embedding.js';
import { GalleryIndex, nativeGallery, type GalleryIndexOptions } from '../gallery/gallery-index.js';
import { admitImage, IMAGE_LIMIT_DEFAULTS, type AdmittedImage, type ImageLimits } from './image-admission.js';
import type { ImageFormat, ImageHeader } from './image-header.js';
import {
  checkModelFile,
  CUSTOM_OBJECT_INPUT_SIZE,
  isModelPath,
  objectLabels,
  OBJECT_DETECTOR_MODELS,
  type ObjectDetectorModel,
  type ObjectModelInfo,
} from './object-model.js';
import { COCO_CLASSES } from './objects.js';
import { cocoToBody25, MAX_POSES, type Body25Point } from './pose.js';
import {
  loadNative,
  packageRoot,
  type NativeBackendInfo,
  type NativeEngine,
  type NativeFaceDetectorSpec,
  type NativeObjectDetectorSpec,
  type NativeYoloDetectorSpec,
  type NativePoseEstimatorSpec,
  type NativeRawModelSpec,
  type NativeRuntime,
  type NativeRuntimeChoice,
  type NativeStats,
} from './native.js';
import { findOnnxRuntimeLibrary } from './onnxruntime-library.js';

export const RUNTIMES = ['auto', 'onnxruntime', 'opencv'] as const;
export type RuntimeChoice = NativeRuntimeChoice;
export const BACKENDS = ['auto', 'cpu', 'cuda'] as const;
export type BackendChoice = (typeof BACKENDS)[number];

export const FACE_DETECTOR_MODELS = ['blazeface-back', 'facemesh-detection-full'] as const;
export type FaceDetectorModel = (typeof FACE_DETECTOR_MODELS)[number];

/** MoveNet MultiPose at its exported 256 px input, and converted at larger inputs (small people in wide frames). */
export const POSE_MODELS = ['movenet-multipose', 'movenet-multipose-384', 'movenet-multipose-512'] as const;
export type PoseModel = (typeof POSE_MODELS)[number];

export { OBJECT_DETECTOR_MODELS, type ObjectDetectorModel, type ObjectModelInfo };

/** Defaults; workers/threadsPerWorker are for a 2-core box and are to be tuned by the bench. */
export const ENGINE_DEFAULTS = {
  // 'auto': onnxruntime where it loaded (3-4x faster than OpenCV 4.6 DNN on every model here, README), else OpenCV.
  runtime: 'auto' as RuntimeChoice,
  backend: 'auto' as BackendChoice,
  workers: 2,
  threadsPerWorker: 1,
  queueLimit: 64,
  maxPixels: IMAGE_LIMIT_DEFAULTS.maxPixels,
  maxAspectRatio: IMAGE_LIMIT_DEFAULTS.maxAspectRatio,
  minImageSide: IMAGE_LIMIT_DEFAULTS.minSide,
  // Chosen by measurement (README, `npm run bench`): higher recall and no false positives on faceless photos.
  faceDetector: 'facemesh-detection-full' as FaceDetectorModel,
  // Chosen by measurement (README, "Face recognition"): lowest equal error rate on dlib's johns.
  faceEmbedder: 'faceres' as FaceEmbedderModel,
  poseModel: 'movenet-multipose' as PoseModel,
  // Chosen by measurement on the labelled set (README, "Pose and objects"): the only model and size that finds
  // >= 90% of the labelled boxes with the right class, with no wrong top label and few unmatched boxes.
  objectDetector: 'yolov5s' as ObjectDetectorModel,
} as const;

export const POSE_MODES = ['persons', 'whole'] as const;
export type PoseMode = (typeof POSE_MODES)[number];

export const POSE_DEFAULTS = {
  /** Whole-image pass: the lowest person score (centre score x mean of its confident keypoint scores). */
  scoreThreshold: 0.2,
  /**
   * Person crops: the detector has already found the person, so a faint pose (a small or partly hidden
   * person) is kept; on the labelled set this added no pose outside a labelled person (README).
   */
  scoreThresholdPersons: 0.05,
  keypointThreshold: 0.3,
  /** Whole-image pass: the model's own top-k. */
  maxPoses: MAX_POSES,
  /** Person crops: one pose per person found, so as many as a crowd needs (MAX_POSES_LIMIT). */
  maxPosesPersons: 20,
  // Measured on the labelled persons (README, "Pose and objects"): crops around the object detector's
  // persons pose 90%+ of them, the whole-image pass misses small and crowded people.
  mode: 'persons' as PoseMode,
  /** Object-detector score above which a box counts as a person to pose (yolov5s finds 57 of the 58 labelled persons at 0.2). */
  personThreshold: 0.2,
} as const;

/** Largest accepted maxPoses: the centre heatmap has room for more peaks than the model's own top-k of 6. */
export const MAX_POSES_LIMIT = 20;

export const OBJECT_DEFAULTS = {
  /** By kind of model. centernet: at 384 px it scores some obvious objects (the dog in dog.jpg) between 0.2 and 0.3. */
  scoreThreshold: { centernet: 0.2, yolo: 0.3 },
  maxObjects: 100,
} as const;

export const DETECT_DEFAULTS = {
  scoreThreshold: 0.6,
  iouThreshold: 0.3,
  tiles: 'auto',
} as const;

/** With tiles 'auto', one tile grid step per this many pixels of the image's longer side. */
export const AUTO_TILE_PIXELS = 960;
export const AUTO_MAX_TILES = 4;

/**
 * The tile grid 'auto' picks: none up to ~1440 px on the longer side (faces there are large enough for
 * the whole-image pass), then N x N with N = round(longer side / 960), at most 4.
 */
export function autoTiles(width: number, height: number): number {
  const n = Math.min(AUTO_MAX_TILES, Math.round(Math.max(width, height) / AUTO_TILE_PIXELS));
  return n >= 2 ? n : 0;
}

/** Largest accepted `tiles` (an NxN grid costs N*N + 1 inferences). */
export const MAX_TILES = 8;

export interface EngineModels {
  faceDetector: FaceDetectorModel;
  pose: PoseModel | null;
  /** A built-in model's name, or the file name of an operator's own model. */
  objects: string | null;
  faceEmbedder: FaceEmbedderModel | null;
}

export interface EngineOptions {
  /** Directory with manifest.json and the converted models. Default: <package root>/models/onnx. */
  modelDir?: string;
  /**
   * Which runtime runs the models: 'onnxruntime' (fails when it cannot load), 'opencv' (OpenCV DNN), or 'auto'
   * (default): onnxruntime when its library loads and can drive the device, else OpenCV.
   */
  runtime?: RuntimeChoice;
  /** 'cpu', 'cuda' (fails without a usable CUDA device) or 'auto' (default: EDGECV_BACKEND, else CUDA when usable). */
  backend?: BackendChoice;
  /** The onnxruntime library to load; default: EDGECV_ONNXRUNTIME_LIB, else the one onnxruntime-node ships. */
  onnxRuntimeLibrary?: string;
  /** Worker threads, each with its own copy of every model. Default 2. */
  workers?: number;
  /**
   * Compute threads of one inference: onnxruntime's intra-op threads per worker session, and OpenCV's threads
   * (cv::setNumThreads is process-wide). Threads in use are about workers x threadsPerWorker. Default 1.
   */
  threadsPerWorker?: number;
  /** Jobs allowed to wait for a worker; beyond that calls reject at once with OVERLOADED. Default 64. */
  queueLimit?: number;
  /** Images with more pixels (from the header) are rejected with IMAGE_TOO_LARGE. Default 40,000,000. */
  maxPixels?: number;
  /** Images whose longer side exceeds this many times the shorter one are rejected with INVALID_IMAGE. Default 32. */
  maxAspectRatio?: number;
  /** Images with a side shorter than this are rejected with INVALID_IMAGE. Default 8. */
  minImageSide?: number;
  /** Face detection model. Default 'facemesh-detection-full'. */
  faceDetector?: FaceDetectorModel;
  /** Face embedding model for recognition, or null for none. Default 'faceres'. */
  faceEmbedder?: FaceEmbedderModel | null;
  /** Pose model, or null to load none (detectPoses then rejects). Default 'movenet-multipose'. */
  poseModel?: PoseModel | null;
  /**
   * Object detection model, or null to load none (detectObjects then rejects). Default 'centernet-384'.
   * A path to an .onnx file loads an operator's own YOLO export (YOLOv5 output layout [1,N,5+classes]).
   */
  objectDetector?: ObjectDetectorModel | string | null;
  /** With an own model: its class names, one per line (default: the 80 COCO classes). */
  objectLabels?: string;
  /** With an own model: its square input side, a multiple of 32. Default 640. */
  objectInputSize?: number;
}

export interface DetectPosesOptions {
  /** Minimum person score (0..1): centre score x mean of its confident keypoint scores. Default 0.2, 0.05 with mode persons. */
  scoreThreshold?: number;
  /** Keypoints scoring below this (0..1) are [0, 0, 0] in `body25`. Default 0.3. */
  keypointThreshold?: number;
  /**
   * 'persons' (default when the engine has an object model with a "person" class): find people with the object
   * detector, then pose each in a crop around its box, so small and crowded people are found. 'whole': one
   * pass of the pose model over the whole image (faster; the model sees at most 6 people).
   */
  mode?: PoseMode;
  /** Most people to return, 1 to 20. Default 20 with mode 'persons', 6 (the model's own top-k) with 'whole'. */
  maxPoses?: number;
}

export interface PoseKeypoint {
  /** Image pixels, not clipped. */
  x: number;
  y: number;
  /** 0..1 */
  score: number;
}

export interface Pose {
  /** 0..1: the centre score times the mean score of the keypoints above the model's own 0.127. */
  score: number;
  /** The model's box of the person, [left, top, right, bottom] in image pixels. */
  box: [number, number, number, number];
  /** The 17 COCO keypoints (COCO_KEYPOINTS order), every one, whatever its score. */
  keypoints: PoseKeypoint[];
  /** The same pose in the BODY_25 layout, keypoints under keypointThreshold as [0, 0, 0]. */
  body25: Body25Point[];
}

export interface PoseDetection {
  width: number;
  height: number;
  format: ImageFormat;
  /** Best first. */
  poses: Pose[];
  timings: DetectionTimings;
}

export interface DetectObjectsOptions {
  /** Minimum score (0..1). Default 0.2. */
  scoreThreshold?: number;
  /** Most objects to return, 1 to 1000. Default 100 (the model's own top-k). */
  maxObjects?: number;
}

export interface DetectedObject {
  /** [left, top, right, bottom] in image pixels, not clipped: a box crossing the image edge goes past it. */
  rect: [number, number, number, number];
  /** A COCO class name (COCO_CLASSES), or a label of an operator's own model. */
  className: string;
  /** Index in COCO_CLASSES (or in the own model's labels). */
  classId: number;
  /** 0..1 */
  score: number;
}

export interface ObjectDetection {
  width: number;
  height: number;
  format: ImageFormat;
  /** Best first. */
  objects: DetectedObject[];
  timings: DetectionTimings;
}

export interface DetectFacesOptions {
  /** Minimum score (0..1) of a face. Default 0.6. */
  scoreThreshold?: number;
  /** IoU (0..1) above which detections are merged by weighted NMS. Default 0.3. */
  iouThreshold?: number;
  /**
   * 0 = whole image only. N >= 2: also an NxN grid of overlapping tiles (for small faces in large
   * images), merged with the whole-image pass; costs N*N extra inferences; at most 8.
   * 'auto' (default): chosen from the image size, see autoTiles().
   */
  tiles?: number | 'auto';
}

export interface Face {
  /** [left, top, right, bottom) in pixels of the (EXIF-oriented) image, clipped to it: width = right - left. */
  rect: [number, number, number, number];
  /** 0..1 */
  score: number;
  /**
   * 12 numbers: (x, y) of right eye, left eye, nose tip, mouth centre, right ear tragion, left ear tragion
   * (MediaPipe order; "right" is the subject's right), in image pixels, not clipped.
   */
  keypoints: number[];
}

export interface DetectionTimings {
  /** Waiting for a worker. */
  queueMs: number;
  decodeMs: number;
  /** Letterbox resize + blob. */
  preprocessMs: number;
  /** net.forward (all passes when tiling). */
  inferenceMs: number;
  /** Decoding, NMS, mapping back to image pixels. */
  postprocessMs: number;
}

export interface FaceDetection {
  /** Decoded image size (after EXIF orientation). */
  width: number;
  height: number;
  format: ImageFormat;
  faces: Face[];
  timings: DetectionTimings;
}

/** The device in use ('cuda' only where a runtime can drive one) and the runtime of each model. */
export type BackendInfo = NativeBackendInfo;

/** Queue and job counters of the engine's worker pool. */
export type EngineStats = NativeStats;

// ------------------------------------------------------------------ validation

function invalidArgument(message: string): EngineError {
  return new EngineError('INVALID_ARGUMENT', message);
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function intOption(value: unknown, name: string, fallback: number, min: number, max: number): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) {
    throw invalidArgument(`${name} must be an integer from ${min} to ${max} (got ${String(value)})`);
  }
  return value;
}

/** Checks face-detection options; tiles stay 'auto' until the image size is known. */
function checkDetectOptions(opts: DetectFacesOptions): { scoreThreshold: number; iouThreshold: number; tiles: number | 'auto' } {
  const tiles = opts.tiles ?? DETECT_DEFAULTS.tiles;
  if (tiles !== 'auto' && (typeof tiles !== 'number' || !Number.isInteger(tiles) || tiles < 0 || tiles > MAX_TILES)) {
    throw invalidArgument(`tiles must be 'auto' or an integer from 0 to ${MAX_TILES} (got ${String(tiles)})`);
  }
  return {
    scoreThreshold: unitOption(opts.scoreThreshold, 'scoreThreshold', DETECT_DEFAULTS.scoreThreshold),
    iouThreshold: unitOption(opts.iouThreshold, 'iouThreshold', DETECT_DEFAULTS.iouThreshold),
    tiles,
  };
}

function resolveTiles(
  options: { scoreThreshold: number; iouThreshold: number; tiles: number | 'auto' },
  header: ImageHeader,
): { scoreThreshold: number; iouThreshold: number; tiles: number } {
  return { ...options, tiles: options.tiles === 'auto' ? autoTiles(header.width, header.height) : options.tiles };
}

function unitOption(value: unknown, name: string, fallback: number): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0 || value > 1) {
    throw invalidArgument(`${name} must be a number from 0 to 1 (got ${String(value)})`);
  }
  return value;
}

/** `value` if it is one of `choices`, the default for undefined; INVALID_ARGUMENT otherwise. */
function choiceOption<T extends string>(value: unknown, name: string, choices: readonly T[], fallback: T): T {
  if (value === undefined) return fallback;
  if (typeof value !== 'string' || !(choices as readonly string[]).includes(value)) {
    throw invalidArgument(`${name} must be one of ${choices.join(', ')} (got ${String(value)})`);
  }
  return value as T;
}

/** EDGECV_BACKEND, the override the addon has always honoured; undefined when unset or empty. */
function envBackend(): string | undefined {
  const value = process.env['EDGECV_BACKEND'];
  return value === undefined || value === '' ? undefined : value;
}

function isFaceDetectorModel(value: unknown): value is FaceDetectorModel {
  return typeof value === 'string' && (FACE_DETECTOR_MODELS as readonly string[]).includes(value);
}

/** `value` if it is one of `choices`, null for null, the default for undefined; INVALID_ARGUMENT otherwise. */
function modelOption<T extends string>(value: unknown, name: string, choices: readonly T[], fallback: T): T | null {
  if (value === undefined) return fallback;
  if (value === null) return null;
  if (typeof value !== 'string' || !(choices as readonly string[]).includes(value)) {
    throw invalidArgument(`${name} must be null or one of ${choices.join(', ')} (got ${String(value)})`);
  }
  return value as T;
}

// ------------------------------------------------------------------ model manifest

function setupError(message: string, cause?: unknown): Error {
  return new Error(`${message}; run \`npm run setup\` to download and convert the models`, { cause });
}

function manifestError(file: string, message: string): Error {
  return new Error(`${file}: ${message}; run \`npm run setup\` to regenerate it`);
}

function stringArray(value: unknown): value is string[] {
  return Array.isArray(value) && value.length > 0 && value.every((v) => typeof v === 'string' && v.length > 0);
}

interface LoadedManifest {
  file: string;
  models: Record<string, unknown>;
}

/** <modelDir>/manifest.json, written by the model converter at set-up. */
async function readManifest(modelDir: string): Promise<LoadedManifest> {
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

/** A raw-tensor spec (file, input shape, output names) for any manifest model; null if `name` is not there. */
function rawModelSpec(manifest: LoadedManifest, modelDir: string, name: string, runtime: NativeRuntime): NativeRawModelSpec | null {
  const entry = Object.hasOwn(manifest.models, name) ? manifest.models[name] : undefined;
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
  return {
    path: path.join(modelDir, runtime === 'onnxruntime' ? entry['ortFile'] : entry['file']),
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

/** Reads and checks a manifest model with a square NCHW image input [1,3,S,S]; `role` names its extra settings key. */
async function squareImageModel(
  manifest: LoadedManifest,
  modelDir: string,
  model: string,
  role: string,
  runtime: RuntimeChoice,
): Promise<SquareImageModel> {
  const file = manifest.file;
  const entry = Object.hasOwn(manifest.models, model) ? manifest.models[model] : undefined;
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
  const ortPath = path.join(modelDir, entry['ortFile']);
  for (const f of [modelPath, ortPath]) {
    try {
      await fs.access(f);
    } catch (e) {
      throw setupError(`model file ${f} not found`, e);
    }
  }
  // decoded images are BGR
  return { entry, path: modelPath, ortPath, runtime, inputSize: shape[2] as number, meanValue: mean, scale, swapRB: color === 'RGB' };
}

/** The native face detector spec for `model`. */
async function faceDetectorSpec(
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
async function poseEstimatorSpec(
  manifest: LoadedManifest,
  modelDir: string,
  model: PoseModel,
  runtime: RuntimeChoice,
): Promise<NativePoseEstimatorSpec> {
  const { entry, ...common } = await squareImageModel(manifest, modelDir, model, 'pose', runtime);
  const outputs = (entry['pose'] as Record<string, unknown>)['outputs'];
  if (!stringArray(outputs) || outputs.length !== 6) {
    throw manifestError(manifest.file, `model "${model}": pose.outputs must name the 6 heads`);
  }
  return { ...common, outputs };
}

interface ObjectDetectorChoice {
  spec: NativeObjectDetectorSpec | NativeYoloDetectorSpec;
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
): Promise<ObjectDetectorChoice> {
  const raw = Object.hasOwn(manifest.models, model) ? manifest.models[model] : undefined;
  const isYolo = isRecord(raw) && isRecord(raw['yolo']);
  const { entry, ...common } = await squareImageModel(manifest, modelDir, model, isYolo ? 'yolo' : 'objects', runtime);
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
  return { spec: { ...common, heatmapOutput, boxOutput, classes }, info: { ...info, kind: 'centernet' }, labels: COCO_CLASSES };
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
async function chooseObjectDetector(
  opts: EngineOptions,
  manifest: LoadedManifest,
  modelDir: string,
  runtime: RuntimeChoice,
): Promise<ObjectDetectorChoice | null> {
  const value: unknown = opts.objectDetector;
  const custom = typeof value === 'string' && isModelPath(value);
  if (!custom && (opts.objectLabels !== undefined || opts.objectInputSize !== undefined)) {
    throw invalidArgument('objectLabels and objectInputSize apply only to an own model (objectDetector = a path to an .onnx file)');
  }
  if (custom) {
    if (opts.objectLabels !== undefined && (typeof opts.objectLabels !== 'string' || opts.objectLabels.length === 0)) {
      throw invalidArgument('objectLabels must be a path to a labels file');
    }
    const inputSize = intOption(opts.objectInputSize, 'objectInputSize', CUSTOM_OBJECT_INPUT_SIZE, 32, 4096);
    if (inputSize % 32 !== 0) throw invalidArgument(`objectInputSize must be a multiple of 32 (got ${inputSize})`);
    return customObjectDetectorSpec(value, opts.objectLabels, inputSize, runtime);
  }
  const model = modelOption(value, 'objectDetector', OBJECT_DETECTOR_MODELS, ENGINE_DEFAULTS.objectDetector);
  return model === null ? null : objectDetectorSpec(manifest, modelDir, model, runtime);
}

// ------------------------------------------------------------------ the engine

export class Engine {
  readonly #native: NativeEngine;
  readonly #manifest: LoadedManifest;
  readonly #modelDir: string;
  readonly #limits: ImageLimits;
  readonly #backend: BackendInfo;
  readonly #embedder: FaceEmbedderInfo | null;
  #closed = false;
  #closing: Promise<void> | undefined;
  #models: EngineModels = { faceDetector: ENGINE_DEFAULTS.faceDetector, pose: null, objects: null, faceEmbedder: null };
  #objects: { info: ObjectModelInfo; labels: readonly string[] } | null = null;

  private constructor(
    native: NativeEngine,
    manifest: LoadedManifest,
    modelDir: string,
    limits: ImageLimits,
    embedder: FaceEmbedderInfo | null,
  ) {
    this.#embedder = embedder;
    this.#native = native;
    this.#manifest = manifest;
    this.#modelDir = modelDir;
    this.#limits = limits;
    this.#backend = native.backend();
  }

  /** Loads the models (one copy per worker) and starts the workers. */
  static async open(opts: EngineOptions = {}): Promise<Engine> {
    if (typeof opts !== 'object' || opts === null) throw invalidArgument('Engine.open options must be an object');
    const workers = intOption(opts.workers, 'workers', ENGINE_DEFAULTS.workers, 1, 64);
    const threadsPerWorker = intOption(opts.threadsPerWorker, 'threadsPerWorker', ENGINE_DEFAULTS.threadsPerWorker, 1, 64);
    const queueLimit = intOption(opts.queueLimit, 'queueLimit', ENGINE_DEFAULTS.queueLimit, 1, 1_000_000);
    const limits: ImageLimits = {
      maxPixels: intOption(opts.maxPixels, 'maxPixels', ENGINE_DEFAULTS.maxPixels, 1, Number.MAX_SAFE_INTEGER),
      maxAspectRatio: intOption(opts.maxAspectRatio, 'maxAspectRatio', ENGINE_DEFAULTS.maxAspectRatio, 1, 1_000_000),
      minSide: intOption(opts.minImageSide, 'minImageSide', ENGINE_DEFAULTS.minImageSide, 1, 65_535),
    };
    const faceDetector: unknown = opts.faceDetector ?? ENGINE_DEFAULTS.faceDetector;
    if (!isFaceDetectorModel(faceDetector)) {
      throw invalidArgument(`faceDetector must be one of ${FACE_DETECTOR_MODELS.join(', ')} (got ${String(faceDetector)})`);
    }
    const poseModel = modelOption(opts.poseModel, 'poseModel', POSE_MODELS, ENGINE_DEFAULTS.poseModel);
    if (opts.modelDir !== undefined && (typeof opts.modelDir !== 'string' || opts.modelDir.length === 0)) {
      throw invalidArgument('modelDir must be a non-empty string');
    }
    const faceEmbedder: unknown = opts.faceEmbedder === undefined ? ENGINE_DEFAULTS.faceEmbedder : opts.faceEmbedder;
    if (faceEmbedder !== null && !isFaceEmbedderModel(faceEmbedder)) {
      throw invalidArgument(`faceEmbedder must be null or one of ${FACE_EMBEDDER_MODELS.join(', ')} (got ${String(faceEmbedder)})`);
    }
    const modelDir = path.resolve(opts.modelDir ?? path.join(packageRoot(), 'models', 'onnx'));
    const runtime = choiceOption(opts.runtime, 'runtime', RUNTIMES, ENGINE_DEFAULTS.runtime);
    const backend = choiceOption(opts.backend ?? envBackend(), 'backend', BACKENDS, ENGINE_DEFAULTS.backend);
    if (opts.onnxRuntimeLibrary !== undefined && (typeof opts.onnxRuntimeLibrary !== 'string' || opts.onnxRuntimeLibrary === '')) {
      throw invalidArgument('onnxRuntimeLibrary must be a non-empty string');
    }
    // OpenCV alone needs no onnxruntime: do not load it then.
    const library = runtime === 'opencv' ? null : opts.onnxRuntimeLibrary ? { path: opts.onnxRuntimeLibrary } : findOnnxRuntimeLibrary();
    if (runtime === 'onnxruntime' && library !== null && 'missing' in library) {
      throw invalidArgument(`runtime onnxruntime: ${library.missing}`);
    }

    const manifest = await readManifest(modelDir);
    const spec = await faceDetectorSpec(manifest, modelDir, faceDetector, runtime);
    const poseEstimator = poseModel === null ? undefined : await poseEstimatorSpec(manifest, modelDir, poseModel, runtime);
    const objects = await chooseObjectDetector(opts, manifest, modelDir, runtime);
    const embedder =
      faceEmbedder === null
        ? null
        : faceEmbedderFromManifest(manifest.models[faceEmbedder], faceEmbedder, (f) => path.join(modelDir, f), manifest.file, runtime);
    const binding = loadNative();
    // Synchronous: loads and warms up workers x models; throws a clear Error if a model is unusable.
    const native = binding.createEngine({
      workers,
      threadsPerWorker,
      queueLimit,
      backend,
      ...(library !== null && 'path' in library ? { onnxRuntimeLibrary: library.path } : {}),
      faceDetector: spec,
      poseEstimator,
      ...(objects ? { objectDetector: objects.spec } : {}),
      ...(embedder ? { faceEmbedder: embedder.spec } : {}),
    });
    const embedderInfo = embedder ? { ...embedder.info, dim: native.embeddingSize() } : null;
    const engine = new Engine(native, manifest, modelDir, limits, embedderInfo);
    engine.#models = { faceDetector, pose: poseModel, objects: objects?.info.name ?? null, faceEmbedder };
    engine.#objects = objects ? { info: objects.info, labels: objects.labels } : null;
    return engine;
  }

  /** The object model (name, kind, input size, licence), or null when none is loaded. */
  get objectModel(): ObjectModelInfo | null {
    return this.#objects ? { ...this.#objects.info } : null;
  }

  /** The models this engine loaded (labels for metrics and logs); null where a model was left out. */
  get models(): EngineModels {
    return { ...this.#models };
  }

  /** Finds faces in a PNG or JPEG image. Rejects with EngineError (see EngineErrorCode). */
  async detectFaces(image: Buffer | Uint8Array, opts: DetectFacesOptions = {}): Promise<FaceDetection> {
    const { header, bytes } = this.#checkImage(image, opts, 'detectFaces');
    const options = resolveTiles(checkDetectOptions(opts), header);
    try {
      const result = await this.#native.detectFaces(bytes, options);
      return { ...result, format: header.format };
    } catch (e) {
      throw toEngineError(e);
    }
  }

  /** The embedding model in use (null when the engine was opened with faceEmbedder: null). */
  faceEmbedder(): FaceEmbedderInfo | null {
    return this.#embedder ? { ...this.#embedder } : null;
  }

  #requireEmbedder(): FaceEmbedderInfo {
    if (!this.#embedder) throw invalidArgument('this engine was opened with faceEmbedder: null');
    return this.#embedder;
  }

  /** An empty gallery for this engine's embeddings (options: when to search it approximately, and how). */
  createGallery(options: GalleryIndexOptions = {}): GalleryIndex {
    return new GalleryIndex(this.#requireEmbedder().dim, options);
  }

  /**
   * Detects the faces and embeds the first one: the highest detection score (ties: leftmost, then topmost). With
   * options.rect, embeds that box instead of detecting. No face is a result (face and embedding null), not an error.
   */
  async embedFace(image: Buffer | Uint8Array, opts: EmbedFaceOptions = {}): Promise<FaceEmbeddingResult> {
    return this.#embed(image, opts, undefined);
  }

  /** embedFace() plus the nearest entry of `gallery` (null when the gallery is empty or no face was found). */
  async recognizeFace(
    image: Buffer | Uint8Array,
    gallery: GalleryIndex,
    opts: EmbedFaceOptions = {},
  ): Promise<FaceEmbeddingResult & { match: GalleryMatch | null }> {
    return this.#embed(image, opts, gallery);
  }

  async #embed(image: Buffer | Uint8Array, opts: EmbedFaceOptions, gallery: GalleryIndex | undefined) {
    const embedder = this.#requireEmbedder();
    const { header, bytes } = this.#checkImage(image, opts, 'embedFace');
    const native = gallery === undefined ? undefined : nativeGallery(gallery);
    if (native && native.dim() !== embedder.dim) throw invalidArgument(`gallery has dimension ${native.dim()}, the model ${embedder.dim}`);
    const checked = checkEmbedOptions(opts, (d) => {
      if (typeof d !== 'object' || d === null) throw invalidArgument('detect options must be an object');
      return checkDetectOptions(d as DetectFacesOptions);
    });
    try {
      // A large gallery is searched approximately on this thread once the embedding is back; a small one exactly,
      // inside the job on the worker.
      const approximate = gallery !== undefined && gallery.approximate;
      const result = await this.#native.embedFace(bytes, {
        detect: resolveTiles(checked.detect, header),
        cropScale: checked.cropScale,
        keepCrop: checked.keepCrop,
        ...(checked.rect ? { rect: checked.rect } : {}),
        ...(native && !approximate ? { gallery: native } : {}),
      });
      if (approximate && result.embedding) {
        const t = performance.now();
        result.match = gallery.searchApproximate(result.embedding);
        result.timings.searchMs = performance.now() - t;
      }
      return result;
    } catch (e) {
      throw toEngineError(e);
    }
  }

  /**
   * The nearest entry of `gallery` to `embedding` (null when the gallery is empty): through its approximate index
   * on this thread when it has one in use, else (or with `exact: true`) with the exact index on a worker.
   */
  async searchGallery(
    gallery: GalleryIndex,
    embedding: Float32Array,
    opts: { exact?: boolean } = {},
  ): Promise<{ match: GalleryMatch | null; searchMs: number }> {
    if (this.#closed) throw new EngineError('CLOSED', 'engine is closed');
    const native = nativeGallery(gallery);
    const query = l2Normalized(checkEmbedding(embedding, native.dim(), 'query'), 'query');
    if (gallery.approximate && opts.exact !== true) {
      const t = performance.now();
      const match = gallery.searchApproximate(query);
      return { match, searchMs: performance.now() - t };
    }
    try {
      return await this.#native.searchGallery(native, query);
    } catch (e) {
      throw toEngineError(e);
    }
  }

  /**
   * Finds people and their keypoints in a PNG or JPEG image: at most `maxPoses` (default 6), best first.
   * Rejects with EngineError (see EngineErrorCode).
   */
  async detectPoses(image: Buffer | Uint8Array, opts: DetectPosesOptions = {}): Promise<PoseDetection> {
    const { header, bytes } = this.#checkImage(image, opts, 'detectPoses');
    const keypointThreshold = unitOption(opts.keypointThreshold, 'keypointThreshold', POSE_DEFAULTS.keypointThreshold);
    const personClassId = this.#objects?.labels.indexOf('person') ?? -1;
    const mode = choiceOption(opts.mode, 'mode', POSE_MODES, personClassId >= 0 ? POSE_DEFAULTS.mode : 'whole');
    if (mode === 'persons' && personClassId < 0) {
      throw invalidArgument("mode 'persons' needs an object model with a \"person\" class (this engine has none)");
    }
    const defaultMax = mode === 'persons' ? POSE_DEFAULTS.maxPosesPersons : POSE_DEFAULTS.maxPoses;
    const defaultScore = mode === 'persons' ? POSE_DEFAULTS.scoreThresholdPersons : POSE_DEFAULTS.scoreThreshold;
    const scoreThreshold = unitOption(opts.scoreThreshold, 'scoreThreshold', defaultScore);
    const maxPoses = intOption(opts.maxPoses, 'maxPoses', defaultMax, 1, MAX_POSES_LIMIT);
    try {
      const result = await this.#native.detectPoses(bytes, {
        scoreThreshold,
        maxPoses,
        personClassId: mode === 'persons' ? personClassId : -1,
        personThreshold: POSE_DEFAULTS.personThreshold,
      });
      const poses = result.poses.map((p) => ({
        score: p.score,
        box: p.box,
        keypoints: Array.from({ length: p.keypoints.length / 3 }, (_, i) => ({
          x: p.keypoints[3 * i]!,
          y: p.keypoints[3 * i + 1]!,
          score: p.keypoints[3 * i + 2]!,
        })),
        body25: cocoToBody25(p.keypoints, keypointThreshold),
      }));
      return { width: result.width, height: result.height, format: header.format, poses, timings: result.timings };
    } catch (e) {
      throw toEngineError(e);
    }
  }

  /** Finds COCO objects in a PNG or JPEG image, best first. Rejects with EngineError (see EngineErrorCode). */
  async detectObjects(image: Buffer | Uint8Array, opts: DetectObjectsOptions = {}): Promise<ObjectDetection> {
    const { header, bytes } = this.#checkImage(image, opts, 'detectObjects');
    const kind = this.#objects?.info.kind ?? 'centernet';
    const scoreThreshold = unitOption(opts.scoreThreshold, 'scoreThreshold', OBJECT_DEFAULTS.scoreThreshold[kind]);
    const maxObjects = intOption(opts.maxObjects, 'maxObjects', OBJECT_DEFAULTS.maxObjects, 1, 1000);
    try {
      const result = await this.#native.detectObjects(bytes, { scoreThreshold, maxObjects });
      const objects = result.objects.map((o) => ({
        rect: o.rect,
        className: this.#objects?.labels[o.classId] ?? String(o.classId),
        classId: o.classId,
        score: o.score,
      }));
      return { width: result.width, height: result.height, format: header.format, objects, timings: result.timings };
    } catch (e) {
      throw toEngineError(e);
    }
  }

  /** The checks every image call makes before native code: open engine, bytes, options object, then admitImage. */
  #checkImage(image: unknown, opts: unknown, method: string): AdmittedImage {
    if (this.#closed) throw new EngineError('CLOSED', 'engine is closed');
    if (!(image instanceof Uint8Array)) throw invalidArgument('image must be a Buffer or Uint8Array');
    if (typeof opts !== 'object' || opts === null) throw invalidArgument(`${method} options must be an object`);
    return admitImage(image, this.#limits); // UNSUPPORTED_FORMAT / INVALID_IMAGE / IMAGE_TOO_LARGE
  }

  /**
   * One forward pass of any model in the manifest on a caller-made input tensor (NCHW, already normalized),
   * returning its outputs in manifest order. For checking converted models (parity tests); goes through the
   * same queue and workers as detection, each worker loading the model on first use.
   */
  async runModel(name: string, input: Float32Array, opts: { runtime?: NativeRuntime } = {}): Promise<Float32Array[]> {
    if (this.#closed) throw new EngineError('CLOSED', 'engine is closed');
    if (typeof name !== 'string') throw invalidArgument('model name must be a string');
    if (!(input instanceof Float32Array)) throw invalidArgument('input must be a Float32Array');
    if (typeof opts !== 'object' || opts === null) throw invalidArgument('runModel options must be an object');
    const runtime = choiceOption(opts.runtime, 'runtime', ['onnxruntime', 'opencv'] as const, this.#backend.onnxRuntime ? 'onnxruntime' : 'opencv');
    const spec = rawModelSpec(this.#manifest, this.#modelDir, name, runtime);
    if (spec === null) {
      throw invalidArgument(`unknown model "${name}" (known: ${Object.keys(this.#manifest.models).join(', ')})`);
    }
    const expected = spec.inputShape.reduce((a, b) => a * b, 1);
    if (input.length !== expected) {
      throw invalidArgument(`input has ${input.length} values; ${name} takes [${spec.inputShape.join(',')}] = ${expected}`);
    }
    try {
      return await this.#native.runModel(input, spec);
    } catch (e) {
      throw toEngineError(e);
    }
  }

  /** The device in use (the single source of "gpu_support") and the runtime of each model. */
  backend(): BackendInfo {
    return { ...this.#backend };
  }

  stats(): EngineStats {
    return this.#native.stats();
  }

  get closed(): boolean {
    return this.#closed;
  }

  /** Stops accepting work, lets queued jobs finish, joins the workers. Idempotent. */
  close(): Promise<void> {
    this.#closed = true;
    this.#closing ??= this.#native.close().catch((e: unknown) => {
      throw toEngineError(e);
    });
    return this.#closing;
  }
}
