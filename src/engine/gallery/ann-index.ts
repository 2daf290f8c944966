// The approximate part of a GalleryIndex: a usearch HNSW graph over the L2-normalized embeddings (cosine metric),
// stored as f16 or i8, and, for a gallery that confirms would-be rejections, an int8 copy of every row that is
// scanned whole (int8-rows.ts). Both only propose candidates; the exact index re-ranks them
// (GalleryIndex.searchApproximate). They are filled, updated and made ready together.
//
// usearch calls are synchronous and run on the JS thread: one search costs about a millisecond; adds run on
// usearch's own threads but block the caller until done, so a bulk build goes in chunks that yield in between.
// Queries and vectors are always handed over as fresh copies: usearch's exactSearch() was seen to ignore the
// byteOffset of a subarray, and a copy costs little next to a search.
// The graph can be saved to a file and loaded back at the next build (ann-file.ts), which then only applies the rows
// that differ from the saved ones.

import { Index, MetricKind, ScalarKind } from 'usearch';
import { DEFAULT_EXPANSION_SEARCH } from './ann-defaults.js';
import { checkSavedGraph, rowHashes, saveGraph, type AnnParams } from './ann-file.js';
import { Int8Rows, toInt8 } from './int8-rows.js';

export type AnnQuantization = 'f16' | 'i8';

/** Graph degree and beam widths: chosen on real embeddings (see docs/performance.md, "Gallery at scale"). */
const CONNECTIVITY = 16;
const EXPANSION_ADD = 64;
/**
 * Candidates handed to the exact re-ranking (a few µs each). More than one because the graph's own order is that of
 * its f16 or i8 vectors: near-ties among many similar entries come out of order, i8 more than f16.
 */
const CANDIDATES = 16;
/** Candidates of a widened search (a beam given per search) and of the confirming scan handed to the re-ranking. */
const WIDE_CANDIDATES = 64;
/** Entries added per event-loop turn by build(): about 0.1 s of blocking on 2 shared cores. */
const BUILD_CHUNK = 128;
/** Rows copied into the int8 scan per event-loop turn when a saved graph was loaded: a few ms each. */
const SCAN_FILL_CHUNK = 4096;
/** usearch threads for bulk adds (the engine's own workers are idle during a rebuild window). */
const BUILD_THREADS = 2;
/**
 * Smallest graph that build() saves on its own (inside the update window): a smaller one builds in well under a
 * second, less than its save costs. persist() saves any size.
 */
const MIN_SAVED_ROWS = 1000;
/** A saved graph is patched when at most this share of it differs from the store; beyond, rebuilt. */
const MAX_PATCH_SHARE = 0.2;

function keysOf(ids: Float64Array): BigUint64Array {
  const keys = new BigUint64Array(ids.length);
  for (let i = 0; i < ids.length; i++) keys[i] = BigInt(ids[i]!);
  return keys;
}

/** Rows `rows` of `embeddings` as one packed matrix, with their ids. */
function pick(ids: Float64Array, embeddings: Float32Array, dim: number, rows: number[]): { ids: Float64Array; embeddings: Float32Array } {
  const outIds = new Float64Array(rows.length);
  const out = new Float32Array(rows.length * dim);
  rows.forEach((row, i) => {
    outIds[i] = ids[row]!;
    out.set(embeddings.subarray(row * dim, (row + 1) * dim), i * dim);
  });
  return { ids: outIds, embeddings: out };
}

/** How the last build() got its graph. */
export type AnnBuildReport =
  { how: 'built'; rows: number; ms: number; reason: string } | { how: 'loaded'; rows: number; ms: number; patched: number };

/** The gallery log's note on the graph: ", HNSW graph loaded (N rows patched)" or ", HNSW graph built (why)". */
export function annBuildNote(ann: AnnBuildReport): string {
  return ann.how === 'loaded' ? `, HNSW graph loaded (${ann.patched} rows patched)` : `, HNSW graph built (${ann.reason})`;
}

type QueuedChange = { op: 'add'; ids: Float64Array; embeddings: Float32Array } | { op: 'remove'; ids: Float64Array };

export class AnnIndex {
  readonly #dim: number;
  readonly #params: AnnParams;
  readonly #expansionSearch: number;
  #index: Index;
  readonly #i8: boolean;
  /** The int8 copy scanned to confirm a would-be rejection; null when the gallery does not confirm. */
  readonly #scan: Int8Rows | null;
  /** Key -> hash of the row it was added with: what a saved graph holds (ann-file.ts). */
  readonly #rows = new Map<number, number>();
  /** Ids changed by add()/remove() while build() runs: the build must not overwrite them. */
  #touched: Set<number> | null = null;
  /** Changes held back while a saved graph is being checked (loading it replaces the whole index). */
  #queued: QueuedChange[] | null = null;
  #ready = true;
  #saving: Promise<void> = Promise.resolve();
  /** Bumped by every change; `#savedAt` is its value when the file last matched the index. */
  #changes = 0;
  #savedAt = -1;
  #savedTo = '';
  lastBuild: AnnBuildReport | null = null;

