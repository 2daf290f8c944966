// Checks of what a caller passes the engine: each helper returns the value (or its default from limits.ts) or
// throws EngineError INVALID_ARGUMENT with a message naming the option and what it accepts.

import path from 'node:path';
import { EngineError } from './errors.js';
import type { ImageLimits } from './image-admission.js';
import type { ImageHeader } from './image-header.js';
import { autoTiles, DETECT_DEFAULTS, ENGINE_DEFAULTS, ENGINE_RANGES, type IntRange } from './limits.js';
import { packageRoot } from './native.js';
import { findOnnxRuntimeLibrary } from './onnxruntime-library.js';
import {
  BACKENDS,
  FACE_DETECTOR_MODELS,
  FACE_EMBEDDER_MODELS,
  IDLE_CORES,
  NET_DEVICES,
  NET_KEYS,
  POSE_MODELS,
  PRECISION_CHOICES,
  RUNTIMES,
  type BackendChoice,
  type DetectFacesOptions,
  type EngineOptions,
  type FaceDetectorModel,
  type FaceEmbedderModel,
  type IdleCoresChoice,
  type NetDevice,
  type NetKey,
  type PoseModel,
  type PrecisionChoice,
  type RuntimeChoice,
} from './types.js';

export function invalidArgument(message: string, cause?: unknown): EngineError {
  return new EngineError('INVALID_ARGUMENT', message, cause === undefined ? undefined : { cause });
}

/** A plain object (not null, not an array): what JSON objects and option bags are checked with. */
export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** `value` if it is an integer in `range`, the default for undefined; INVALID_ARGUMENT otherwise. */
export function intOption(value: unknown, name: string, fallback: number, range: IntRange): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < range.min || value > range.max) {
    throw invalidArgument(`${name} must be an integer from ${range.min} to ${range.max} (got ${String(value)})`);
  }
  return value;
}

/** `value` if it is a number from 0 to 1, the default for undefined; INVALID_ARGUMENT otherwise. */
export function unitOption(value: unknown, name: string, fallback: number): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0 || value > 1) {
    throw invalidArgument(`${name} must be a number from 0 to 1 (got ${String(value)})`);
  }
  return value;
}

/** `value` if it is one of `choices`, the default for undefined; INVALID_ARGUMENT otherwise. */
export function choiceOption<T extends string>(value: unknown, name: string, choices: readonly T[], fallback: T): T {
  if (value === undefined) return fallback;
  if (typeof value !== 'string' || !(choices as readonly string[]).includes(value)) {
    throw invalidArgument(`${name} must be one of ${choices.join(', ')} (got ${String(value)})`);
  }
  return value as T;
}

/** `value` if it is one of `choices`, null for null, the default for undefined; INVALID_ARGUMENT otherwise. */
export function modelOption<T extends string>(value: unknown, name: string, choices: readonly T[], fallback: T): T | null {
  if (value === null) return null;
  if (value !== undefined && (typeof value !== 'string' || !(choices as readonly string[]).includes(value))) {
    throw invalidArgument(`${name} must be null or one of ${choices.join(', ')} (got ${String(value)})`);
  }
  return (value as T | undefined) ?? fallback;
}

/** `value` if it is a non-empty string, undefined for undefined; INVALID_ARGUMENT otherwise. */
export function pathOption(value: unknown, name: string, what = 'a non-empty string'): string | undefined {
  if (value !== undefined && (typeof value !== 'string' || value.length === 0)) throw invalidArgument(`${name} must be ${what}`);
  return value;
}

/** Face-detection options with every default filled in; tiles stay 'auto' until the image size is known. */
export interface CheckedDetectOptions {
  scoreThreshold: number;
  iouThreshold: number;
  tiles: number | 'auto';
}

/** Checks face-detection options (an object: INVALID_ARGUMENT naming `what` otherwise). */
export function checkDetectOptions(opts: unknown, what = 'detectFaces options'): CheckedDetectOptions {
  if (typeof opts !== 'object' || opts === null) throw invalidArgument(`${what} must be an object`);
  const { scoreThreshold, iouThreshold, tiles = DETECT_DEFAULTS.tiles } = opts as DetectFacesOptions;
  const { min, max } = ENGINE_RANGES.tiles;
  if (tiles !== 'auto' && (typeof tiles !== 'number' || !Number.isInteger(tiles) || tiles < min || tiles > max)) {
    throw invalidArgument(`tiles must be 'auto' or an integer from ${min} to ${max} (got ${String(tiles)})`);
  }
  return {
    scoreThreshold: unitOption(scoreThreshold, 'scoreThreshold', DETECT_DEFAULTS.scoreThreshold),
    iouThreshold: unitOption(iouThreshold, 'iouThreshold', DETECT_DEFAULTS.iouThreshold),
    tiles,
  };
}

/** The detect options with 'auto' tiles resolved for this image. */
export function resolveTiles(options: CheckedDetectOptions, header: ImageHeader): CheckedDetectOptions & { tiles: number } {
  return { ...options, tiles: options.tiles === 'auto' ? autoTiles(header.width, header.height) : options.tiles };
}

/** EDGECV_BACKEND, the override the addon has always honoured; undefined when unset or empty. */
export function envBackend(): string | undefined {
  const value = process.env['EDGECV_BACKEND'];
  return value === undefined || value === '' ? undefined : value;
}

