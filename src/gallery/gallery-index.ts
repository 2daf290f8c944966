// The in-memory gallery the engine searches. Two parts kept in step:
//  - the exact index: every embedding as float32 in a native matrix, searched in C++ with one matrix product on a
//    worker (Engine.recognizeFace / Engine.searchGallery). Updates swap in a new snapshot atomically: a search in
//    flight keeps the gallery it started with, and never sees a half-applied update.
//  - an approximate index (usearch HNSW, f16 or i8 storage, see ann-index.ts) used once the gallery holds
//    `annThreshold` entries or more: it proposes a few candidates on the JS thread (about a millisecond) and the
//    exact index re-ranks them with float32 cosines, so a match's cosine is always exact. A match that would be
//    rejected (cosine below `annConfirmBelow`) is searched again with a much wider beam before it is answered.
// Adds and removes update both at once. replace() swaps the exact index at once and rebuilds the approximate one
// in the background (or loads it from `annFile`, see ann-file.ts), in chunks that yield to the event loop; until
// `indexed` settles searches stay exact.

import { AnnIndex, CONFIRM_EXPANSION, DEFAULT_EXPANSION_SEARCH, type AnnBuildReport, type AnnQuantization } from './ann-index.js';
import { EngineError } from '../engine/errors.js';
import { checkEmbedding, l2Normalized, type GalleryMatch } from '../engine/face-embedding.js';
import { loadNative, type NativeGallery } from '../engine/native.js';

export interface GalleryEntry {
  /** A safe integer, unique in the gallery; adding an id again replaces its entry. */
  id: number;
  subject: string;
  /** Any non-zero vector of the gallery's dimension; it is L2-normalized on the way in. */
  embedding: Float32Array;
}

export interface GalleryIndexOptions {
  /**
   * Entries from which searches use the approximate index; below it they are exact. Default 2,000: measured by
   * `npm run bench` (Gallery search at scale), exact search costs about 0.6 µs per entry on one core, the
   * approximate one 0.5 to 1 ms at 1,000 to 10,000. 0 always uses it, Infinity never builds it.
   */
  annThreshold?: number;
  /** Storage of the approximate index: 'f16' (default, 2 bytes a value) or 'i8' (1 byte; for 1,000,000+ entries). */
  annQuantization?: AnnQuantization;
  /**
   * Beam width of an approximate search (HNSW ef, default 64; 128 from LARGE_GALLERY entries when neither beam is
   * set): wider finds the exact nearest more often, slower.
   */
  annExpansion?: number;
  /**
   * Cosine below which an approximate match is searched again with a wide beam (re-ranked the same way) before
   * it is answered: a would-be rejection costs a few ms more, and an enrolled face the first beam missed is found.
   * Set it at the accept threshold (RecognitionService: distance 105). Default: no second search.
   */
  annConfirmBelow?: number;
  /** Beam width of that second search (default 2,048; 4,096 from LARGE_GALLERY entries when neither beam is set). */
  annConfirmExpansion?: number;
  /**
   * File for the approximate index's graph (with `<file>.json` beside it): replace() loads it when it is intact and
   * matches, patching the rows that changed, instead of building the graph; a built or patched graph is saved there,
   * and persist() saves the current one. Default: none (always built).
   */
  annFile?: string;
}

export const DEFAULT_ANN_THRESHOLD = 2_000;

/**
 * From this many entries the default beams double (first search 128, confirming search 4,096). Measured on real
 * embeddings with distractors (README, Gallery at scale): at 100,000 the defaults agree with exact search on every
 * query; at 1,000,000 they gave 98.6% top-1 and 99.0% the same decision, the doubled beams 99.56% and 99.67% at
 * 3.99 ms p50. The switch point between the two measured sizes is a judgement, not a measurement.
 */
export const LARGE_GALLERY = 500_000;
const LARGE_GALLERY_BEAMS = { expansion: 128, confirmExpansion: 4096 } as const;

interface Parts {
  native: NativeGallery;
  ann: AnnIndex | null;
}

const parts = new WeakMap<GalleryIndex, Parts>();

