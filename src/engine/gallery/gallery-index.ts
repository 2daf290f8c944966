// The in-memory gallery the engine searches. Two parts kept in step:
//  - the exact index: every embedding as float32 in a native matrix, searched in C++ with one matrix product on a
//    worker (Engine.recognizeFace / Engine.searchGallery). Updates swap in a new snapshot atomically: a search in
//    flight keeps the gallery it started with, and never sees a half-applied update.
//  - an approximate index (usearch HNSW, f16 or i8 storage, see ann-index.ts) used once the gallery holds
//    `annThreshold` entries or more: it proposes a few candidates on the JS thread (about a millisecond) and the
//    exact index re-ranks them with float32 cosines, so a match's cosine is always exact. A match that would be
//    rejected (cosine below `annConfirmBelow`) is confirmed before it is answered: an int8 copy of every row is
//    scanned whole (int8-rows.ts) and its best candidates are re-ranked the same way. Every sample of the subject
//    found is re-ranked too (subject-samples.ts), so the answer is that subject's nearest sample.
// Adds and removes update both at once. replace() swaps the exact index at once and rebuilds the approximate one
// in the background (or loads it from `annFile`, see ann-file.ts), in chunks that yield to the event loop; until
// `indexed` settles searches stay exact.

import { DEFAULT_ANN_THRESHOLD, DEFAULT_EXPANSION_SEARCH, LARGE_GALLERY, LARGE_GALLERY_EXPANSION } from './ann-defaults.js';
import { AnnIndex, type AnnBuildReport, type AnnQuantization } from './ann-index.js';
import { SubjectSamples } from './subject-samples.js';
import { EngineError } from '../errors.js';
import { checkEmbedding, l2Normalized, type GalleryMatch } from '../face-embedding.js';
import { loadNative, type NativeGallery } from '../native.js';

export interface GalleryEntry {
  /** A safe integer, unique in the gallery; adding an id again replaces its entry. */
  id: number;
  subject: string;
  /** Any non-zero vector of the gallery's dimension; it is L2-normalized on the way in. */
  embedding: Float32Array;
}

export interface GalleryIndexOptions {
  /**
   * Entries from which searches use the approximate index; below it they are exact. Default 2,000: about where
   * exact search, whose cost grows with the entries, costs as much as the approximate one (docs/performance.md,
   * "Gallery at scale"). 0 always uses it, Infinity never builds it.
   */
  annThreshold?: number;
  /** Storage of the approximate index: 'f16' (default, 2 bytes a value) or 'i8' (1 byte; for 1,000,000+ entries). */
  annQuantization?: AnnQuantization;
  /**
   * Beam width of an approximate search (HNSW ef, default 64; 128 from `annLargeGallery` entries when it is not
   * set): wider finds the exact nearest more often, slower.
   */
  annExpansion?: number;
  /** Entries from which the default beam doubles (default LARGE_GALLERY, 500,000); ignored when annExpansion is set. */
  annLargeGallery?: number;
  /**
   * Cosine below which an approximate match is confirmed before it is answered: every entry's int8 copy is scanned
   * (on the calling thread, in time linear in the entries: docs/performance.md) and its best 64 re-ranked by exact
   * cosine, so an enrolled face the graph missed is found. The copy costs 1 byte a value (1 KB an entry at 1024-d).
   * Set it at the accept threshold (RecognitionService: distance 105). Default: no confirmation, no int8 copy.
   */
  annConfirmBelow?: number;
  /**
   * File for the approximate index's graph (with `<file>.json` beside it): replace() loads it when it is intact and
   * matches, patching the rows that changed, instead of building the graph; a built or patched graph is saved there,
   * and persist() saves the current one. Default: none (always built).
   */
  annFile?: string;
}

interface Parts {
  native: NativeGallery;
  ann: AnnIndex | null;
  /** Each subject's sample ids; kept when there is an approximate index. */
  samples: SubjectSamples | null;
}

