// Face recognition over a durable gallery: enrolment, removal, prediction, bulk import/export, and keeping the
// in-memory search index in step with the store (re-embedding after a model change, fleet changes, resyncs).
//
// The index is rebuilt as a whole only in a "training data update" window (initial load and re-embedding, bulk
// import, full resync from the fleet store). Inside it predictions answer GalleryBusyError (HTTP 503) rather than
// search a gallery that is half there. A single add or remove never opens the window: it is applied to the index
// as one atomic swap (GalleryIndex), so predictions before it see the old gallery and after it the new one.
//
// No row can break the index: every sample is checked (sample-check.ts) before it is written (an import is
// refused whole, before anything is stored, when one line fails), and again when it is loaded or arrives from
// another server; a stored row that fails is quarantined: left out of the index, logged and counted (`status()`),
// never fatal to the rest of the gallery.

import type { Engine } from '../engine/engine.js';
import { calibratedDistance, EER_DISTANCE, type FaceEmbedderInfo, type FaceEmbeddingResult } from '../engine/face-embedding.js';
import type { GalleryIndex, GalleryIndexOptions } from './gallery-index.js';
import { checkSubject, exportLine, ImportError, parseImport, type ImportItem } from './jsonl.js';
import { embeddingProblem, isSampleId } from './sample-check.js';
import type { GalleryStore, NewSample, QuarantinedSample, Rect, RemoteChanges, SampleVector, StoreDurability } from './types.js';

export type RecognitionEngine = Pick<Engine, 'embedFace' | 'recognizeFace' | 'faceEmbedder' | 'createGallery'>;

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

/** The photo cannot be enrolled: it must show exactly one face. */
export class EnrolmentError extends Error {
  override name = 'EnrolmentError';
  constructor(readonly reason: 'no-face' | 'multiple-faces') {
    super(reason === 'no-face' ? 'No face detected' : 'More than 1 face');
  }
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
  | { face: { rect: Rect; score: number }; subject: string; sampleId: number; distance: number; cosine: number }
) & {
  /** Per-stage milliseconds of the recognition job (for the inference metrics). */
  timings: FaceEmbeddingResult['timings'];
};

/** One face of a photo and its nearest enrolled sample (null when nobody is enrolled). */
export interface IdentifiedFace {
  rect: Rect;
  score: number;
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

type IndexChange = { op: 'add'; samples: SampleVector[] } | { op: 'remove'; ids: number[] };

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

/** Quarantined rows named one by one in the log (the count is always given). */
const QUARANTINE_LOG_ROWS = 10;
/** Longest wait between two tries of a failed load. */
const LOAD_RETRY_MAX_MS = 30_000;

export class RecognitionService {
  readonly #engine: RecognitionEngine;
  readonly #store: GalleryStore;
  readonly #index: GalleryIndex;
  readonly #embedder: FaceEmbedderInfo;
  readonly #storeCrops: boolean;
  readonly #log: (message: string) => void;
  /** id -> subject of every sample in the index (the subjects listing). */
  readonly #subjectOf = new Map<number, string>();
  /** Rebuilds running or queued: > 0 is the training-data-update window. */
  #rebuilding = 0;
  /** Index changes that arrive during a rebuild, applied after it (they are idempotent). */
  #pending: IndexChange[] = [];
  #rebuildChain: Promise<void> = Promise.resolve();
  #resyncQueued = false;
  #closed = false;
  /** The first load succeeded. */
  #loaded = false;
  #lastError: string | null = null;
  /** Stored rows left out of the index, by id (rebuilt at every full load). */
  readonly #quarantine = new Map<number, QuarantinedSample>();
  /** Settles when the initial load (and any re-embedding) is done. */
  readonly ready: Promise<void>;

  private constructor(engine: RecognitionEngine, store: GalleryStore, options: RecognitionOptions) {
    const embedder = engine.faceEmbedder();
    if (!embedder) throw new Error('face recognition needs an engine with a face embedding model');
    this.#engine = engine;
    this.#store = store;
    this.#embedder = embedder;
    // A would-be rejection at the accept threshold is double-checked by the approximate index (GalleryIndex).
    this.#index = engine.createGallery({ annConfirmBelow: 1 - EER_DISTANCE / embedder.distanceScale, ...options.gallery });
    this.#storeCrops = options.storeCrops ?? true;
    this.#log = options.log ?? ((m) => console.log(`edgecv: ${m}`));
    this.ready = Promise.resolve();
  }

