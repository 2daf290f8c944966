// What the recognition service answers and takes: its results, its options and its errors, apart from the service
// itself (recognition-service.ts) so that routes and stores can name them without the service's code.

import type { FaceEmbeddingResult } from '../engine/face-embedding.js';
import type { GalleryIndexOptions } from '../engine/gallery/gallery-index.js';
import type { SampleQuality } from './sample-quality.js';
import type { Rect, StoreDurability } from './types.js';

/** The gallery is being rebuilt; retry shortly. */
export class GalleryBusyError extends Error {
  override name = 'GalleryBusyError';
  constructor() {
    super('Training data update in progress');
  }
}

/** Nobody is enrolled yet. */
export class GalleryEmptyError extends Error {
  override name = 'GalleryEmptyError';
  constructor() {
    super('no subject is enrolled yet: enrol one with POST /trainer/add/');
  }
}

/** A sample as the face library lists it (GET /trainer/samples/). */
export interface LibrarySample {
  id: number;
  createdAt: number;
  /** The kept face crop (JPEG) and the face box inside it; null when crops are not kept. */
  crop: Buffer | null;
  cropRect: Rect | null;
  /** Measured on the crop (sample-quality.ts); null without a crop. */
  quality: SampleQuality | null;
}

/** A subject name that breaks the rules (checkSubject). */
export class SubjectError extends Error {
  override name = 'SubjectError';
}

export interface RecognitionOptions {
  /** Keep each sample's face crop (needed to re-embed after a model change). Default true. */
  storeCrops?: boolean;
  /** When the in-memory index turns approximate, and its storage (GalleryIndex options). */
  gallery?: GalleryIndexOptions;
  log?: (message: string) => void;
}

export type Prediction = (
  | { face: null }
  /** unjudged: why the face is too poor to put a name to (recognition-quality.ts); it is given none. */
  | { face: { rect: Rect; score: number }; unjudged: string; subject?: undefined; sampleId?: undefined; distance?: undefined; cosine?: undefined }
  | { face: { rect: Rect; score: number }; unjudged: null; subject: string; sampleId: number; distance: number; cosine: number }
) & {
  /** Per-stage milliseconds of the recognition job (for the inference metrics). */
  timings: FaceEmbeddingResult['timings'];
};

/** One face of a photo and its nearest enrolled sample (null when nobody is enrolled, or the face is unjudged). */
export interface IdentifiedFace {
  rect: Rect;
  score: number;
  /** Why the face is too poor to put a name to (match is then null); null when it was judged. */
  unjudged: string | null;
  match: { subject: string; sampleId: number; distance: number } | null;
}

export interface Enrolment {
  id: number;
  subject: string;
  rect: Rect;
  /** The subject's sample count after this one. */
  samples: number;
}

export interface SubjectSummary {
  subject: string;
  samples: number;
  ids: number[];
}

/**
 * Where the gallery stands, for readiness checks: 'loading' until the first load succeeded (retried while the
 * store fails), 'syncing' during any later rebuild (import swap, fleet resync, re-embedding), else 'ready'.
 * Predictions answer 503 unless 'ready'.
 */
export type GalleryState = 'loading' | 'syncing' | 'ready';

export interface GalleryStatus {
  state: GalleryState;
  samples: number;
  /** Stored rows left out of the index (unreadable, or an embedding that cannot be searched). */
  quarantined: number;
  store: StoreDurability;
  /** The model whose embeddings the gallery holds: an import line of this model and version keeps its embedding. */
  embedder: { model: string; version: string; dim: number };
  /** The last load or resync failure while it is being retried; null otherwise. */
  lastError: string | null;
}

/** The subjects of an id -> subject map, by name, each with its sample ids in order. */
export function subjectSummaries(subjectOf: ReadonlyMap<number, string>): SubjectSummary[] {
  const by = new Map<string, number[]>();
  for (const [id, subject] of subjectOf) {
    const ids = by.get(subject) ?? [];
    ids.push(id);
    by.set(subject, ids);
  }
  return [...by.entries()]
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([subject, ids]) => ({ subject, samples: ids.length, ids: ids.sort((a, b) => a - b) }));
}
