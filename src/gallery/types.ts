// What the gallery stores: one row per enrolled photo. Every sample keeps its own embedding (never averaged,
// never overwritten), the model that made it, and, unless the operator turned it off, the face crop it came from
// with its quality (measured once on the crop and kept with it).

import type { SampleQuality } from './sample-quality.js';

export type Rect = [number, number, number, number];

export interface NewSample {
  subject: string;
  /** ms since the epoch */
  createdAt: number;
  /** Embedding model name and version (FaceEmbedderInfo.model / .version). */
  model: string;
  modelVersion: string;
  /** L2-normalized. */
  embedding: Float32Array;
  /** JPEG of the face with a margin (see StoredCrop in native/jobs/face_embed_job.h); null when crops are not kept. */
  crop: Buffer | null;
  /** The face box inside `crop`. */
  cropRect: Rect | null;
  /**
   * The crop's quality (sample-quality.ts; null: no crop, or one that does not decode). Absent: not measured yet
   * (a row an older edgecv wrote): the face library measures it when it first lists the sample, and keeps it.
   */
  quality?: SampleQuality | null;
}

export interface StoredSample extends NewSample {
  /** Assigned by the store; a safe integer, never reused. */
  id: number;
}

/** Samples without their crops: what building the search index needs. */
export type SampleVector = Omit<StoredSample, 'crop' | 'cropRect' | 'quality'>;

/** A quality measured for a stored sample. */
export interface MeasuredQuality {
  id: number;
  quality: SampleQuality | null;
}

/** Which page of a subject's samples: those with an id above `after` (0: from the first), at most `limit`. */
export interface SamplePageRequest {
  after: number;
  limit: number;
}

export interface SamplePage {
  samples: StoredSample[];
  /** The subject's rows in the store now. */
  total: number;
  /** The `after` of the next page (the last id this page read); null when this page reached the last sample. */
  next: number | null;
}

/** A stored row left out of the index: it cannot be read, or its embedding cannot be searched (sample-check.ts). */
export interface QuarantinedSample {
  id: number;
  /** null when the row is too broken to tell. */
  subject: string | null;
  reason: string;
}

/** What a store's rows are: the readable ones, and those it could not decode (reported, never fatal). */
export interface StoredVectors {
  vectors: SampleVector[];
  unreadable: QuarantinedSample[];
}

/** How a store keeps what it acknowledged, for the start-up warning and the capabilities answer. */
export interface StoreDurability {
  kind: 'sqlite' | 'redis';
  /**
   * sqlite: 'wal-fsync' (every change fsynced). redis: 'aof', 'rdb', 'aof+rdb', 'none' (lost at a Redis restart)
   * or 'unknown' (Redis refused CONFIG and INFO does not tell).
   */
  persistence: 'wal-fsync' | 'aof' | 'rdb' | 'aof+rdb' | 'none' | 'unknown';
  /** What the operator should know; null when nothing. */
  warning: string | null;
}

/** Changes made by other servers sharing the store (fleet mode). */
export interface RemoteChanges {
  /** Samples another server added. */
  added(samples: SampleVector[]): void;
  /** Ids another server removed. */
  removed(ids: number[]): void;
  /** Everything may have changed (bulk import, or this server was disconnected): reload it all. */
  resync(): void;
}

/**
 * Durable gallery storage. A promise that resolves means the change is durable (SQLite: committed to the WAL with
 * a sync; Redis: acknowledged by the server).
 */
export interface GalleryStore {
  readonly kind: 'sqlite' | 'redis';
  /** Every sample, without crops; a row that cannot be decoded is in `unreadable`, the rest still load. */
  vectors(): Promise<StoredVectors>;
  /** Samples with crops, in id order, `batch` at a time (export, re-embedding); rows that cannot be decoded are skipped. */
  samples(batch?: number): AsyncIterable<StoredSample[]>;
  add(sample: NewSample): Promise<StoredSample>;
  /** Several samples in one transaction; with `replace`, everything else is deleted in the same transaction. */
  addMany(samples: NewSample[], replace: boolean): Promise<StoredSample[]>;
  /** Removes the subject's samples (only `id` when given); resolves with the ids removed. */
  remove(subject: string, id?: number): Promise<number[]>;
  /**
   * One page of the subject's samples with their crops, in id order: at most `limit` of those with an id above
   * `after`; rows that cannot be decoded are left out (but counted in `total` and passed by `next`).
   */
  samplesOf(subject: string, page: SamplePageRequest): Promise<SamplePage>;
  /**
   * Gives sample `id` of `from` to `to`, in one transaction (a fleet store broadcasts it as the sample added again
   * under its new subject: adding an id again replaces it). Resolves with the sample as it is now, or null when
   * `from` has no readable sample `id` (nothing changed).
   */
  move(id: number, from: string, to: string): Promise<SampleVector | null>;
  /**
   * Keeps qualities measured for samples stored without one (the face library writes them back); a sample removed
   * meanwhile is not brought back, and one that has a quality by now keeps it (measured on the same crop).
   */
  setQualities(qualities: MeasuredQuality[]): Promise<void>;
  /** New embeddings for existing samples (re-embedding after a model change). */
  updateEmbeddings(updates: { id: number; model: string; modelVersion: string; embedding: Float32Array }[]): Promise<void>;
  /** Fleet stores call these when another server changes the gallery; a local store never does. */
  watch(changes: RemoteChanges): Promise<void>;
  /** How acknowledged changes are kept. */
  durability(): StoreDurability;
  close(): Promise<void>;
}

/** Float32 vector <-> little-endian bytes (the blob format in both stores). */
export function embeddingToBytes(v: Float32Array): Buffer {
  const out = Buffer.alloc(v.length * 4);
  for (let i = 0; i < v.length; i++) out.writeFloatLE(v[i]!, i * 4);
  return out;
}

export function embeddingFromBytes(b: Uint8Array): Float32Array {
  if (b.length % 4 !== 0) throw new Error(`an embedding blob of ${b.length} bytes is not a float32 vector`);
  const buf = Buffer.from(b.buffer, b.byteOffset, b.byteLength);
  const out = new Float32Array(b.length / 4);
  for (let i = 0; i < out.length; i++) out[i] = buf.readFloatLE(i * 4);
  return out;
}

/** The store cannot be reached or refused a change (fleet store down): the request may be retried. */
export class GalleryStoreError extends Error {
  override name = 'GalleryStoreError';
  /**
   * The change was sent but its answer never came (a command timeout): the store may still apply it, whole or not
   * at all, and this server follows whichever happens. Retrying an enrolment may then store the photo twice.
   */
  readonly inDoubt: boolean;
  constructor(message: string, options?: { cause?: unknown; inDoubt?: boolean }) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.inDoubt = options?.inDoubt ?? false;
  }
}