  constructor(dim: number, quantization: AnnQuantization, expansionSearch = DEFAULT_EXPANSION_SEARCH, scan = false) {
    this.#dim = dim;
    this.#i8 = quantization === 'i8';
    this.#scan = scan ? new Int8Rows(dim) : null;
    this.#expansionSearch = expansionSearch;
    this.#params = { dim, quantization, connectivity: CONNECTIVITY, expansionAdd: EXPANSION_ADD };
    this.#index = this.#newIndex();
  }

  #newIndex(): Index {
    return new Index({
      dimensions: this.#dim,
      metric: MetricKind.Cos,
      quantization: this.#i8 ? ScalarKind.I8 : ScalarKind.F16,
      connectivity: CONNECTIVITY,
      expansion_add: EXPANSION_ADD,
      expansion_search: this.#expansionSearch,
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

  /** Adds rows to usearch and records their hashes; `hashes` when already computed. */
  #insert(ids: Float64Array, embeddings: Float32Array, threads: number, hashes = rowHashes(embeddings, this.#dim)): void {
    this.#changes++;
    const keys = keysOf(ids);
    this.#index.remove(keys); // multi: false refuses a key twice; replacing = remove + add
    this.#index.add(keys, this.#vectors(embeddings), threads);
    this.#scan?.set(ids, embeddings);
    for (let i = 0; i < ids.length; i++) this.#rows.set(ids[i]!, hashes[i]!);
  }

  #delete(ids: Float64Array): void {
    this.#changes++;
    this.#index.remove(keysOf(ids));
    this.#scan?.delete(ids);
    for (const id of ids) this.#rows.delete(id);
  }

