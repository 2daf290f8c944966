// The gallery's "training data update" window: rebuilds of the whole index (load, import, resync) run one after
// another, and while the window is open predictions answer 503 and changes to the index wait for it to close.
//
// A rebuild may read first and open the window only after: a resync reads the whole store that way, so a slow or
// frozen Redis leaves predictions answered from the whole gallery the server has. A change that comes during such
// a read is applied at once and again after the rebuild, since the snapshot it reads may predate it (changes are
// idempotent: an add replaces its id, a removal of a missing id does nothing).

export class UpdateWindow<Change> {
  readonly #applyNow: (change: Change) => void;
  /** Rebuilds running or queued that opened the window: > 0 is open. */
  #open = 0;
  /** Changes that came while the window was open, applied when it closes. */
  #pending: Change[] = [];
  /** Changes applied while a rebuild reads, when one does: applied again after it. */
  #duringRead: Change[] | null = null;
  #chain: Promise<void> = Promise.resolve();

  constructor(applyNow: (change: Change) => void) {
    this.#applyNow = applyNow;
  }

  get isOpen(): boolean {
    return this.#open > 0;
  }

  /** Settles when every rebuild queued so far is done. */
  get settled(): Promise<void> {
    return this.#chain;
  }

  /** Applies a change now, or once the window closes (a rebuild would otherwise overwrite it). */
  apply(change: Change): void {
    if (this.#open > 0) {
      this.#pending.push(change);
      return;
    }
    this.#applyNow(change);
    this.#duringRead?.push(change);
  }

  /**
   * Runs `work` after every rebuild queued before it. Without `read` the window opens now (even while an earlier
   * rebuild still runs) and closes when the last queued rebuild is done; with `read`, `read` runs in its turn with
   * the window as it is, and the window opens when it is done, for `work` with what it read.
   */
  run<T>(work: (input: T) => Promise<void>, read?: () => Promise<T>): Promise<void> {
    let opened = read === undefined;
    if (opened) this.#open++;
    const turn = async () => {
      try {
        let input = undefined as T;
        if (read) {
          const during: Change[] = [];
          this.#duringRead = during;
          try {
            input = await read();
          } finally {
            this.#duringRead = null;
          }
          this.#open++;
          opened = true;
          this.#pending.unshift(...during);
        }
        await work(input);
      } finally {
        if (opened && --this.#open === 0) {
          const pending = this.#pending;
          this.#pending = [];
          for (const change of pending) this.#applyNow(change);
        }
      }
    };
    const next = this.#chain.then(turn, turn);
    this.#chain = next.catch(() => undefined);
    return next;
  }
}
