// Fair shares of the engine's workers between clients (issue 48, item 6). The addon's own queue is first come,
// first served: one client sending large photos on many connections made everyone else wait behind them. Here each
// client (client-identity.ts) has its own queue, and at most `slots` jobs (the engine's workers) are in the addon at
// once; the next job is picked by deficit round robin over the clients with work waiting, a job's cost being its
// pixel count, so that a client of 12-megapixel photos gets the workers' time, not their turns, it is due, and
// waits for itself. A worker is also kept back from large images while more than one client is about (RESERVE),
// so that a small image never waits for a large one of somebody else's to finish.

import { EngineError } from '../engine/errors.js';

/** Deficit added to a client's account per round: a 1-megapixel image's worth. */
export const QUANTUM = 1_000_000;
/** An image above this many pixels (about 2 MP: 1920x1080 is 2.07) is large: it may not take the last worker. */
export const LARGE_PIXELS = 2_100_000;
/** How long after its last job a client counts as "about" for the reserve. */
export const RESERVE_WINDOW_MS = 10_000;

interface Job {
  cost: number;
  start: () => void;
}

interface ClientQueue {
  key: string;
  jobs: Job[];
  deficit: number;
  /** Its turn has begun (its QUANTUM added): it may start several jobs in one turn. */
  visited: boolean;
}

export interface FairSchedulerOptions {
  /** Jobs in the engine at once: its workers. */
  slots: number;
  /**
   * Jobs waiting here, all clients, before a client that already has one waiting is refused (OVERLOADED); a client
   * with none waiting is admitted up to twice that, so that one client filling the queue cannot shut out others.
   */
  queueLimit: number;
  /** The clock (ms), for the reserve's window. */
  now?: () => number;
}

export class FairScheduler {
  readonly #slots: number;
  readonly #queueLimit: number;
  readonly #now: () => number;
  /** Clients with jobs waiting, in round-robin order: the head is served next. */
  readonly #active: ClientQueue[] = [];
  readonly #byKey = new Map<string, ClientQueue>();
  /** When each client last sent a job (pruned past RESERVE_WINDOW_MS). */
  readonly #lastSeen = new Map<string, number>();
  #running = 0;
  #runningLarge = 0;
  #waiting = 0;

  constructor(opts: FairSchedulerOptions) {
    this.#slots = Math.max(1, opts.slots);
    this.#queueLimit = opts.queueLimit;
    this.#now = opts.now ?? (() => performance.now());
  }

  /** Jobs waiting here for a worker (not yet in the engine). */
  get waiting(): number {
    return this.#waiting;
  }

  get running(): number {
    return this.#running;
  }

  /** Runs `job` when `client`'s turn comes; rejects with OVERLOADED (not run) when the queue is full. */
  run<T>(client: string, pixels: number, job: () => Promise<T>): Promise<T> {
    this.#lastSeen.set(client, this.#now());
    let queue = this.#byKey.get(client);
    const own = queue?.jobs.length ?? 0;
    if (this.#waiting >= this.#queueLimit * 2 || (this.#waiting >= this.#queueLimit && own > 0)) {
      return Promise.reject(new EngineError('OVERLOADED', `${this.#waiting} images are waiting for a worker`));
    }
    const cost = Math.max(1, pixels);
    return new Promise<T>((resolve, reject) => {
      const start = () => {
        const large = cost > LARGE_PIXELS;
        this.#running++;
        if (large) this.#runningLarge++;
        const done = () => {
          this.#running--;
          if (large) this.#runningLarge--;
          this.#dispatch();
        };
        let running: Promise<T>;
        try {
          running = job();
        } catch (e) {
          running = Promise.reject(e as Error);
        }
        running.then(
          (v) => (done(), resolve(v)),
          (e: unknown) => (done(), reject(e as Error)),
        );
      };
      if (!queue) {
        queue = { key: client, jobs: [], deficit: 0, visited: false };
        this.#byKey.set(client, queue);
        this.#active.push(queue);
      }
      queue.jobs.push({ cost, start });
      this.#waiting++;
      this.#dispatch();
    });
  }

  /** Whether more than one client sent a job within the reserve's window. */
  #crowded(): boolean {
    const since = this.#now() - RESERVE_WINDOW_MS;
    for (const [key, at] of this.#lastSeen) if (at < since) this.#lastSeen.delete(key);
    return this.#lastSeen.size > 1;
  }

  /** Starts jobs while a worker is free: deficit round robin, large images kept off the reserved worker. */
  #dispatch(): void {
    while (this.#running < this.#slots && this.#active.length > 0) {
      const largeAllowed = this.#slots === 1 || this.#runningLarge < this.#slots - 1 || !this.#crowded();
      const ok = (q: ClientQueue) => largeAllowed || q.jobs[0]!.cost <= LARGE_PIXELS;
      // none may start now: wait for a worker to finish
      if (!this.#active.some(ok)) return;
      // Bounded: every turn of an eligible client adds QUANTUM to its deficit, so some job is affordable within
      // (largest cost / QUANTUM) rounds.
      for (;;) {
        const q = this.#active[0]!;
        if (!ok(q)) {
          this.#endTurn(q); // no credit while it cannot start anything
          continue;
        }
        if (!q.visited) {
          q.deficit += QUANTUM;
          q.visited = true;
        }
        const job = q.jobs[0]!;
        if (job.cost > q.deficit) {
          this.#endTurn(q);
          continue;
        }
        q.jobs.shift();
        q.deficit -= job.cost;
        this.#waiting--;
        if (q.jobs.length === 0) {
          // an idle client keeps no credit (deficit round robin)
          this.#active.shift();
          this.#byKey.delete(q.key);
        }
        job.start();
        break;
      }
    }
  }

  /** The head client's turn ends: the next one's begins. */
  #endTurn(q: ClientQueue): void {
    q.visited = false;
    this.#active.push(this.#active.shift()!);
  }
}
