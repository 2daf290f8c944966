// Face embeddings: what an embedding was made with, the options of Engine.embedFace() and their validation,
// query checks, and the calibrated distance. (The model's manifest settings are read in manifest.ts.)

import { CROP_SCALE_RANGE } from './limits.js';
import { invalidArgument as invalid, isRecord, type CheckedDetectOptions } from './options.js';
import { FACE_EMBEDDER_MODELS, type FaceEmbedderModel } from './types.js';

// The model list is with the other choice lists (types.ts); exported here too, where the embedding API is.
export { FACE_EMBEDDER_MODELS, type FaceEmbedderModel };

/**
 * The alignment embeddings are made with, part of the embedder's version: faces warped by their landmarks onto the
 * template of native/models/face_alignment.h. A gallery enrolled before (box crops) or with another template is
 * re-embedded at start from its stored crops. Change it with the template.
 */
export const FACE_ALIGNMENT = 'align1';

/** The version of an engine's embeddings: the manifest's (aligned) one, or the box crop's when alignment is off. */
export function embedderVersion(aligned: string, faceAlignment: boolean): string {
  return faceAlignment ? aligned : aligned.replace(`-${FACE_ALIGNMENT}`, '-box');
}

/** What an embedding was made with. Stored with every enrolled sample: a different one means re-embedding. */
export interface FaceEmbedderInfo {
  model: FaceEmbedderModel;
  /** The converted file's sha256 (first 16 hex digits), the crop margin and the alignment: anything that changes the vectors. */
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
  /**
   * With rect: the face's keypoints as the detector gives them (12 numbers, `faces[i].keypoints`), to align it by.
   * Without them the detector runs to find the face at rect's landmarks (none found: the box crop).
   */
  keypoints?: number[];
  /** Override the model's crop margin (bench and calibration only). 0.5 to 4. */
  cropScale?: number;
  /** false: embed the plain box crop, unaligned (bench and calibration only; such vectors do not match a gallery's). */
  align?: boolean;
  /** false: no second search of a faceless photo turned 45 degrees each way (bench only). */
  rotatedPasses?: boolean;
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
  /**
   * The face's in-plane tilt by its landmarks, degrees counterclockwise on screen (over 10: it was cut turned
   * upright); null with `align: false` or when no landmarks were found for a given rect.
   */
  rotation: number | null;
  /**
   * Variance of the Laplacian of the face box's grey levels, the box averaged down to 112 px when larger: the face
   * library's measure (src/gallery/sample-quality.ts), taken on the decoded photo rather than the JPEG crop.
   */
  sharpness: number;
}

/** embedFace()'s timings, in ms unless said. */
export interface FaceEmbeddingTimings {
  queueMs: number;
  decodeMs: number;
  /**
   * How many times the photo was decoded: a JPEG twice where the detector's view of it is DCT-scaled, the second
   * time only around the face (native/image/photo_pixels.h).
   */
  decodes: number;
  /** The share of the photo's pixels decoded at its own size, 0 to 1. */
  decodedShare: number;
  detectMs: number;
  embedPreprocessMs: number;
  embedInferenceMs: number;
  searchMs: number;
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
  timings: FaceEmbeddingTimings;
}

export interface GalleryMatch {
  /** Sample id of the nearest enrolled embedding. */
  id: number;
  subject: string;
  /** Cosine similarity, -1..1. */
  cosine: number;
}

/** The calibrated distance at the equal-error rate: the accept/reject threshold (docs/models.md, "Face recognition"). */
export const EER_DISTANCE = 105;

/** Calibrated distance: 0 = identical, larger = less alike; EER_DISTANCE (105) is the equal-error-rate threshold. */
export function calibratedDistance(cosine: number, distanceScale: number): number {
  return Math.max(0, (1 - cosine) * distanceScale);
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

/** embedFace() options, checked; cropScale undefined means the model's own. */
export interface CheckedEmbedOptions {
  rect?: [number, number, number, number];
  keypoints?: number[];
  cropScale?: number;
  keepCrop: boolean;
  align: boolean;
  rotatedPasses: boolean;
  detect: CheckedDetectOptions;
}

/** Validates embedFace() options into the native request (everything but the gallery). */
export function checkEmbedOptions(opts: unknown, detect: (o: unknown) => CheckedDetectOptions): CheckedEmbedOptions {
  if (!isRecord(opts)) throw invalid('embedFace options must be an object');
  const out: CheckedEmbedOptions = { keepCrop: false, align: true, rotatedPasses: true, detect: detect(opts['detect'] ?? {}) };
  if (opts['rect'] !== undefined) out.rect = checkRect(opts['rect']);
  const keypoints = opts['keypoints'];
  if (keypoints !== undefined) {
    if (out.rect === undefined) throw invalid('keypoints needs rect: they align the face at rect');
    if (
      !Array.isArray(keypoints) ||
      keypoints.length !== 12 ||
      !keypoints.every((v) => typeof v === 'number' && Number.isFinite(v) && Math.abs(v) < 1e9)
    ) {
      throw invalid("keypoints must be the 12 finite numbers of a detected face's keypoints");
    }
    out.keypoints = keypoints as number[];
  }
  for (const flag of ['align', 'rotatedPasses'] as const) {
    const value = opts[flag];
    if (value !== undefined && typeof value !== 'boolean') throw invalid(`${flag} must be a boolean`);
    if (value === false) out[flag] = false;
  }
  const cropScale = opts['cropScale'];
  if (cropScale !== undefined) {
    const { min, max } = CROP_SCALE_RANGE;
    if (typeof cropScale !== 'number' || !(cropScale >= min && cropScale <= max)) {
      throw invalid(`cropScale must be a number from ${min} to ${max} (got ${String(cropScale)})`);
    }
    out.cropScale = cropScale;
  }
  const keepCrop = opts['keepCrop'];
  if (keepCrop !== undefined && typeof keepCrop !== 'boolean') throw invalid('keepCrop must be a boolean');
  out.keepCrop = keepCrop === true;
  return out;
}
