// Face recognition over a durable gallery: enrolment, removal, prediction, bulk import/export, and keeping the
// in-memory search index in step with the store (re-embedding after a model change, fleet changes, resyncs).
//
// The index is rebuilt as a whole only in a "training data update" window (update-window.ts: initial load and
// re-embedding, bulk import, full resync from the fleet store, which reads the store before the window opens).
// Inside it predictions answer GalleryBusyError (HTTP 503) rather than search a gallery that is half there. A single
// add or remove never opens the window: it is applied to the index as one atomic swap (GalleryIndex), so
// predictions before it see the old gallery and after it the new one.
//
// No row can break the index: every sample is checked (sample-check.ts) before it is written (an import is
// refused whole, before anything is stored, when one line fails), and again when it is loaded or arrives from
// another server; a stored row that fails is quarantined: left out of the index, logged and counted (`status()`),
// never fatal to the rest of the gallery.

import type { Engine } from '../engine/engine.js';
import { calibratedDistance, EER_DISTANCE, type FaceEmbedderInfo, type FaceEmbeddingResult } from '../engine/face-embedding.js';
import { checkEnrolmentPhoto } from './enrolment-check.js';
import { identifiedFace, unjudgedReason } from './recognition-quality.js';
import type { GalleryIndex } from '../engine/gallery/gallery-index.js';
import { annBuildNote } from '../engine/gallery/ann-index.js';
import { sampleFromImportItem } from './import-item.js';
import { checkSubject, exportLine, ImportError, parseImport, type ImportItem, type SubjectRules } from './jsonl.js';
import { retryUntilDone } from './retry.js';
import { quarantineMessage, sortStoredRows, vectorProblem } from './stored-rows.js';
import { embeddingProblem } from './sample-check.js';
import { libraryPage, type LibraryPage } from './library-page.js';
import { SampleQualities } from './sample-qualities.js';
import type { GalleryStore, NewSample, QuarantinedSample, Rect, RemoteChanges, SamplePageRequest, SampleVector, StoredVectors } from './types.js';
import { UpdateWindow } from './update-window.js';
import {
  GalleryBusyError,
  GalleryEmptyError,
  SubjectError,
  type Enrolment,
  type GalleryState,
  type GalleryStatus,
  type IdentifiedFace,
  type Prediction,
  type RecognitionOptions,
  subjectSummaries,
  type SubjectSummary,
} from './recognition-types.js';

export { EnrolmentError, type EnrolmentRefusal } from './enrolment-check.js';
export * from './recognition-types.js';

export type RecognitionEngine = Pick<Engine, 'embedFace' | 'recognizeFace' | 'faceEmbedder' | 'createGallery'>;

