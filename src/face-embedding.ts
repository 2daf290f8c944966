// Face embeddings: the model choice, its manifest settings (crop margin, calibrated distance scale), the
// options of Engine.embedFace() and their validation, and the calibrated distance itself.

import { EngineError } from './errors.js';
import type { NativeFaceEmbedderSpec, NativeRuntimeChoice } from './native.js';

export const FACE_EMBEDDER_MODELS = ['faceres-deep', 'faceres'] as const;
export type FaceEmbedderModel = (typeof FACE_EMBEDDER_MODELS)[number];

export function isFaceEmbedderModel(value: unknown): value is FaceEmbedderModel {
  return typeof value === 'string' && (FACE_EMBEDDER_MODELS as readonly string[]).includes(value);
}

/** What an embedding was made with. Stored with every enrolled sample: a different one means re-embedding. */
export interface FaceEmbedderInfo {
  model: FaceEmbedderModel;
  /** The converted file's sha256 (first 16 hex digits) and the crop margin: anything that changes the vectors. */
  version: string;
  /** Length of an embedding. */
  dim: number;
  /** Side of the square crop fed to the model, as a multiple of the face box's longer side. */
  cropScale: number;
  /** distance = (1 - cosine) x distanceScale; calibrated so that 105 is the equal-error-rate threshold. */
  distanceScale: number;
}

export interface EmbedFaceOptions {
  /** Embed this face box [l, t, r, b) instead of detecting one. */
  rect?: [number, number, number, number];
  /** Override the model's crop margin (bench and calibration only). 0.5 to 4. */
  cropScale?: number;
  /** Also return a JPEG crop of twice the face box (at most 448 px) for re-embedding later. */
  keepCrop?: boolean;
  /** Face detection settings, as for detectFaces(). */
  detect?: { scoreThreshold?: number; iouThreshold?: number; tiles?: number | 'auto' };
}

export interface EmbeddedFace {
  /** [l, t, r, b) in image pixels. */
  rect: [number, number, number, number];
  /** Detection score; 1 when the rect was given. */
  score: number;
}

export interface FaceEmbeddingResult {
  width: number;
  height: number;
  /** Every detected face, highest score first (empty when options.rect was given). */
  faces: { rect: [number, number, number, number]; score: number; keypoints: number[] }[];
  /** The embedded face: the first of `faces` (highest score; ties: leftmost, then topmost), or the given rect. */
  face: EmbeddedFace | null;
  /** L2-normalized; null when no face was found. */
  embedding: Float32Array | null;
  /** With keepCrop: the JPEG and the face box inside it. */
  crop: { jpeg: Buffer; rect: [number, number, number, number] } | null;
  timings: {
    queueMs: number;
    decodeMs: number;
    detectMs: number;
    embedPreprocessMs: number;
    embedInferenceMs: number;
    searchMs: number;
  };
}

export interface GalleryMatch {
  /** Sample id of the nearest enrolled embedding. */
  id: number;
  subject: string;
  /** Cosine similarity, -1..1. */
  cosine: number;
}

/** The calibrated distance at the equal-error rate: the accept/reject threshold (README "Face recognition"). */
export const EER_DISTANCE = 105;

/** Calibrated distance: 0 = identical, larger = less alike; EER_DISTANCE (105) is the equal-error-rate threshold. */
export function calibratedDistance(cosine: number, distanceScale: number): number {
  return Math.max(0, (1 - cosine) * distanceScale);
}