/** netDevices: an object from net keys to 'auto', 'cpu' or 'gpu'; INVALID_ARGUMENT naming the key otherwise. */
export function netDevicesOption(value: unknown): Partial<Record<NetKey, NetDevice>> {
  if (value === undefined) return {};
  if (!isRecord(value)) throw invalidArgument(`netDevices must be an object from ${NET_KEYS.join(', ')} to ${NET_DEVICES.join(', ')}`);
  const out: Partial<Record<NetKey, NetDevice>> = {};
  for (const [key, device] of Object.entries(value)) {
    if (!(NET_KEYS as readonly string[]).includes(key)) throw invalidArgument(`netDevices: unknown net "${key}" (nets: ${NET_KEYS.join(', ')})`);
    out[key as NetKey] = choiceOption(device, `netDevices.${key}`, NET_DEVICES, 'auto');
  }
  return out;
}

/** Engine.open() options, checked, with every default filled in (everything but the model files). */
export interface CheckedEngineOptions {
  workers: number;
  threadsPerWorker: number;
  queueLimit: number;
  idleCores: IdleCoresChoice;
  warmUp: boolean;
  limits: ImageLimits;
  faceDetector: FaceDetectorModel;
  poseModel: PoseModel | null;
  faceEmbedder: FaceEmbedderModel | null;
  faceAlignment: boolean;
  /** Absolute. */
  modelDir: string;
  runtime: RuntimeChoice;
  precision: PrecisionChoice;
  backend: BackendChoice;
  /** Nets forced to a device with backend gpu or auto (the rest: the GPU check decides). */
  netDevices: Partial<Record<NetKey, NetDevice>>;
  /** The onnxruntime library to load, why there is none, or null where only OpenCV is wanted. */
  library: { path: string } | { missing: string } | null;
}

/** Checks Engine.open() options (the object model's are checked with its manifest entry, manifest.ts). */
export function checkEngineOptions(opts: EngineOptions): CheckedEngineOptions {
  if (typeof opts !== 'object' || opts === null) throw invalidArgument('Engine.open options must be an object');
  const workers = intOption(opts.workers, 'workers', ENGINE_DEFAULTS.workers, ENGINE_RANGES.workers);
  const threadsPerWorker = intOption(opts.threadsPerWorker, 'threadsPerWorker', ENGINE_DEFAULTS.threadsPerWorker, ENGINE_RANGES.threadsPerWorker);
  const queueLimit = intOption(opts.queueLimit, 'queueLimit', ENGINE_DEFAULTS.queueLimit, ENGINE_RANGES.queueLimit);
  const idleCores = choiceOption(opts.idleCores, 'idleCores', IDLE_CORES, ENGINE_DEFAULTS.idleCores);
  if (opts.warmUp !== undefined && typeof opts.warmUp !== 'boolean') throw invalidArgument('warmUp must be a boolean');
  const warmUp = opts.warmUp ?? true;
  if (opts.onStartupPhase !== undefined && typeof opts.onStartupPhase !== 'function') throw invalidArgument('onStartupPhase must be a function');
  const limits: ImageLimits = {
    maxPixels: intOption(opts.maxPixels, 'maxPixels', ENGINE_DEFAULTS.maxPixels, ENGINE_RANGES.maxPixels),
    maxAspectRatio: intOption(opts.maxAspectRatio, 'maxAspectRatio', ENGINE_DEFAULTS.maxAspectRatio, ENGINE_RANGES.maxAspectRatio),
    minSide: intOption(opts.minImageSide, 'minImageSide', ENGINE_DEFAULTS.minImageSide, ENGINE_RANGES.minImageSide),
  };
  // null counts as left out here (there is always a face detector).
  const faceDetector = choiceOption(opts.faceDetector ?? undefined, 'faceDetector', FACE_DETECTOR_MODELS, ENGINE_DEFAULTS.faceDetector);
  const poseModel = modelOption(opts.poseModel, 'poseModel', POSE_MODELS, ENGINE_DEFAULTS.poseModel);
  const modelDirOption = pathOption(opts.modelDir, 'modelDir');
  const faceEmbedder = modelOption(opts.faceEmbedder, 'faceEmbedder', FACE_EMBEDDER_MODELS, ENGINE_DEFAULTS.faceEmbedder);
  if (opts.faceAlignment !== undefined && typeof opts.faceAlignment !== 'boolean') throw invalidArgument('faceAlignment must be a boolean');
  const faceAlignment = opts.faceAlignment ?? true;
  const modelDir = path.resolve(modelDirOption ?? path.join(packageRoot(), 'models', 'onnx'));
  const runtime = choiceOption(opts.runtime, 'runtime', RUNTIMES, ENGINE_DEFAULTS.runtime);
  const precision = choiceOption(opts.precision, 'precision', PRECISION_CHOICES, ENGINE_DEFAULTS.precision);
  const backend = choiceOption(opts.backend ?? envBackend(), 'backend', BACKENDS, ENGINE_DEFAULTS.backend);
  const netDevices = netDevicesOption(opts.netDevices);
  const onnxRuntimeLibrary = pathOption(opts.onnxRuntimeLibrary, 'onnxRuntimeLibrary');
  // OpenCV alone needs no onnxruntime: do not load it then.
  const library = runtime === 'opencv' ? null : onnxRuntimeLibrary ? { path: onnxRuntimeLibrary } : findOnnxRuntimeLibrary();
  if (runtime === 'onnxruntime' && library !== null && 'missing' in library) {
    throw invalidArgument(`runtime onnxruntime: ${library.missing}`);
  }
  return {
    workers,
    threadsPerWorker,
    queueLimit,
    idleCores,
    warmUp,
    limits,
    faceDetector,
    poseModel,
    faceEmbedder,
    faceAlignment,
    modelDir,
    runtime,
    precision,
    backend,
    netDevices,
    library,
  };
}
