// Failed-login rate limiting: after too many failures for one (client address, username) pair, or from one
// client address in all, logins from there are refused for a while, before any password is checked.

export interface LimiterOptions {
  /** Failures allowed per (address, username) within the window. */
  perUser?: number;
  /** Failures allowed per address, all usernames together, within the window. */
  perAddress?: number;
  windowMs?: number;
  /** Keys tracked at most; the oldest are forgotten beyond that, so memory stays bounded. */
  maxKeys?: number;
}

export class FailedLoginLimiter {
  readonly perUser: number;
  readonly perAddress: number;
  readonly windowMs: number;
  readonly maxKeys: number;
  /** key -> failure times (ms), oldest first. Map order = insertion order, used for eviction. */
  readonly #failures = new Map<string, number[]>();

  constructor(opts: LimiterOptions = {}) {
    this.perUser = opts.perUser ?? 5;
    this.perAddress = opts.perAddress ?? 20;
    this.windowMs = opts.windowMs ?? 15 * 60_000;
    this.maxKeys = opts.maxKeys ?? 10_000;
  }

  /** Seconds until a login from `address` as `username` may be tried again; 0 when it may now. */
  retryAfter(address: string, username: string, now = Date.now()): number {
    const wait = (key: string, limit: number) => {
      const times = this.#recent(key, now);
      return times.length < limit ? 0 : Math.ceil((times[times.length - limit]! + this.windowMs - now) / 1000);
    };
    return Math.max(wait(userKey(address, username), this.perUser), wait(addressKey(address), this.perAddress));
  }

  failed(address: string, username: string, now = Date.now()): void {
    for (const key of [userKey(address, username), addressKey(address)]) {
      const times = this.#recent(key, now);
      times.push(now);
      this.#failures.delete(key);
      this.#failures.set(key, times);
    }
    while (this.#failures.size > this.maxKeys) this.#failures.delete(this.#failures.keys().next().value!);
  }

  /** A success clears that user's failures from that address (not the address's total). */
  succeeded(address: string, username: string): void {
    this.#failures.delete(userKey(address, username));
  }

  #recent(key: string, now: number): number[] {
    const times = (this.#failures.get(key) ?? []).filter((t) => now - t < this.windowMs);
    if (times.length === 0) this.#failures.delete(key);
    else this.#failures.set(key, times);
    return times;
  }
}

const userKey = (address: string, username: string) => `u\u0000${address}\u0000${username}`;
const addressKey = (address: string) => `a\u0000${address}`;
