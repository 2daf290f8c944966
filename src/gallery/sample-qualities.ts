// Measures samples' qualities off the event loop: on a worker thread (quality-worker.ts), a batch of crops at a
// time. Each quality is measured once and kept with its sample in the store: enrolment measures it anyway, an
// import here before it writes, and the face library here for a listed row an older edgecv wrote without one (then
// writes it back, library-page.ts). Where the compiled worker is not there (the library run from its TypeScript
// sources, e.g. under vitest), crops are measured on the calling thread, the event loop given back between two.

import fs from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import type { QualityJob, QualityReply } from './quality-worker.js';
import { sampleQuality, type SampleQuality } from './sample-quality.js';
import type { NewSample, Rect } from './types.js';

const WORKER_FILE = fileURLToPath(new URL('./quality-worker.js', import.meta.url));
/** Crops sent to the worker in one message (an import may bring thousands: their copies stay bounded). */
const BATCH = 64;

/** A sample whose crop is kept. */
export interface CroppedSample {
  crop: Uint8Array;
  cropRect: Rect;
}

export class SampleQualities {
  #worker: Worker | undefined;
  #nextJob = 1;
  readonly #pending = new Map<number, { resolve: (q: (SampleQuality | null)[]) => void; reject: (e: Error) => void }>();
  #measured = 0;
  /** Whether crops are measured on a worker thread (false: on the calling thread). */
  readonly threaded: boolean;

  constructor(opts: { threaded?: boolean } = {}) {
    this.threaded = (opts.threaded ?? true) && fs.existsSync(WORKER_FILE);
  }

  /** Crops measured since this opened (what keeping the qualities saves shows here). */
  get measured(): number {
    return this.#measured;
  }

  /** The quality of each sample's crop, in order. */
  async of(samples: CroppedSample[]): Promise<(SampleQuality | null)[]> {
    const out: (SampleQuality | null)[] = [];
    for (let i = 0; i < samples.length; i += BATCH) {
      const batch = samples.slice(i, i + BATCH);
      out.push(...(await this.#measure(batch.map((s) => ({ crop: s.crop, rect: s.cropRect })))));
      this.#measured += batch.length;
    }
    return out;
  }

  /** Sets the quality of the samples that have none yet (an import's): measured on their crop, null without one. */
  async fill(samples: NewSample[]): Promise<void> {
    const missing = samples.filter((s) => s.quality === undefined);
    const cropped = missing.filter((s): s is NewSample & CroppedSample => s.crop !== null && s.cropRect !== null);
    const qualities = await this.of(cropped);
    cropped.forEach((s, i) => (s.quality = qualities[i] ?? null));
    for (const s of missing) s.quality ??= null;
  }

  async #measure(crops: QualityJob['crops']): Promise<(SampleQuality | null)[]> {
    if (!this.threaded) {
      const out: (SampleQuality | null)[] = [];
      for (const c of crops) {
        await new Promise((resolve) => setImmediate(resolve));
        out.push(sampleQuality(c.crop, c.rect));
      }
      return out;
    }
    const worker = this.#startWorker();
    const id = this.#nextJob++;
    return new Promise((resolve, reject) => {
      this.#pending.set(id, { resolve, reject });
      // Copies: a Buffer may be a view of a larger pooled one, which a structured clone would copy whole.
      worker.postMessage({ id, crops: crops.map((c) => ({ crop: new Uint8Array(c.crop), rect: c.rect })) } satisfies QualityJob);
    });
  }

  #startWorker(): Worker {
    if (this.#worker) return this.#worker;
    const worker = new Worker(WORKER_FILE);
    worker.unref(); // an idle worker must not keep the process alive
    worker.on('message', (reply: QualityReply) => {
      const pending = this.#pending.get(reply.id);
      this.#pending.delete(reply.id);
      pending?.resolve(reply.qualities);
    });
    const fail = (e: Error) => {
      for (const p of this.#pending.values()) p.reject(e);
      this.#pending.clear();
      this.#worker = undefined; // the next page starts a new one
    };
    worker.on('error', fail);
    worker.on('exit', (code) => fail(new Error(`sample quality worker exited (${code})`)));
    this.#worker = worker;
    return worker;
  }

  async close(): Promise<void> {
    const worker = this.#worker;
    this.#worker = undefined;
    await worker?.terminate();
  }
}
