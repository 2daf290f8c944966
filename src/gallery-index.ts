// The in-memory gallery the engine searches: enrolled embeddings in a native matrix, searched in C++ with one
// matrix product (Engine.recognizeFace / Engine.searchGallery). Updates swap in a new snapshot atomically: a
// search in flight keeps the gallery it started with, and never sees a half-applied update.

import { EngineError } from './errors.js';
import { checkEmbedding, l2Normalized } from './face-embedding.js';
import { loadNative, type NativeGallery } from './native.js';

export interface GalleryEntry {
  /** A safe integer, unique in the gallery; adding an id again replaces its entry. */
  id: number;
  subject: string;
  /** Any non-zero vector of the gallery's dimension; it is L2-normalized on the way in. */
  embedding: Float32Array;
}

const natives = new WeakMap<GalleryIndex, NativeGallery>();

/** The native handle, for the engine's jobs; not part of the public API. */
export function nativeGallery(gallery: GalleryIndex): NativeGallery {
  const native = gallery instanceof GalleryIndex ? natives.get(gallery) : undefined;
  if (!native) throw new EngineError('INVALID_ARGUMENT', 'gallery must be a GalleryIndex');
  return native;
}

function packed(entries: readonly GalleryEntry[], dim: number): { ids: Float64Array; subjects: string[]; embeddings: Float32Array } {
  if (!Array.isArray(entries)) throw new EngineError('INVALID_ARGUMENT', 'entries must be an array');
  const ids = new Float64Array(entries.length);
  const subjects: string[] = [];
  const embeddings = new Float32Array(entries.length * dim);
  entries.forEach((e, i) => {
    if (typeof e !== 'object' || e === null) throw new EngineError('INVALID_ARGUMENT', `entries[${i}] must be an object`);
    if (!Number.isSafeInteger(e.id)) throw new EngineError('INVALID_ARGUMENT', `entries[${i}].id must be a safe integer`);
    if (typeof e.subject !== 'string' || e.subject.length === 0) throw new EngineError('INVALID_ARGUMENT', `entries[${i}].subject must be a non-empty string`);
    ids[i] = e.id;
    subjects.push(e.subject);
    embeddings.set(l2Normalized(checkEmbedding(e.embedding, dim, `entries[${i}].embedding`), `entries[${i}].embedding`), i * dim);
  });
  return { ids, subjects, embeddings };
}

export class GalleryIndex {
  readonly dim: number;

  constructor(dim: number) {
    if (!Number.isInteger(dim) || dim < 1 || dim > 65536) throw new EngineError('INVALID_ARGUMENT', 'dim must be an integer from 1 to 65536');
    this.dim = dim;
    natives.set(this, new (loadNative().Gallery)(dim));
  }

  /** Adds entries (an existing id is replaced). One atomic swap for the whole batch. */
  add(entries: readonly GalleryEntry[]): void {
    const { ids, subjects, embeddings } = packed(entries, this.dim);
    nativeGallery(this).add(ids, subjects, embeddings);
  }

  /** Replaces the whole gallery with `entries` in one atomic swap. */
  replace(entries: readonly GalleryEntry[]): void {
    const { ids, subjects, embeddings } = packed(entries, this.dim);
    nativeGallery(this).replace(ids, subjects, embeddings);
  }

  /** Removes entries by id; returns how many were there. */
  remove(ids: readonly number[]): number {
    if (!Array.isArray(ids) || !ids.every(Number.isSafeInteger)) throw new EngineError('INVALID_ARGUMENT', 'ids must be an array of safe integers');
    return nativeGallery(this).remove(Float64Array.from(ids));
  }

  /** Number of entries. */
  get size(): number {
    return nativeGallery(this).size().live;
  }
}
