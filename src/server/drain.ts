// The server's shutdown state, shared by the readiness route (it fails from the first moment of a drain) and the
// listeners (every answer from then on says Connection: close). serve.ts starts the drain on SIGTERM/SIGINT.

/** How long a drain waits for requests in flight before it drops them (fits Kubernetes' default grace of 30 s). */
export const DEFAULT_DRAIN_TIMEOUT_MS = 25_000;
/** How long the listener keeps accepting after readiness fails, so a balancer's health check sees it first. */
export const DEFAULT_DRAIN_DELAY_MS = 0;

export class DrainState {
  #since: number | null = null;
  readonly #listeners: (() => void)[] = [];

  /** True from the first signal on. */
  get draining(): boolean {
    return this.#since !== null;
  }

  /** Milliseconds since the drain began (null: not draining). */
  get drainingForMs(): number | null {
    return this.#since === null ? null : Date.now() - this.#since;
  }

  /** Starts the drain (idempotent) and tells every listener. */
  begin(): void {
    if (this.#since !== null) return;
    this.#since = Date.now();
    for (const listener of this.#listeners) listener();
  }

  /** Calls `listener` when the drain begins (at once if it has). */
  onDrain(listener: () => void): void {
    if (this.#since !== null) listener();
    else this.#listeners.push(listener);
  }
}