function invalid(message: string): EngineError {
  return new EngineError('INVALID_ARGUMENT', message);
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Checks a rect option: 4 integers with l < r and t < b. */
export function checkRect(value: unknown): [number, number, number, number] {
  if (
    !Array.isArray(value) ||
    value.length !== 4 ||
    !value.every((v) => Number.isInteger(v) && Math.abs(v as number) < 1e9) ||
    !((value[0] as number) < (value[2] as number) && (value[1] as number) < (value[3] as number))
  ) {
    throw invalid(`rect must be [left, top, right, bottom]: integers with left < right and top < bottom (got ${JSON.stringify(value)})`);
  }
  return value as [number, number, number, number];
}

/** Checks a query embedding: a Float32Array of `dim` finite numbers. */
export function checkEmbedding(value: unknown, dim: number, name = 'embedding'): Float32Array {
  if (!(value instanceof Float32Array)) throw invalid(`${name} must be a Float32Array`);
  if (value.length !== dim) throw invalid(`${name} has ${value.length} values; the model's embeddings have ${dim}`);
  if (!value.every(Number.isFinite)) throw invalid(`${name} holds a non-finite value`);
  return value;
}

/** The L2-normalized copy of a vector; throws INVALID_ARGUMENT on a zero or non-finite vector. */
export function l2Normalized(values: Float32Array, name = 'embedding'): Float32Array {
  let sum = 0;
  for (const v of values) sum += v * v;
  const norm = Math.sqrt(sum);
  if (!Number.isFinite(norm) || norm === 0) throw invalid(`${name} has no direction (zero or non-finite norm)`);
  return values.map((v) => v / norm);
}

/** The native spec and the public info of an embedding model, from its entry in <modelDir>/manifest.json. */
export function faceEmbedderFromManifest(
  entry: unknown,
  model: FaceEmbedderModel,
  modelPath: (file: string) => string,
  manifestFile: string,
  runtime: NativeRuntimeChoice,
): { spec: NativeFaceEmbedderSpec; info: Omit<FaceEmbedderInfo, 'dim'> } {
  const fail = (what: string) => new Error(`${manifestFile}: model "${model}": ${what}; run \`npm run setup\` to regenerate it`);
  if (!isRecord(entry)) throw fail('not in the manifest');
  const input = entry['input'];
  const outputs = entry['outputs'];
  const recognition = entry['recognition'];
  if (
    typeof entry['file'] !== 'string' ||
    typeof entry['ortFile'] !== 'string' ||
    typeof entry['sha256'] !== 'string' ||
    !isRecord(input) ||
    !Array.isArray(outputs)
  ) {
    throw fail('lacks file, ortFile, sha256, input or outputs');
  }
  const shape = input['shape'];
  if (!Array.isArray(shape) || shape.length !== 4 || shape[1] !== 3 || shape[2] !== shape[3] || !Number.isInteger(shape[2])) {
    throw fail(`expected a square NCHW input [1,3,S,S], got ${JSON.stringify(shape)}`);
  }
  const output = outputs.find((o) => isRecord(o) && o['name'] === 'embedding');
  if (!isRecord(output)) throw fail('has no output named "embedding"');
  const mean = input['mean'];
  const scale = input['scale'];
  const color = input['color'];
  if (typeof mean !== 'number' || typeof scale !== 'number' || (color !== 'RGB' && color !== 'BGR')) {
    throw fail('input needs numeric mean/scale and color RGB or BGR');
  }
  if (!isRecord(recognition) || typeof recognition['cropScale'] !== 'number' || typeof recognition['distanceScale'] !== 'number') {
    throw fail('needs recognition.cropScale and recognition.distanceScale');
  }
  const cropScale = recognition['cropScale'];
  const distanceScale = recognition['distanceScale'];
  if (!(cropScale >= 0.5 && cropScale <= 4) || !(distanceScale > 0)) throw fail('recognition.cropScale must be 0.5..4, distanceScale > 0');
  return {
    spec: {
      path: modelPath(entry['file']),
      ortPath: modelPath(entry['ortFile']),
      runtime,
      inputSize: shape[2] as number,
      output: 'embedding',
      meanValue: mean,
      scale,
      swapRB: color === 'RGB',
      cropScale,
    },
    info: { model, version: `${entry['sha256'].slice(0, 16)}-crop${cropScale}`, cropScale, distanceScale },
  };
}

/** Validates embedFace() options into the native request (everything but the gallery). */
export function checkEmbedOptions(
  opts: unknown,
  detect: (o: unknown) => { scoreThreshold: number; iouThreshold: number; tiles: number | 'auto' },
): { rect?: [number, number, number, number]; cropScale: number; keepCrop: boolean; detect: { scoreThreshold: number; iouThreshold: number; tiles: number | 'auto' } } {
  if (!isRecord(opts)) throw invalid('embedFace options must be an object');
  const out: ReturnType<typeof checkEmbedOptions> = { cropScale: 0, keepCrop: false, detect: detect(opts['detect'] ?? {}) };
  if (opts['rect'] !== undefined) out.rect = checkRect(opts['rect']);
  const cropScale = opts['cropScale'];
  if (cropScale !== undefined) {
    if (typeof cropScale !== 'number' || !(cropScale >= 0.5 && cropScale <= 4)) throw invalid(`cropScale must be a number from 0.5 to 4 (got ${String(cropScale)})`);
    out.cropScale = cropScale;
  }
  const keepCrop = opts['keepCrop'];
  if (keepCrop !== undefined && typeof keepCrop !== 'boolean') throw invalid('keepCrop must be a boolean');
  out.keepCrop = keepCrop === true;
  return out;
}
