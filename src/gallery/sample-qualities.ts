// The quality of each listed sample, measured once: kept by id (a sample's crop never changes), remembered at
// enrolment (which measures it anyway), and otherwise measured on a worker thread (quality-worker.ts), a page of
// crops at a time. Where the compiled worker is not there (the library run from its TypeScript sources, e.g.
// under vitest), crops are measured on the calling thread, the event loop given back between two.

import fs from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import type { QualityJob, QualityReply } from './quality-worker.js';
import { sampleQuality, type SampleQuality } from './sample-quality.js';
import type { Rect } from './types.js';

const WORKER_FILE = fileURLToPath(new URL('./quality-worker.js', import.meta.url));

/** A sample whose crop is kept. */
export interface CroppedSample {
  id: number;
  crop: Uint8Array;
  cropRect: Rect;
}

export class SampleQualities {
  readonly #byId = new Map<number, SampleQuality | null>();
  #worker: Worker | undefined;
  #nextJob = 1;
  readonly #pending = new Map<number, { resolve: (q: (SampleQuality | null)[]) => void; reject: (e: Error) => void }>();
  /** Whether crops are measured on a worker thread (false: on the calling thread). */
  readonly threaded: boolean;

  /** `size`: qualities kept (two numbers each), the oldest forgotten first past it. */
  constructor(
    readonly size = 200_000,
    opts: { threaded?: boolean } = {},
  ) {
    this.threaded = (opts.threaded ?? true) && fs.existsSync(WORKER_FILE);
  }

  /** A quality measured elsewhere (enrolment). */
  remember(id: number, quality: SampleQuality | null): void {
    if (this.#byId.size >= this.size) this.#byId.delete(this.#byId.keys().next().value!);
    this.#byId.set(id, quality);
  }

  /** The quality of each sample, in order: those not known yet measured together, off the event loop. */
  async of(samples: CroppedSample[]): Promise<(SampleQuality | null)[]> {
    const unknown = samples.filter((s) => !this.#byId.has(s.id));
    if (unknown.length > 0) {
      const measured = await this.#measure(unknown.map((s) => ({ crop: s.crop, rect: s.cropRect })));
      unknown.forEach((s, i) => this.remember(s.id, measured[i] ?? null));
    }
    // A quality forgotten meanwhile (past `size`) is measured again next time; here it is still at hand.
    return samples.map((s) => this.#byId.get(s.id) ?? null);
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