/** The native handle, for the engine's jobs; not part of the public API. */
export function nativeGallery(gallery: GalleryIndex): NativeGallery {
  const p = gallery instanceof GalleryIndex ? parts.get(gallery) : undefined;
  if (!p) throw new EngineError('INVALID_ARGUMENT', 'gallery must be a GalleryIndex');
  return p.native;
}

function packed(entries: readonly GalleryEntry[], dim: number): { ids: Float64Array; subjects: string[]; embeddings: Float32Array } {
  if (!Array.isArray(entries)) throw new EngineError('INVALID_ARGUMENT', 'entries must be an array');
  const ids = new Float64Array(entries.length);
  const subjects: string[] = [];
  const embeddings = new Float32Array(entries.length * dim);
  entries.forEach((e, i) => {
    if (typeof e !== 'object' || e === null) throw new EngineError('INVALID_ARGUMENT', `entries[${i}] must be an object`);
    if (!Number.isSafeInteger(e.id) || e.id < 0) throw new EngineError('INVALID_ARGUMENT', `entries[${i}].id must be a non-negative safe integer`);
    if (typeof e.subject !== 'string' || e.subject.length === 0) throw new EngineError('INVALID_ARGUMENT', `entries[${i}].subject must be a non-empty string`);
    ids[i] = e.id;
    subjects.push(e.subject);
    embeddings.set(l2Normalized(checkEmbedding(e.embedding, dim, `entries[${i}].embedding`), `entries[${i}].embedding`), i * dim);
  });
  return { ids, subjects, embeddings };
}

export class GalleryIndex {
  readonly dim: number;
  readonly annThreshold: number;
  readonly #quantization: AnnQuantization;
  readonly #expansion: number;
  /** Beams for LARGE_GALLERY entries and more, where the defaults are in use (null: the caller chose beams). */
  readonly #largeBeams: { expansion: number; confirmExpansion: number } | null;
  readonly #confirmBelow: number;
  readonly #confirmExpansion: number;
  readonly #file: string | undefined;
  /** Bumped by replace(): a background build of an older generation stops. */
  #generation = 0;
  #indexed: Promise<void> = Promise.resolve();