/** Samples of the subject found re-ranked at most (a subject with more keeps the graph's and the scan's pick). */
const MAX_SIBLINGS = 256;

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
    if (typeof e.subject !== 'string' || e.subject.length === 0)
      throw new EngineError('INVALID_ARGUMENT', `entries[${i}].subject must be a non-empty string`);
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
  /** Entries from which the beam doubles (Infinity: the caller chose the beam). */
  readonly #largeFrom: number;
  readonly #confirmBelow: number;
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
    if (!Number.isInteger(expansion) || expansion < 1 || expansion > 4096)
      throw new EngineError('INVALID_ARGUMENT', 'annExpansion must be an integer from 1 to 4096');
    this.#expansion = expansion;
    const confirm = options.annConfirmBelow ?? -Infinity;
    if (typeof confirm !== 'number' || Number.isNaN(confirm)) throw new EngineError('INVALID_ARGUMENT', 'annConfirmBelow must be a number');
    this.#confirmBelow = confirm;
    const largeFrom = options.annLargeGallery ?? LARGE_GALLERY;
    if (typeof largeFrom !== 'number' || !(largeFrom >= 0)) throw new EngineError('INVALID_ARGUMENT', 'annLargeGallery must be a number >= 0');
    this.#largeFrom = options.annExpansion === undefined ? largeFrom : Infinity;
    if (options.annFile !== undefined && (typeof options.annFile !== 'string' || options.annFile === ''))
      throw new EngineError('INVALID_ARGUMENT', 'annFile must be a non-empty string');
    this.#file = options.annFile;
    const ann = this.#newAnn();
    parts.set(this, { native: new (loadNative().Gallery)(dim), ann, samples: ann ? new SubjectSamples() : null });
  }

  #newAnn(): AnnIndex | null {
    const confirms = this.#confirmBelow > -Infinity;
    return this.annThreshold === Infinity ? null : new AnnIndex(this.dim, this.#quantization, this.#expansion, confirms);
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
    p.samples?.set(ids, subjects);
  }

  /**
   * Replaces the whole gallery with `entries`: the exact index in one atomic swap now; the approximate one is
   * rebuilt in the background (see `indexed`), searches staying exact meanwhile.
   */
  replace(entries: readonly GalleryEntry[]): void {
    const { ids, subjects, embeddings } = packed(entries, this.dim);
    const p = this.#parts();
    p.native.replace(ids, subjects, embeddings);
    p.samples?.clear();
    p.samples?.set(ids, subjects);
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
    p.samples?.delete(list);
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

  /** Beam width the next approximate search uses: annExpansion, doubled from annLargeGallery entries when not set. */
  get searchBeam(): number {
    return this.#parts().native.size().live >= this.#largeFrom ? LARGE_GALLERY_EXPANSION : this.#expansion;
  }

  /** Rows in the int8 copy that confirmations scan: `size` once `indexed` (0 when the gallery does not confirm). */
  get scanRows(): number {
    return this.#parts().ann?.scanRows ?? 0;
  }

  /**
   * Approximate search on the calling thread (only when `approximate`): the graph's candidates re-ranked by exact
   * cosine and, below annConfirmBelow, the int8 scan's candidates re-ranked the same way (`confirm: false` skips
   * that: the bench compares both); then every sample of the subject found (up to 256). `expansion` overrides the
   * gallery's beam for this search (the bench measures others). `query` must be L2-normalized and of the gallery's
   * dimension.
   */
  searchApproximate(query: Float32Array, opts: { confirm?: boolean; expansion?: number } = {}): GalleryMatch | null {
    const p = this.#parts();
    const ann = p.ann;
    if (!ann?.ready) throw new EngineError('INVALID_ARGUMENT', 'the approximate index is not built');
    const { expansion } = opts;
    if (expansion !== undefined && (!Number.isInteger(expansion) || expansion < 1 || expansion > 65536))
      throw new EngineError('INVALID_ARGUMENT', 'expansion must be an integer from 1 to 65536');
    const beam = expansion ?? this.searchBeam;
    // 0 asks the graph for its own beam (annExpansion) and the few candidates that beam warrants.
    let match = p.native.bestOf(ann.candidates(query, beam === this.#expansion ? 0 : beam), query);
    const confirms = opts.confirm !== false && this.#confirmBelow > -Infinity;
    if (confirms && (match === null || match.cosine < this.#confirmBelow)) match = better(match, p.native.bestOf(ann.scanCandidates(query), query));
    const siblings = match ? p.samples!.of(match.subject) : [];
    if (siblings.length > 1 && siblings.length <= MAX_SIBLINGS) match = better(match, p.native.bestOf(Float64Array.from(siblings), query));
    return match;
  }
}

/** The match with the higher cosine (the first on a tie). */
function better(a: GalleryMatch | null, b: GalleryMatch | null): GalleryMatch | null {
  return b !== null && (a === null || b.cosine > a.cosine) ? b : a;
}