  /**
   * Starts watching the store for other servers' changes, then loads the gallery in the background (re-embedding
   * samples made by another model); `ready` settles when that is done.
   */
  static async open(engine: RecognitionEngine, store: GalleryStore, options: RecognitionOptions = {}): Promise<RecognitionService> {
    const service = new RecognitionService(engine, store, options);
    const changes: RemoteChanges = {
      added: (samples) => service.#apply({ op: 'add', samples }),
      removed: (ids) => service.#apply({ op: 'remove', ids }),
      resync: () => service.#requestResync(),
    };
    await store.watch(changes); // subscribed before loading: nothing falls between the two
    // The initial load is a rebuild: the server can listen meanwhile, and answers 503 to predictions. A store that
    // fails (Redis away) is tried again until it answers; `ready` settles then (or rejects if closed first).
    (service as { ready: Promise<void> }).ready = service.#rebuild('load', () => service.#loadUntilDone());
    return service;
  }

  async #loadUntilDone(): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      try {
        await this.#loadAll();
        this.#loaded = true;
        this.#lastError = null;
        return;
      } catch (e) {
        if (this.#closed) throw e;
        this.#lastError = (e as Error).message;
        const wait = Math.min(1000 * 2 ** (attempt - 1), LOAD_RETRY_MAX_MS);
        this.#log(`loading the gallery failed (try ${attempt}, again in ${wait / 1000} s): ${this.#lastError}`);
        await this.#sleep(wait);
        if (this.#closed) throw new Error('closed before the gallery could be loaded');
      }
    }
  }