  /** Adds `ids.length` rows of `embeddings` (an existing id is replaced). */
  add(ids: Float64Array, embeddings: Float32Array, threads = 1): void {
    if (ids.length === 0) return;
    if (this.#touched) for (const id of ids) this.#touched.add(id);
    if (this.#queued) this.#queued.push({ op: 'add', ids: ids.slice(), embeddings: embeddings.slice() });
    else this.#insert(ids, embeddings, ids.length >= 64 ? BUILD_THREADS : threads);
  }

  remove(ids: Float64Array): void {
    if (ids.length === 0) return;
    if (this.#touched) for (const id of ids) this.#touched.add(id);
    if (this.#queued) this.#queued.push({ op: 'remove', ids: ids.slice() });
    else this.#delete(ids);
  }

  #replayQueued(): void {
    const queued = this.#queued ?? [];
    this.#queued = null;
    for (const c of queued) {
      if (c.op === 'add') this.#insert(c.ids, c.embeddings, BUILD_THREADS);
      else this.#delete(c.ids);
    }
  }

  /**
   * Loads the graph saved in `file` when it is intact and close to `ids` / `embeddings`, and patches it to match
   * them exactly (rows added, replaced or removed since it was saved). Resolves with the number of rows patched,
   * or with why it was not used (the index is then empty, with the changes queued meanwhile applied).
   */
  async #restore(file: string, ids: Float64Array, embeddings: Float32Array, hashes: Float64Array): Promise<number | string> {
    this.#queued = [];
    try {
      const saved = await checkSavedGraph(file, this.#params);
      if (typeof saved === 'string') return saved;
      this.#savedTo = file;
      const touched = this.#touched!;
      const stale: number[] = [];
      const present = new Set<number>();
      for (let i = 0; i < ids.length; i++) {
        const id = ids[i]!;
        present.add(id);
        if (!touched.has(id) && saved.rows.get(id) !== hashes[i]) stale.push(i);
      }
      const gone: number[] = [];
      for (const id of saved.rows.keys()) if (!present.has(id) && !touched.has(id)) gone.push(id);
      const changed = stale.length + gone.length;
      if (changed > Math.max(64, MAX_PATCH_SHARE * ids.length)) return `${changed} rows changed since the graph was saved`;
      try {
        this.#index.load(file);
      } catch (e) {
        this.#index = this.#newIndex();
        return `usearch could not load it: ${(e as Error).message}`;
      }
      if (this.#index.size() !== saved.rows.size) {
        this.#index = this.#newIndex();
        return 'loaded graph does not hold its key list';
      }
      for (const [id, hash] of saved.rows) this.#rows.set(id, hash);
      this.#savedAt = this.#changes;
      if (gone.length > 0) this.#delete(Float64Array.from(gone));
      for (let start = 0; start < stale.length; start += BUILD_CHUNK) {
        const chunk = stale.slice(start, start + BUILD_CHUNK);
        const part = pick(ids, embeddings, this.#dim, chunk);
        this.#insert(
          part.ids,
          part.embeddings,
          BUILD_THREADS,
          Float64Array.from(chunk, (row) => hashes[row]!),
        );
      }
      return changed;
    } finally {
      this.#replayQueued();
    }
  }

  /**
   * Fills a new index with `ids` / `embeddings`: from the graph saved in `file` when it can be used, else in chunks,
   * yielding to the event loop between them; stops (resolving false) as soon as `alive()` turns false. Adds and
   * removes made meanwhile win over the rows still to come. A graph built or patched here is saved to `file` (from
   * MIN_SAVED_ROWS rows).
   */
  async build(ids: Float64Array, embeddings: Float32Array, alive: () => boolean, file?: string): Promise<boolean> {
    const t0 = performance.now();
    this.#ready = false;
    this.#touched = new Set();
    try {
      const hashes = rowHashes(embeddings, this.#dim);
      this.#scan?.reserve(ids.length);
      const restored = file ? await this.#restore(file, ids, embeddings, hashes) : 'no graph file configured';
      if (typeof restored === 'number') {
        if (!(await this.#fillScan(ids, embeddings, alive))) return false;
        this.lastBuild = { how: 'loaded', rows: ids.length, ms: performance.now() - t0, patched: restored };
        if (restored > 0 && ids.length >= MIN_SAVED_ROWS && alive()) await this.save(file!);
        return alive();
      }
      const built = await this.#eachUntouched(ids, embeddings, BUILD_CHUNK, alive, (chunk, rows) =>
        this.#insert(
          chunk.ids,
          chunk.embeddings,
          BUILD_THREADS,
          Float64Array.from(rows, (row) => hashes[row]!),
        ),
      );
      if (!built) return false;
      this.lastBuild = { how: 'built', rows: ids.length, ms: performance.now() - t0, reason: restored };
      if (file && ids.length >= MIN_SAVED_ROWS && alive()) await this.save(file);
      return alive();
    } finally {
      this.#touched = null;
      this.#ready = true;
    }
  }

  /**
   * Copies into the int8 scan the rows a loaded graph brought (the graph file holds no int8 copy); rows changed
   * meanwhile are left as the change made them. False if `alive()` turned false.
   */
  async #fillScan(ids: Float64Array, embeddings: Float32Array, alive: () => boolean): Promise<boolean> {
    const scan = this.#scan;
    return !scan || this.#eachUntouched(ids, embeddings, SCAN_FILL_CHUNK, alive, (chunk) => scan.set(chunk.ids, chunk.embeddings));
  }

  /**
   * Hands `each` the rows of `ids` / `embeddings` that no add() or remove() touched since build() began, `size` rows
   * at a time (packed, with their row numbers), yielding to the event loop after each chunk. Resolves false as soon
   * as `alive()` turns false.
   */
  async #eachUntouched(
    ids: Float64Array,
    embeddings: Float32Array,
    size: number,
    alive: () => boolean,
    each: (chunk: { ids: Float64Array; embeddings: Float32Array }, rows: number[]) => void,
  ): Promise<boolean> {
    for (let start = 0; start < ids.length; start += size) {
      if (!alive()) return false;
      const rows: number[] = [];
      for (let i = start; i < Math.min(ids.length, start + size); i++) if (!this.#touched!.has(ids[i]!)) rows.push(i);
      if (rows.length > 0) each(pick(ids, embeddings, this.#dim, rows), rows);
      await new Promise<void>((resolve) => setImmediate(resolve));
    }
    return true;
  }

  /**
   * Writes the graph and its key list to `file` (ann-file.ts), unless nothing changed since it was last saved to or
   * loaded from it; saves never overlap. Errors reject.
   */
  save(file: string): Promise<void> {
    const run = async () => {
      if (this.#savedAt === this.#changes && this.#savedTo === file) return;
      let at = 0;
      await saveGraph(file, this.#params, (tmp) => {
        this.#index.save(tmp);
        at = this.#changes;
        return new Map(this.#rows);
      });
      this.#savedAt = at;
      this.#savedTo = file;
    };
    const next = this.#saving.then(run, run);
    this.#saving = next.catch(() => undefined);
    return next;
  }

  /** Ids of the nearest entries to `query` (L2-normalized) in the graph, best first; `expansion` widens the beam. */
  candidates(query: Float32Array, expansion = 0): Float64Array {
    // usearch searches with a beam of max(expansion_search, count): asking for more widens it; the best few suffice.
    const wanted = expansion > 0 ? WIDE_CANDIDATES : CANDIDATES;
    const m = this.#index.search(this.#vectors(query), Math.max(wanted, expansion), 1);
    const out = new Float64Array(Math.min(wanted, m.keys.length));
    for (let i = 0; i < out.length; i++) out[i] = Number(m.keys[i]!);
    return out;
  }

  /** Ids of the nearest entries to `query` by a scan of every int8 row, best first (a confirming gallery only). */
  scanCandidates(query: Float32Array): Float64Array {
    if (!this.#scan) throw new Error('this index keeps no int8 rows to scan');
    return this.#scan.nearest(query, WIDE_CANDIDATES);
  }

  /** Rows in the int8 scan (0 without one). */
  get scanRows(): number {
    return this.#scan?.size ?? 0;
  }
}
