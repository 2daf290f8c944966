// Every embedding of an approximate gallery once more, as int8, scanned whole by usearch's exactSearch: the candidate
// stage of a would-be rejection (GalleryIndex.searchApproximate). A graph walk can miss an enrolled face among many
// distractors; a scan cannot, and at 1 byte a value it reads a quarter of what the float32 rows hold (scan times:
// docs/performance.md, "Gallery at scale"). Its order is that of the int8 values, so the exact index re-ranks its
// candidates, as it does the graph's.
//
// Rows are packed densely (a removal moves the last row into the gap), because exactSearch scans a matrix and
// answers row numbers.

import { exactSearch, MetricKind, type Matches } from 'usearch';

/**
 * Rows as int8, each scaled so that its largest value is +-127 (the cosine metric ignores a row's scale). usearch's
 * own float-to-int8 cast scales rows to unit length first, which leaves 1024-d embeddings with a handful of levels
 * per value; handing it Int8Array skips that cast.
 */
export function toInt8(rows: Float32Array, dim: number): Int8Array {
  const out = new Int8Array(rows.length);
  for (let r = 0; r < rows.length; r += dim) {
    let max = 0;
    for (let i = r; i < r + dim; i++) max = Math.max(max, Math.abs(rows[i]!));
    const scale = max > 0 ? 127 / max : 0;
    for (let i = r; i < r + dim; i++) out[i] = Math.round(rows[i]! * scale);
  }
  return out;
}

/** Rows reserved when the first one comes; then the capacity grows by half each time it is full. */
const FIRST_CAPACITY = 1024;

export class Int8Rows {
  readonly #dim: number;
  #data: Int8Array;
  /** Row -> id, for the first `size` rows. */
  #ids: Float64Array;
  readonly #rowOf = new Map<number, number>();

  constructor(dim: number) {
    this.#dim = dim;
    this.#data = new Int8Array(0);
    this.#ids = new Float64Array(0);
  }

  get size(): number {
    return this.#rowOf.size;
  }

  /** Makes room for `rows` rows in all, so that a bulk load copies the matrix once, not once per growth. */
  reserve(rows: number): void {
    if (rows <= this.#ids.length) return;
    const data = new Int8Array(rows * this.#dim);
    data.set(this.#data.subarray(0, this.size * this.#dim));
    const ids = new Float64Array(rows);
    ids.set(this.#ids.subarray(0, this.size));
    this.#data = data;
    this.#ids = ids;
  }

  /** Adds `ids.length` rows of `embeddings`; an id already here has its row overwritten. */
  set(ids: Float64Array, embeddings: Float32Array): void {
    const dim = this.#dim;
    const packed = toInt8(embeddings, dim);
    for (let i = 0; i < ids.length; i++) {
      const id = ids[i]!;
      let row = this.#rowOf.get(id);
      if (row === undefined) {
        row = this.size;
        if (row === this.#ids.length) this.reserve(Math.max(FIRST_CAPACITY, Math.ceil(row * 1.5)));
        this.#rowOf.set(id, row);
        this.#ids[row] = id;
      }
      this.#data.set(packed.subarray(i * dim, (i + 1) * dim), row * dim);
    }
  }

  /** Removes the rows of `ids` (ids not here are ignored). */
  delete(ids: Float64Array): void {
    const dim = this.#dim;
    for (const id of ids) {
      const row = this.#rowOf.get(id);
      if (row === undefined) continue;
      this.#rowOf.delete(id);
      const last = this.size; // the row count before this removal, less one
      if (row !== last) {
        const moved = this.#ids[last]!;
        this.#data.copyWithin(row * dim, last * dim, (last + 1) * dim);
        this.#ids[row] = moved;
        this.#rowOf.set(moved, row);
      }
    }
  }

  /** Ids of the `count` rows nearest to `query` (cosine of the int8 rows), best first. */
  nearest(query: Float32Array, count: number): Float64Array {
    const k = Math.min(count, this.size);
    if (k === 0) return new Float64Array(0);
    // A subarray from offset 0 is safe to hand over: exactSearch reads from the buffer's start (it ignores a
    // byteOffset) for the view's length.
    const rows = this.#data.subarray(0, this.size * this.#dim);
    const m = exactSearch(rows, toInt8(query, this.#dim), this.#dim, k, MetricKind.Cos, 1) as Matches;
    const out = new Float64Array(k);
    for (let i = 0; i < k; i++) out[i] = this.#ids[Number(m.keys[i]!)]!;
    return out;
  }
}