  /** Waits `ms`, or less when the service closes. */
  #sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const started = Date.now();
      const tick = setInterval(() => {
        if (this.#closed || Date.now() - started >= ms) {
          clearInterval(tick);
          resolve();
        }
      }, Math.min(ms, 100));
    });
  }

  /** The embedding model and its calibration. */
  get embedder(): FaceEmbedderInfo {
    return { ...this.#embedder };
  }

  /** True during a training data update (predictions answer GalleryBusyError). */
  get updating(): boolean {
    return this.#rebuilding > 0;
  }

  /** Number of samples in the index. */
  get size(): number {
    return this.#subjectOf.size;
  }

  /** See GalleryState. */
  get state(): GalleryState {
    return !this.#loaded ? 'loading' : this.#rebuilding > 0 ? 'syncing' : 'ready';
  }

  /** Number of stored rows left out of the index. */
  get quarantined(): number {
    return this.#quarantine.size;
  }

  /** The quarantined rows, by id. */
  quarantine(): QuarantinedSample[] {
    return [...this.#quarantine.values()].sort((a, b) => a.id - b.id);
  }

  /** State, sizes and the store's durability (the capabilities answer). */
  status(): GalleryStatus {
    const { model, version, dim } = this.#embedder;
    return {
      state: this.state,
      samples: this.size,
      quarantined: this.quarantined,
      store: this.#store.durability(),
      embedder: { model, version, dim },
      lastError: this.#lastError,
    };
  }

  /** Why a vector of the current model cannot go into the index; null when it can. */
  #problem(s: SampleVector): string | null {
    if (!isSampleId(s.id)) return 'the id is not a positive integer';
    if (typeof s.subject !== 'string' || s.subject === '') return 'no subject';
    return embeddingProblem(s.embedding, this.#embedder.dim);
  }

  #quarantineRows(rows: QuarantinedSample[], where: string): void {
    if (rows.length === 0) return;
    for (const r of rows) this.#quarantine.set(r.id, r);
    const named = rows.slice(0, QUARANTINE_LOG_ROWS).map((r) => `id ${r.id}${r.subject === null ? '' : ` (${JSON.stringify(r.subject)})`}: ${r.reason}`);
    const more = rows.length > QUARANTINE_LOG_ROWS ? `; and ${rows.length - QUARANTINE_LOG_ROWS} more` : '';
    this.#log(
      `gallery: ${rows.length} ${where} quarantined, left out of the index (${this.#quarantine.size} in all; remove with POST /trainer/remove/ subject and id): ${named.join('; ')}${more}`,
    );
  }

  // ------------------------------------------------------------------ the index

  #applyNow(change: IndexChange): void {
    if (change.op === 'add') {
      const current = change.samples.filter((s) => s.model === this.#embedder.model && s.modelVersion === this.#embedder.version);
      if (current.length < change.samples.length) this.#requestResync(); // another model's vectors: re-embed them
      // A vector the index cannot take (another server's, or a bug) is quarantined: the rest still goes in.
      const bad: QuarantinedSample[] = [];
      const fresh = current.filter((s) => {
        const problem = this.#problem(s);
        if (problem !== null) bad.push({ id: s.id, subject: typeof s.subject === 'string' ? s.subject : null, reason: problem });
        return problem === null;
      });
      this.#quarantineRows(bad, 'added samples');
      if (fresh.length === 0) return;
      this.#index.add(fresh.map((s) => ({ id: s.id, subject: s.subject, embedding: s.embedding })));
      for (const s of fresh) this.#subjectOf.set(s.id, s.subject);
    } else {
      this.#index.remove(change.ids);
      for (const id of change.ids) {
        this.#subjectOf.delete(id);
        this.#quarantine.delete(id);
      }
    }
  }

  /** Applies a change now, or after the rebuild in progress (which would otherwise overwrite it). */
  #apply(change: IndexChange): void {
    if (this.#closed) return;
    if (this.#rebuilding > 0) this.#pending.push(change);
    else this.#applyNow(change);
  }

  /**
   * Runs `work` inside a training-data-update window, which opens now (even while an earlier rebuild still runs:
   * rebuilds never overlap) and closes when the last queued rebuild is done.
   */
  #rebuild(what: string, work: () => Promise<void>): Promise<void> {
    this.#rebuilding++;
    const run = async () => {
      const t0 = performance.now();
      try {
        if (this.#closed) return;
        await work();
        const ann = this.#index.annBuild;
        const how = ann && what !== 'import' ? (ann.how === 'loaded' ? `, HNSW graph loaded (${ann.patched} rows patched)` : `, HNSW graph built (${ann.reason})`) : '';
        this.#log(`gallery ${what}: ${this.#subjectOf.size} samples in ${((performance.now() - t0) / 1000).toFixed(1)} s${how}`);
      } finally {
        if (--this.#rebuilding === 0) {
          const pending = this.#pending;
          this.#pending = [];
          for (const change of pending) this.#applyNow(change);
        }
      }
    };
    const next = this.#rebuildChain.then(run, run);
    this.#rebuildChain = next.catch(() => undefined);
    return next;
  }

  #requestResync(): void {
    if (this.#resyncQueued || this.#closed) return;
    this.#resyncQueued = true;
    void this.#rebuild('resync', async () => {
      this.#resyncQueued = false;
      await this.#loadAll();
      this.#lastError = null;
    }).catch((e: unknown) => {
      // The index is as it was; the fleet may have changed meanwhile: try again (the store may be back by then).
      this.#lastError = (e as Error).message;
      this.#log(`gallery resync failed, trying again in 2 s: ${this.#lastError}`);
      if (!this.#closed) setTimeout(() => this.#requestResync(), 2000).unref();
    });
  }

  /** Replaces the index with the store's content, re-embedding samples made by another model. */
  async #loadAll(): Promise<void> {
    const { vectors, unreadable } = await this.#store.vectors();
    const isCurrent = (v: SampleVector) => v.model === this.#embedder.model && v.modelVersion === this.#embedder.version;
    const bad: QuarantinedSample[] = [...unreadable];
    const current: SampleVector[] = [];
    const stale = new Set<number>();
    for (const v of vectors) {
      if (!isCurrent(v)) {
        stale.add(v.id); // re-embedded from its crop: its stored vector does not matter
        continue;
      }
      const problem = this.#problem(v);
      if (problem === null) current.push(v);
      else bad.push({ id: v.id, subject: v.subject, reason: problem });
    }
    this.#index.replace(current.map((s) => ({ id: s.id, subject: s.subject, embedding: s.embedding })));
    this.#subjectOf.clear();
    for (const s of current) this.#subjectOf.set(s.id, s.subject);
    this.#quarantine.clear();
    this.#quarantineRows(bad, 'stored rows');
    await this.#index.indexed; // the approximate index of a large gallery is built inside the window too
    if (stale.size > 0) await this.#reembed(stale);
  }

  async #reembed(ids: Set<number>): Promise<void> {
    const { model, version } = this.#embedder;
    this.#log(`gallery: re-embedding ${ids.size} samples for ${model} ${version}`);
    let skipped = 0;
    for await (const batch of this.#store.samples()) {
      if (this.#closed) return; // shutting down: the rest is re-embedded at the next start
      const updates: { id: number; model: string; modelVersion: string; embedding: Float32Array; subject: string }[] = [];
      for (const s of batch) {
        if (!ids.has(s.id)) continue;
        if (!s.crop || !s.cropRect) {
          skipped++;
          continue;
        }
        const r = await this.#engine.embedFace(s.crop, { rect: s.cropRect });
        if (r.embedding) updates.push({ id: s.id, subject: s.subject, model, modelVersion: version, embedding: r.embedding });
      }
      if (updates.length === 0) continue;
      await this.#store.updateEmbeddings(updates);
      this.#index.add(updates.map((u) => ({ id: u.id, subject: u.subject, embedding: u.embedding })));
      for (const u of updates) this.#subjectOf.set(u.id, u.subject);
    }
    if (skipped > 0) this.#log(`gallery: ${skipped} samples have no stored crop and another model's embedding: left out of the gallery`);
  }

  // ------------------------------------------------------------------ requests

  #checkSubject(subject: unknown): string {
    try {
      return checkSubject(subject);
    } catch (e) {
      throw new SubjectError((e as Error).message);
    }
  }

  /** The nearest enrolled subject to the photo's first face (highest detection score). */
  async predict(image: Uint8Array): Promise<Prediction> {
    if (this.updating) throw new GalleryBusyError();
    if (this.#index.size === 0) throw new GalleryEmptyError();
    const r = await this.#engine.recognizeFace(image, this.#index);
    if (!r.face) return { face: null, timings: r.timings };
    if (!r.match) throw new GalleryEmptyError(); // emptied while this photo was in the queue
    return {
      face: r.face,
      subject: r.match.subject,
      sampleId: r.match.id,
      cosine: r.match.cosine,
      distance: calibratedDistance(r.match.cosine, this.#embedder.distanceScale),
      timings: r.timings,
    };
  }

  /**
   * Every face of the photo (highest detection score first) with its nearest enrolled sample; an empty gallery is
   * no error here (every match is null). Faces after the first are embedded one by one from their boxes, so that a
   * crowded photo holds one worker at a time rather than flooding the queue.
   */
  async identify(image: Uint8Array): Promise<{ faces: IdentifiedFace[]; timings: FaceEmbeddingResult['timings'] }> {
    if (this.updating) throw new GalleryBusyError();
    const scale = this.#embedder.distanceScale;
    const matchOf = (m: { subject: string; id: number; cosine: number } | null) =>
      m ? { subject: m.subject, sampleId: m.id, distance: calibratedDistance(m.cosine, scale) } : null;
    const first = await this.#engine.recognizeFace(image, this.#index);
    if (!first.face) return { faces: [], timings: first.timings };
    const out: IdentifiedFace[] = [{ rect: first.face.rect, score: first.face.score, match: matchOf(first.match) }];
    for (const face of first.faces.slice(1)) {
      const r = await this.#engine.recognizeFace(image, this.#index, { rect: face.rect, keypoints: face.keypoints });
      out.push({ rect: face.rect, score: face.score, match: matchOf(r.match) });
    }
    return { faces: out, timings: first.timings };
  }

  async #sampleFromPhoto(subject: string, image: Uint8Array): Promise<{ sample: NewSample; rect: Rect }> {
    const r = await this.#engine.embedFace(image, { keepCrop: this.#storeCrops });
    if (r.faces.length === 0 || !r.face || !r.embedding) throw new EnrolmentError('no-face');
    if (r.faces.length > 1) throw new EnrolmentError('multiple-faces');
    return {
      rect: r.face.rect,
      sample: {
        subject,
        createdAt: Date.now(),
        model: this.#embedder.model,
        modelVersion: this.#embedder.version,
        embedding: r.embedding,
        crop: r.crop?.jpeg ?? null,
        cropRect: r.crop?.rect ?? null,
      },
    };
  }

  /** Enrols one photo with exactly one face as a new sample of `subject`. Durable when it resolves. */
  async enrol(subject: unknown, image: Uint8Array): Promise<Enrolment> {
    const name = this.#checkSubject(subject);
    if (this.updating) throw new GalleryBusyError();
    const { sample, rect } = await this.#sampleFromPhoto(name, image);
    const stored = await this.#store.add(sample);
    this.#apply({ op: 'add', samples: [stored] });
    let samples = 0;
    for (const s of this.#subjectOf.values()) if (s === name) samples++;
    return { id: stored.id, subject: name, rect, samples };
  }

  /** Removes a subject, or one of its samples; resolves with the removed sample ids (empty: nothing matched). */
  async remove(subject: unknown, id?: number): Promise<number[]> {
    const name = this.#checkSubject(subject);
    if (this.updating) throw new GalleryBusyError();
    const ids = await this.#store.remove(name, id);
    if (ids.length > 0) this.#apply({ op: 'remove', ids });
    return ids;
  }

  /** Every subject in the index with its sample count and ids, by name. */
  subjects(): SubjectSummary[] {
    const by = new Map<string, number[]>();
    for (const [id, subject] of this.#subjectOf) {
      const ids = by.get(subject) ?? [];
      ids.push(id);
      by.set(subject, ids);
    }
    return [...by.entries()]
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
      .map(([subject, ids]) => ({ subject, samples: ids.length, ids: ids.sort((a, b) => a - b) }));
  }

  /** The whole store as JSON lines (see jsonl.ts), each ending in a newline. */
  async *exportLines(): AsyncIterable<string> {
    for await (const batch of this.#store.samples()) {
      for (const s of batch) yield `${exportLine(s)}\n`;
    }
  }

  async #sampleFromItem(item: ImportItem): Promise<NewSample> {
    const { model, version } = this.#embedder;
    try {
      if ('image' in item) return (await this.#sampleFromPhoto(item.subject, item.image)).sample;
      const createdAt = item.createdAt ?? Date.now();
      const crop = this.#storeCrops ? item.crop : null;
      const cropRect = crop ? item.cropRect : null;
      if (item.embedding && item.model === model && item.modelVersion === version) {
        const problem = embeddingProblem(item.embedding, this.#embedder.dim);
        if (problem !== null) throw new Error(`'embedding': ${problem}`);
        return { subject: item.subject, createdAt, model, modelVersion: version, embedding: item.embedding, crop, cropRect };
      }
      if (!item.crop || !item.cropRect) throw new Error(`the embedding is not from ${model} ${version} and there is no crop to compute it from`);
      const r = await this.#engine.embedFace(item.crop, { rect: item.cropRect });
      if (!r.embedding) throw new Error('no embedding from the crop');
      return { subject: item.subject, createdAt, model, modelVersion: version, embedding: r.embedding, crop, cropRect };
    } catch (e) {
      if (e instanceof ImportError) throw e;
      throw new ImportError(item.line, (e as Error).message);
    }
  }

  /**
   * Bulk import of a JSON-lines body: all or nothing. Every line is checked and embedded first, while predictions
   * are still served; then the update window opens only for the swap: one store transaction adds them (replacing
   * the whole gallery when `replace`) and the index takes them (appended, or reloaded from the store on replace).
   */
  async import(text: string, replace: boolean): Promise<{ added: number; total: number }> {
    const items = parseImport(text); // ImportError before anything is embedded: nothing changes
    if (this.updating) throw new GalleryBusyError();
    const samples: NewSample[] = [];
    for (const item of items) {
      const sample = await this.#sampleFromItem(item);
      // Every row, however it was made, is checked before any is written: the index must be able to take them all.
      const problem = embeddingProblem(sample.embedding, this.#embedder.dim);
      if (problem !== null) throw new ImportError(item.line, problem);
      samples.push(sample);
    }
    let added = 0;
    await this.#rebuild(replace ? 'import (replace)' : 'import', async () => {
      const stored = await this.#store.addMany(samples, replace);
      added = stored.length;
      if (replace) await this.#loadAll();
      else this.#applyNow({ op: 'add', samples: stored });
    });
    return { added, total: this.#subjectOf.size };
  }

  async close(): Promise<void> {
    this.#closed = true;
    await this.#rebuildChain;
    // The graph as it is now, so that the next start loads it rather than rebuilds it.
    await this.#index.persist().catch((e: unknown) => this.#log(`gallery: could not save the HNSW graph: ${(e as Error).message}`));
    await this.#store.close();
  }
}
