// What one client, or many, may hold through the WebSocket routes (docs/security.md, "WebSocket limits"):
//  - sockets are capped per address (an IPv6 /64 counts as one address) and in all; the cap in all never goes
//    above the process's descriptor limit (RLIMIT_NOFILE) minus a reserve, so that idle sockets cannot take the
//    descriptors new HTTPS clients need;
//  - the times after which a socket that brings nothing is closed (src/server/websocket.ts applies them).

import fs from 'node:fs';
import type { ServerConfig } from '../config.js';
import { HTTP_GUARD_DEFAULTS } from './http-guards.js';
import { parseAllowedOrigins } from './origin-check.js';

export interface WebSocketLimits {
  /** Most sockets open at once, every client together (also bounded by the descriptor limit, socketCapInAll). */
  maxSockets: number;
  /** Most sockets open at once from one address (IPv6: one /64). */
  maxSocketsPerAddress: number;
  /**
   * A socket is closed when no frame has completed for this long, counted from its last frame or answer (not
   * while the engine works on its frame); the server pings every idleTimeoutMs / 2. An answer the client has not
   * taken off the socket within idleTimeoutMs drops the connection.
   */
  idleTimeoutMs: number;
  /** A frame slower than idleTimeoutMs is still let through while it comes at least this fast (bytes/s)... */
  minFrameBytesPerSec: number;
  /** ...up to this long since the socket's last frame or answer. */
  maxFrameMs: number;
  /** After the server's close frame, the peer has this long to answer it before the TCP connection is dropped. */
  closeGraceMs: number;
}

export const WEBSOCKET_LIMIT_DEFAULTS = {
  maxSockets: 4096,
  maxSocketsPerAddress: 64,
  idleTimeoutMs: 60_000,
  // the REST body rules: --min-body-rate and --request-timeout
  minFrameBytesPerSec: HTTP_GUARD_DEFAULTS.minBodyBytesPerSec,
  maxFrameMs: HTTP_GUARD_DEFAULTS.requestTimeoutMs,
  closeGraceMs: 3_000,
} satisfies WebSocketLimits;

/** Descriptors never given to WebSockets: a quarter of the limit, at least 256 (HTTPS clients, files, the store). */
export function descriptorReserve(limit: number): number {
  return Math.max(256, Math.floor(limit / 4));
}

/** The soft RLIMIT_NOFILE of this process, from /proc/self/limits; null where it cannot be read (not Linux). */
export function descriptorLimit(limitsFile = '/proc/self/limits'): number | null {
  try {
    const m = /^Max open files\s+(\d+|unlimited)\s/m.exec(fs.readFileSync(limitsFile, 'utf8'));
    if (!m) return null;
    return m[1] === 'unlimited' ? null : Number(m[1]);
  } catch {
    return null;
  }
}

/** The cap in all that applies: the one asked for, at most the descriptor limit minus its reserve. */
export function socketCapInAll(asked: number, descriptors: number | null = descriptorLimit()): number {
  if (descriptors === null) return asked;
  return Math.max(0, Math.min(asked, descriptors - descriptorReserve(descriptors)));
}

export type SocketRefusal = 'address' | 'all';

/**
 * Counts open sockets per address and in all. One budget can be shared by several listeners (the HTTPS port and
 * the plain-HTTP port): descriptors are the process's.
 */
export class SocketBudget {
  readonly #perAddress = new Map<string, number>();
  #open = 0;

  constructor(
    readonly maxInAll: number,
    readonly maxPerAddress: number,
  ) {}

  get open(): number {
    return this.#open;
  }

  /** Takes a place for a socket from `key`, or says which cap refuses it. */
  take(key: string): SocketRefusal | null {
    if (this.#open >= this.maxInAll) return 'all';
    const n = this.#perAddress.get(key) ?? 0;
    if (n >= this.maxPerAddress) return 'address';
    this.#perAddress.set(key, n + 1);
    this.#open++;
    return null;
  }

  /** Gives back a place taken with take(key). */
  give(key: string): void {
    const n = this.#perAddress.get(key) ?? 0;
    if (n <= 1) this.#perAddress.delete(key);
    else this.#perAddress.set(key, n - 1);
    this.#open = Math.max(0, this.#open - 1);
  }
}

/** The WebSocket options of `edgecv serve`: one budget for every listener, limits and origins from the config. */
export function webSocketOptionsFromConfig(
  config: Pick<ServerConfig, 'wsMaxSockets' | 'wsMaxSocketsPerAddress' | 'wsIdleTimeout' | 'minBodyRate' | 'requestTimeout' | 'allowedOrigins'>,
): { limits: Partial<WebSocketLimits>; budget: SocketBudget; allowedOrigins: string[]; note: string } {
  const asked = config.wsMaxSockets ?? WEBSOCKET_LIMIT_DEFAULTS.maxSockets;
  const descriptors = descriptorLimit();
  const cap = socketCapInAll(asked, descriptors);
  const perAddress = config.wsMaxSocketsPerAddress ?? WEBSOCKET_LIMIT_DEFAULTS.maxSocketsPerAddress;
  const limits: Partial<WebSocketLimits> = {
    maxSockets: cap,
    maxSocketsPerAddress: perAddress,
    idleTimeoutMs: config.wsIdleTimeout,
    minFrameBytesPerSec: config.minBodyRate,
    maxFrameMs: config.requestTimeout,
  };
  const lowered = cap < asked ? ` (${asked} asked; the descriptor limit ${descriptors} keeps ${descriptors! - cap} for HTTPS and files)` : '';
  const idle = (config.wsIdleTimeout ?? WEBSOCKET_LIMIT_DEFAULTS.idleTimeoutMs) / 1000;
  return {
    limits,
    budget: new SocketBudget(cap, perAddress),
    allowedOrigins: parseAllowedOrigins(config.allowedOrigins),
    note: `WebSockets: at most ${cap} open${lowered}, ${perAddress} per address, closed after ${idle} s idle`,
  };
}