  constructor(dim: number, options: GalleryIndexOptions = {}) {
    if (!Number.isInteger(dim) || dim < 1 || dim > 65536) throw new EngineError('INVALID_ARGUMENT', 'dim must be an integer from 1 to 65536');
    const threshold = options.annThreshold ?? DEFAULT_ANN_THRESHOLD;
    if (!(threshold >= 0)) throw new EngineError('INVALID_ARGUMENT', 'annThreshold must be a number >= 0');
    const quantization = options.annQuantization ?? 'f16';
    if (quantization !== 'f16' && quantization !== 'i8') throw new EngineError('INVALID_ARGUMENT', "annQuantization must be 'f16' or 'i8'");
    this.dim = dim;
    this.annThreshold = threshold;
    this.#quantization = quantization;
    const expansion = options.annExpansion ?? DEFAULT_EXPANSION_SEARCH;
    if (!Number.isInteger(expansion) || expansion < 1 || expansion > 4096) throw new EngineError('INVALID_ARGUMENT', 'annExpansion must be an integer from 1 to 4096');
    this.#expansion = expansion;
    const confirm = options.annConfirmBelow ?? -Infinity;
    if (typeof confirm !== 'number' || Number.isNaN(confirm)) throw new EngineError('INVALID_ARGUMENT', 'annConfirmBelow must be a number');
    this.#confirmBelow = confirm;
    const confirmExpansion = options.annConfirmExpansion ?? CONFIRM_EXPANSION;
    if (!Number.isInteger(confirmExpansion) || confirmExpansion < 1 || confirmExpansion > 65536) throw new EngineError('INVALID_ARGUMENT', 'annConfirmExpansion must be an integer from 1 to 65536');
    this.#confirmExpansion = confirmExpansion;
    this.#largeBeams = options.annExpansion === undefined && options.annConfirmExpansion === undefined ? LARGE_GALLERY_BEAMS : null;
    if (options.annFile !== undefined && (typeof options.annFile !== 'string' || options.annFile === '')) throw new EngineError('INVALID_ARGUMENT', 'annFile must be a non-empty string');
    this.#file = options.annFile;
    parts.set(this, { native: new (loadNative().Gallery)(dim), ann: this.#newAnn() });
  }

  #newAnn(): AnnIndex | null {
    return this.annThreshold === Infinity ? null : new AnnIndex(this.dim, this.#quantization, this.#expansion);
  }

  #parts(): Parts {
    return parts.get(this)!;
  }

  /** Adds entries (an existing id is replaced). One atomic swap of the exact index for the whole batch. */
  add(entries: readonly GalleryEntry[]): void {
    const { ids, subjects, embeddings } = packed(entries, this.dim);
    const p = this.#parts();
    p.native.add(ids, subjects, embeddings);
    p.ann?.add(ids, embeddings);
  }

  /**
   * Replaces the whole gallery with `entries`: the exact index in one atomic swap now; the approximate one is
   * rebuilt in the background (see `indexed`), searches staying exact meanwhile.
   */
  replace(entries: readonly GalleryEntry[]): void {
    const { ids, subjects, embeddings } = packed(entries, this.dim);
    const p = this.#parts();
    p.native.replace(ids, subjects, embeddings);
    const generation = ++this.#generation;
    p.ann = this.#newAnn();
    // Not used for searches until built (AnnIndex.ready); adds and removes meanwhile go into it already.
    this.#indexed = p.ann ? p.ann.build(ids, embeddings, () => generation === this.#generation, this.#file).then(() => undefined) : Promise.resolve();
  }

  /** How the approximate index of the last replace() was made (built, or loaded from annFile), once `indexed`. */
  get annBuild(): AnnBuildReport | null {
    return this.#parts().ann?.lastBuild ?? null;
  }

  /** Saves the approximate index to annFile (when there is one and it is built), so that a restart can load it. */
  async persist(): Promise<void> {
    const ann = this.#parts().ann;
    if (this.#file && ann?.ready) await ann.save(this.#file);
  }

  /** Settles when the approximate index built by the last replace() is in use (searches are exact until then). */
  get indexed(): Promise<void> {
    return this.#indexed;
  }

  /** Removes entries by id; returns how many were there. */
  remove(ids: readonly number[]): number {
    if (!Array.isArray(ids) || !ids.every(Number.isSafeInteger)) throw new EngineError('INVALID_ARGUMENT', 'ids must be an array of safe integers');
    const p = this.#parts();
    const list = Float64Array.from(ids);
    p.ann?.remove(list);
    return p.native.remove(list);
  }

  /** Number of entries. */
  get size(): number {
    return this.#parts().native.size().live;
  }

  /** True when searches go through the approximate index (size >= annThreshold and it is built). */
  get approximate(): boolean {
    const p = this.#parts();
    return p.ann !== null && p.ann.ready && p.native.size().live >= this.annThreshold;
  }

  /**
   * Approximate search on the calling thread (only when `approximate`): the index's candidates re-ranked by exact
   * cosine, and searched again wider below annConfirmBelow (`confirm: false` skips that: the bench compares both).
   * `expansion` and `confirmExpansion` override the gallery's beams for this search (the bench measures others).
   * `query` must be L2-normalized and of the gallery's dimension.
   */
  searchApproximate(query: Float32Array, opts: { confirm?: boolean; expansion?: number; confirmExpansion?: number } = {}): GalleryMatch | null {
    const p = this.#parts();
    if (!p.ann?.ready) throw new EngineError('INVALID_ARGUMENT', 'the approximate index is not built');
    for (const key of ['expansion', 'confirmExpansion'] as const) {
      const v = opts[key];
      if (v !== undefined && (!Number.isInteger(v) || v < 1 || v > 65536)) throw new EngineError('INVALID_ARGUMENT', `${key} must be an integer from 1 to 65536`);
    }
    const large = this.#largeBeams !== null && p.native.size().live >= LARGE_GALLERY ? this.#largeBeams : null;
    const match = p.native.bestOf(p.ann.candidates(query, opts.expansion ?? large?.expansion ?? 0), query);
    if (opts.confirm === false || (match !== null && match.cosine >= this.#confirmBelow)) return match;
    const wide = p.native.bestOf(p.ann.candidates(query, opts.confirmExpansion ?? large?.confirmExpansion ?? this.#confirmExpansion), query);
    return wide !== null && (match === null || wide.cosine > match.cosine) ? wide : match;
  }
}
