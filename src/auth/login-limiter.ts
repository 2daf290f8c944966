// Failed-login rate limiting. A try is counted before its password is checked (tries sent at once cannot all
// pass the limit) and forgotten again only when it succeeds. Three counts, each within a sliding window:
//   - one username from one address (perUser),
//   - one address, every username together (perAddress); IPv6 addresses count by their /64, which one client holds,
//   - one username, every address together (perUsername): guesses spread over many addresses stop too.
// The last one lets an attacker lock an account out for one window; that is the price of stopping a
// distributed guess, and the answer's Retry-After says how long.

import { addressGroup } from '../address-group.js';

export interface LimiterOptions {
  /** Failures allowed per (address, username) within the window. */
  perUser?: number;
  /** Failures allowed per address (IPv6: per /64), all usernames together, within the window. */
  perAddress?: number;
  /** Failures allowed per username, all addresses together, within the window. */
  perUsername?: number;
  windowMs?: number;
  /** Keys tracked at most; the oldest are forgotten beyond that, so memory stays bounded. */
  maxKeys?: number;
}

export const LOGIN_LIMITER_DEFAULTS = { perUser: 5, perAddress: 20, perUsername: 20, windowMs: 15 * 60_000, maxKeys: 10_000 } as const;

/** A try that was let through and counted; `succeeded()` takes it back when the password was right. */
export interface LoginAttempt {
  succeeded(): void;
}

export type LoginAdmission = { attempt: LoginAttempt; retryAfterSeconds?: undefined } | { attempt?: undefined; retryAfterSeconds: number };

export class FailedLoginLimiter {
  readonly perUser: number;
  readonly perAddress: number;
  readonly perUsername: number;
  readonly windowMs: number;
  readonly maxKeys: number;
  /** key -> try times (ms), oldest first, at most the key's limit of them. Map order = last use, for eviction. */
  readonly #tries = new Map<string, number[]>();

  constructor(opts: LimiterOptions = {}) {
    this.perUser = opts.perUser ?? LOGIN_LIMITER_DEFAULTS.perUser;
    this.perAddress = opts.perAddress ?? LOGIN_LIMITER_DEFAULTS.perAddress;
    this.perUsername = opts.perUsername ?? LOGIN_LIMITER_DEFAULTS.perUsername;
    this.windowMs = opts.windowMs ?? LOGIN_LIMITER_DEFAULTS.windowMs;
    this.maxKeys = opts.maxKeys ?? LOGIN_LIMITER_DEFAULTS.maxKeys;
  }

  /** Keys currently tracked (for tests and stats). */
  get size(): number {
    return this.#tries.size;
  }

  /**
   * Lets a login try through and counts it, or says how many seconds to wait. Synchronous: of tries sent at
   * once, only as many as the limits allow get an attempt.
   */
  admit(address: string, username: string, now = Date.now()): LoginAdmission {
    const limits = this.#limits(address, username);
    let wait = 0;
    for (const [key, limit] of limits) {
      const times = this.#recent(key, now);
      if (times.length >= limit) wait = Math.max(wait, Math.ceil((times[times.length - limit]! + this.windowMs - now) / 1000));
    }
    if (wait > 0) return { retryAfterSeconds: Math.max(1, wait) };
    for (const [key, limit] of limits) {
      const times = this.#tries.get(key) ?? [];
      times.push(now);
      if (times.length > limit) times.splice(0, times.length - limit);
      this.#tries.delete(key);
      this.#tries.set(key, times);
    }
    while (this.#tries.size > this.maxKeys) this.#tries.delete(this.#tries.keys().next().value!);
    let done = false;
    return {
      attempt: {
        succeeded: () => {
          if (done) return;
          done = true;
          // A right password clears that user's failures from that address; the other counts lose this try only.
          this.#tries.delete(limits[0][0]);
          for (const [key] of limits.slice(1)) {
            const times = this.#tries.get(key);
            const i = times?.lastIndexOf(now) ?? -1;
            if (i >= 0) times!.splice(i, 1);
            if (times?.length === 0) this.#tries.delete(key);
          }
        },
      },
    };
  }

  #limits(address: string, username: string): [[string, number], ...[string, number][]] {
    const group = addressGroup(address);
    return [
      [`u\u0000${group}\u0000${username}`, this.perUser],
      [`a\u0000${group}`, this.perAddress],
      [`n\u0000${username}`, this.perUsername],
    ];
  }

  #recent(key: string, now: number): number[] {
    const times = (this.#tries.get(key) ?? []).filter((t) => now - t < this.windowMs);
    if (times.length === 0) this.#tries.delete(key);
    else this.#tries.set(key, times);
    return times;
  }
}
