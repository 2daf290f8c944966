// Runs metrics queries on a worker thread (query-worker.ts) and hands back the answer as JSON text.
// Where the compiled worker is not there (the library run from its TypeScript sources, e.g. under
// vitest), queries run on the calling thread instead.

import fs from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import type { InstanceIdentity } from './identity.js';
import { answerMetricsApp, type MetricsAppQuery } from './query.js';
import type { QueryJob, QueryReply } from './query-worker.js';
import type { MetricsStore } from './store.js';

const WORKER_FILE = fileURLToPath(new URL('./query-worker.js', import.meta.url));

export class MetricsQueryRunner {
  readonly #store: MetricsStore;
  readonly #identity: InstanceIdentity;
  #worker: Worker | undefined;
  #nextId = 1;
  readonly #pending = new Map<number, { resolve: (json: string) => void; reject: (e: Error) => void }>();
  /** Whether answers come from a worker thread (false: on the calling thread). */
  readonly threaded: boolean;

  constructor(store: MetricsStore, identity: InstanceIdentity, opts: { threaded?: boolean } = {}) {
    this.#store = store;
    this.#identity = identity;
    this.threaded = (opts.threaded ?? true) && fs.existsSync(WORKER_FILE);
  }

  /** The answer to `query`, as JSON text. */
  answer(query: MetricsAppQuery): Promise<string> {
    if (!this.threaded) {
      try {
        return Promise.resolve(JSON.stringify(answerMetricsApp(this.#store, this.#identity, query)));
      } catch (e) {
        return Promise.reject(e as Error);
      }
    }
    const worker = this.#startWorker();
    const id = this.#nextId++;
    const job: QueryJob = { id, file: this.#store.file, identity: this.#identity, query };
    return new Promise((resolve, reject) => {
      this.#pending.set(id, { resolve, reject });
      worker.postMessage(job);
    });
  }

  #startWorker(): Worker {
    if (this.#worker) return this.#worker;
    const worker = new Worker(WORKER_FILE);
    worker.unref(); // an idle query worker must not keep the process alive
    worker.on('message', (reply: QueryReply) => {
      const pending = this.#pending.get(reply.id);
      if (!pending) return;
      this.#pending.delete(reply.id);
      if ('json' in reply) pending.resolve(reply.json);
      else pending.reject(new Error(`metrics query failed: ${reply.error}`));
    });
    const fail = (e: Error) => {
      for (const p of this.#pending.values()) p.reject(e);
      this.#pending.clear();
      this.#worker = undefined; // the next query starts a new one
    };
    worker.on('error', fail);
    worker.on('exit', (code) => fail(new Error(`metrics query worker exited (${code})`)));
    this.#worker = worker;
    return worker;
  }

  async close(): Promise<void> {
    const worker = this.#worker;
    this.#worker = undefined;
    await worker?.terminate();
  }
}
