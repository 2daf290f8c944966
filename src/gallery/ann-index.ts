// The approximate part of a GalleryIndex: a usearch HNSW graph over the L2-normalized embeddings (cosine metric),
// stored as f16 or i8. It only proposes candidates; the exact index re-ranks them (GalleryIndex.searchApproximate).
//
// usearch calls are synchronous and run on the JS thread: one search costs well under a millisecond; adds run on
// usearch's own threads but block the caller until done, so a bulk build goes in chunks that yield in between.
// Queries and vectors are always handed over as fresh copies: usearch's exactSearch() was seen to ignore the
// byteOffset of a subarray, and a copy costs little next to a search.

import { Index, MetricKind, ScalarKind } from 'usearch';

export type AnnQuantization = 'f16' | 'i8';

/** Graph degree and beam widths: chosen on real embeddings (see README, Gallery at scale). */
const CONNECTIVITY = 16;
const EXPANSION_ADD = 64;
/** Default beam width of a search (GalleryIndexOptions.annExpansion). */
export const DEFAULT_EXPANSION_SEARCH = 128;
/** Candidates handed to the exact re-ranking. */
const CANDIDATES = 8;
/** Entries added per event-loop turn by build(): about 0.1 s of blocking on 2 shared cores. */
const BUILD_CHUNK = 128;
/** usearch threads for bulk adds (the engine's own workers are idle during a rebuild window). */
const BUILD_THREADS = 2;

/**
 * Rows as int8 for an i8 index, each scaled so that its largest value is +-127 (the cosine metric ignores a row's
 * scale). usearch's own float-to-int8 cast scales rows to unit length first, which leaves 1024-d embeddings with
 * a handful of levels per value; passing Int8Array skips that cast.
 */
function toInt8(rows: Float32Array, dim: number): Int8Array {
  const out = new Int8Array(rows.length);
  for (let r = 0; r < rows.length; r += dim) {
    let max = 0;
    for (let i = r; i < r + dim; i++) max = Math.max(max, Math.abs(rows[i]!));
    const scale = max > 0 ? 127 / max : 0;
    for (let i = r; i < r + dim; i++) out[i] = Math.round(rows[i]! * scale);
  }
  return out;
}

function keysOf(ids: Float64Array): BigUint64Array {
  const keys = new BigUint64Array(ids.length);
  for (let i = 0; i < ids.length; i++) keys[i] = BigInt(ids[i]!);
  return keys;
}

export class AnnIndex {
  readonly #dim: number;
  readonly #index: Index;
  readonly #i8: boolean;
  /** Ids changed by add()/remove() while build() runs: the build must not overwrite them. */
  #touched: Set<number> | null = null;
  #ready = true;

  constructor(dim: number, quantization: AnnQuantization, expansionSearch = DEFAULT_EXPANSION_SEARCH) {
    this.#dim = dim;
    this.#i8 = quantization === 'i8';
    this.#index = new Index({
      dimensions: dim,
      metric: MetricKind.Cos,
      quantization: quantization === 'i8' ? ScalarKind.I8 : ScalarKind.F16,
      connectivity: CONNECTIVITY,
      expansion_add: EXPANSION_ADD,
      expansion_search: expansionSearch,
      multi: false,
    });
  }

  /** What usearch is handed: a copy, as int8 for an i8 index. */
  #vectors(rows: Float32Array): Float32Array | Int8Array {
    return this.#i8 ? toInt8(rows, this.#dim) : rows.slice();
  }

  /** False while build() is still filling the index. */
  get ready(): boolean {
    return this.#ready;
  }

  get size(): number {
    return this.#index.size();
  }

  /** Adds `ids.length` rows of `embeddings` (an existing id is replaced). */
  add(ids: Float64Array, embeddings: Float32Array, threads = 1): void {
    if (ids.length === 0) return;
    if (this.#touched) for (const id of ids) this.#touched.add(id);
    const keys = keysOf(ids);
    this.#index.remove(keys); // multi: false refuses a key twice; replacing = remove + add
    this.#index.add(keys, this.#vectors(embeddings), ids.length >= 64 ? BUILD_THREADS : threads);
  }

  remove(ids: Float64Array): void {
    if (ids.length === 0) return;
    if (this.#touched) for (const id of ids) this.#touched.add(id);
    this.#index.remove(keysOf(ids));
  }

  /**
   * Fills a new index with `ids` / `embeddings` in chunks, yielding to the event loop between them; stops (resolving
   * false) as soon as `alive()` turns false. Adds and removes made meanwhile win over the rows still to come.
   */
  async build(ids: Float64Array, embeddings: Float32Array, alive: () => boolean): Promise<boolean> {
    this.#ready = false;
    this.#touched = new Set();
    try {
      for (let start = 0; start < ids.length; start += BUILD_CHUNK) {
        if (!alive()) return false;
        const end = Math.min(ids.length, start + BUILD_CHUNK);
        const keep: number[] = [];
        for (let i = start; i < end; i++) if (!this.#touched.has(ids[i]!)) keep.push(i);
        const chunkIds = new Float64Array(keep.length);
        const chunk = new Float32Array(keep.length * this.#dim);
        keep.forEach((row, i) => {
          chunkIds[i] = ids[row]!;
          chunk.set(embeddings.subarray(row * this.#dim, (row + 1) * this.#dim), i * this.#dim);
        });
        if (chunkIds.length > 0) this.#index.add(keysOf(chunkIds), this.#vectors(chunk), BUILD_THREADS);
        await new Promise<void>((resolve) => setImmediate(resolve));
      }
      return alive();
    } finally {
      this.#touched = null;
      this.#ready = true;
    }
  }

  /** Ids of the nearest entries to `query` (L2-normalized), best first. */
  candidates(query: Float32Array): Float64Array {
    const m = this.#index.search(this.#vectors(query), CANDIDATES, 1);
    const out = new Float64Array(m.keys.length);
    for (let i = 0; i < out.length; i++) out[i] = Number(m.keys[i]!);
    return out;
  }
}