type IndexChange = { op: 'add'; samples: SampleVector[] } | { op: 'remove'; ids: number[] };

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
  readonly #window = new UpdateWindow<IndexChange>((change) => this.#applyNow(change));
  #resyncQueued = false;
  #closed = false;
  /** The first load succeeded. */
  #loaded = false;
  #lastError: string | null = null;
  /** Measures the qualities of crops stored without one (imported, or an older edgecv's rows when listed). */
  readonly #qualities = new SampleQualities();
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
    await retryUntilDone(() => this.#loadAll(), {
      maxWaitMs: LOAD_RETRY_MAX_MS,
      closed: () => this.#closed,
      failed: (attempt, wait, error) => {
        this.#lastError = error.message;
        this.#log(`loading the gallery failed (try ${attempt}, again in ${wait / 1000} s): ${error.message}`);
      },
    });
    this.#loaded = true;
    this.#lastError = null;
  }

  /** The embedding model and its calibration. */
  get embedder(): FaceEmbedderInfo {
    return { ...this.#embedder };
  }

  /** True during a training data update (predictions answer GalleryBusyError). */
  get updating(): boolean {
    return this.#window.isOpen;
  }

  /** Number of samples in the index. */
  get size(): number {
    return this.#subjectOf.size;
  }

  /** See GalleryState. */
  get state(): GalleryState {
    return !this.#loaded ? 'loading' : this.#window.isOpen ? 'syncing' : 'ready';
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

  #quarantineRows(rows: QuarantinedSample[], where: string): void {
    if (rows.length === 0) return;
    for (const r of rows) this.#quarantine.set(r.id, r);
    this.#log(quarantineMessage(rows, where, this.#quarantine.size));
  }

  // ------------------------------------------------------------------ the index

  #applyNow(change: IndexChange): void {
    if (change.op === 'add') {
      const current = change.samples.filter((s) => s.model === this.#embedder.model && s.modelVersion === this.#embedder.version);
      if (current.length < change.samples.length) this.#requestResync(); // another model's vectors: re-embed them
      // A vector the index cannot take (another server's, or a bug) is quarantined: the rest still goes in.
      const bad: QuarantinedSample[] = [];
      const fresh = current.filter((s) => {
        const problem = vectorProblem(s, this.#embedder.dim);
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

  #apply(change: IndexChange): void {
    if (!this.#closed) this.#window.apply(change);
  }

  /** Runs `work` in the update window (see UpdateWindow.run), and logs how long the window was open. */
  #rebuild<T>(what: string, work: (input: T) => Promise<void>, read?: () => Promise<T>): Promise<void> {
    const timed = async (input: T) => {
      const t0 = performance.now();
      if (this.#closed) return;
      await work(input);
      const ann = this.#index.annBuild;
      const how = ann && what !== 'import' ? annBuildNote(ann) : '';
      this.#log(`gallery ${what}: ${this.#subjectOf.size} samples in ${((performance.now() - t0) / 1000).toFixed(1)} s${how}`);
    };
    return this.#window.run(timed, read); // closing: a read still finds the store open (close waits for the window)
  }

  #requestResync(): void {
    if (this.#resyncQueued || this.#closed) return;
    this.#resyncQueued = true;
    const read = () => {
      this.#resyncQueued = false;
      return this.#store.vectors();
    };
    void this.#rebuild(
      'resync',
      async (stored: StoredVectors) => {
        await this.#replaceWith(stored);
        this.#lastError = null;
      },
      read,
    ).catch((e: unknown) => {
      // The index is as it was; the fleet may have changed meanwhile: try again (the store may be back by then).
      this.#lastError = (e as Error).message;
      this.#log(`gallery resync failed, trying again in 2 s: ${this.#lastError}`);
      if (!this.#closed) setTimeout(() => this.#requestResync(), 2000).unref();
    });
  }

  async #loadAll(): Promise<void> {
    await this.#replaceWith(await this.#store.vectors());
  }

  /** Replaces the index with the store's rows, re-embedding samples made by another model. */
  async #replaceWith({ vectors, unreadable }: StoredVectors): Promise<void> {
    const { current, stale, bad } = sortStoredRows(vectors, unreadable, this.#embedder);
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

  #checkSubject(subject: unknown, rules: SubjectRules = 'new'): string {
    try {
      return checkSubject(subject, rules);
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
    const [face, unjudged] = [{ rect: r.face.rect, score: r.face.score }, unjudgedReason(r.face)];
    if (unjudged !== null) return { face, unjudged, timings: r.timings };
    if (!r.match) throw new GalleryEmptyError(); // emptied while this photo was in the queue
    return {
      face,
      unjudged,
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
    const first = await this.#engine.recognizeFace(image, this.#index);
    if (!first.face) return { faces: [], timings: first.timings };
    const out = [identifiedFace(first.face, first.face.score, first.match, scale)];
    for (const face of first.faces.slice(1)) {
      const r = await this.#engine.recognizeFace(image, this.#index, { rect: face.rect, keypoints: face.keypoints });
      out.push(identifiedFace(r.face ?? { rect: face.rect, sharpness: Infinity }, face.score, r.match, scale));
    }
    return { faces: out, timings: first.timings };
  }

  /** The photo's first face (highest detection score) embedded by the gallery's model, the gallery untouched. */
  embedPhoto(image: Uint8Array): Promise<FaceEmbeddingResult> {
    return this.#engine.embedFace(image);
  }

  async #sampleFromPhoto(subject: string, image: Uint8Array): Promise<{ sample: NewSample; rect: Rect }> {
    // The crop is always made: the sharpness is measured on it (it is stored only with storeCrops, with its quality).
    const { embedded: r, quality } = checkEnrolmentPhoto(await this.#engine.embedFace(image, { keepCrop: true }));
    return {
      rect: r.face.rect,
      sample: {
        subject,
        createdAt: Date.now(),
        model: this.#embedder.model,
        modelVersion: this.#embedder.version,
        embedding: r.embedding,
        crop: this.#storeCrops ? (r.crop?.jpeg ?? null) : null,
        cropRect: this.#storeCrops ? (r.crop?.rect ?? null) : null,
        quality: this.#storeCrops ? quality : null,
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
    const name = this.#checkSubject(subject, 'existing');
    if (this.updating) throw new GalleryBusyError();
    const ids = await this.#store.remove(name, id);
    if (ids.length > 0) this.#apply({ op: 'remove', ids });
    return ids;
  }

  /** A page of the subject's stored samples, in id order, with their crops and quality (total 0: no such subject). */
  samplesOf(subject: unknown, page: SamplePageRequest): Promise<LibraryPage> {
    return libraryPage(this.#store, this.#qualities, this.#checkSubject(subject, 'existing'), page);
  }

  /** Gives sample `id` of `subject` to `to` (one store transaction); false when `subject` has no sample `id`. */
  async move(subject: unknown, id: number, to: unknown): Promise<boolean> {
    const from = this.#checkSubject(subject, 'existing');
    const target = this.#checkSubject(to);
    if (this.updating) throw new GalleryBusyError();
    const moved = await this.#store.move(id, from, target);
    if (!moved) return false;
    this.#apply({ op: 'add', samples: [moved] }); // the index replaces the id's entry
    return true;
  }

  /** Every subject in the index with its sample count and ids, by name. */
  subjects(): SubjectSummary[] {
    return subjectSummaries(this.#subjectOf);
  }

  /** The whole store as JSON lines (see jsonl.ts), each ending in a newline. */
  async *exportLines(): AsyncIterable<string> {
    for await (const batch of this.#store.samples()) {
      for (const s of batch) yield `${exportLine(s)}\n`;
    }
  }

  #sampleFromItem(item: ImportItem): Promise<NewSample> {
    return sampleFromImportItem(item, {
      embedder: this.#embedder,
      storeCrops: this.#storeCrops,
      fromPhoto: async (subject, image) => (await this.#sampleFromPhoto(subject, image)).sample,
      embedCrop: (crop, rect, keepCrop) => this.#engine.embedFace(crop, { rect, keepCrop }),
    });
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
    await this.#qualities.fill(samples); // kept with each sample: listing never measures them (off the event loop)
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
    await this.#window.settled;
    // The graph as it is now, so that the next start loads it rather than rebuilds it.
    await this.#index.persist().catch((e: unknown) => this.#log(`gallery: could not save the HNSW graph: ${(e as Error).message}`));
    await this.#qualities.close();
    await this.#store.close();
  }
}
