// WebSocket routes on the HTTPS port (wss://host:8008/ws/...). A binary frame is one image; it goes through the
// same Hono app as a POST of that image to the REST route (app.fetch with a raw body), so the text frame that
// answers it is the REST route's JSON byte for byte, and the request metrics, audit line, body limit, engine
// error mapping and the 503 "Training data update in progress" window are the REST ones. Errors come back as the
// REST JSON body plus "status", and the socket stays open. A text frame is echoed (latency probe).
// One frame in flight per socket: reading pauses while a frame is being answered, so a client that sends faster
// than the server answers fills its own TCP window, never a queue here.
// Limits (src/server/websocket-limits.ts, docs/security.md): upgrades from a foreign Origin are refused (403),
// sockets are capped per address and in all (429, 503), and a socket is closed when it stays idle, trickles a
// frame, stops answering pings or stops reading its answers.
// The parts: websocket-upgrade.ts (who may open a socket), websocket-frames.ts (a socket's frames), websocket-sweep.ts
// (the idle, trickle, ping, unread-answer and close-grace rules).

import type http from 'node:http';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { WebSocketServer } from 'ws';
import type { HostCheck } from './host-check.js';
import { isWebSocketUpgrade } from './http-guards.js';
import { serveSocket, type AppFetch, type FrameListener } from './websocket-frames.js';
import { SocketBudget, socketCapInAll, WEBSOCKET_LIMIT_DEFAULTS, type WebSocketLimits } from './websocket-limits.js';
import { CLOSE_GOING_AWAY, startSweeper, type SocketState } from './websocket-sweep.js';
import { admitUpgrade, answerIgnoringUpgrade, rejectHandshake, type WebSocketCounts } from './websocket-upgrade.js';

export { replyText } from './websocket-frames.js';
export { CLOSE_GOING_AWAY } from './websocket-sweep.js';
export { WS_ROUTES, type WebSocketCounts } from './websocket-upgrade.js';

export interface WebSocketRoutesOptions {
  /** The app's fetch (createApp(...).fetch). */
  fetch: AppFetch;
  /** Largest frame (bytes): the body limit. A bigger frame closes the socket with 1009 (Message Too Big). */
  maxPayload: number;
  /** Caps and times; WEBSOCKET_LIMIT_DEFAULTS where left out. */
  limits?: Partial<WebSocketLimits>;
  /**
   * The socket counts, to share between listeners (the HTTPS and the plain port take descriptors from one
   * process); by default one of this listener's own, from `limits`.
   */
  budget?: SocketBudget;
  /**
   * Origins whose pages may open sockets besides the server's own (parseAllowedOrigins of --allowed-origins); a
   * client that sends no Origin (not a browser) always may.
   */
  allowedOrigins?: readonly string[];
  /** Which Host names this server answers for (host-check.ts); without it, any. */
  hosts?: HostCheck;
}

export interface WebSocketRoutes {
  /** Open sockets, the most frames one socket has held unanswered (the one in flight included), refusals and cuts. */
  stats(): { open: number; maxPendingFrames: number; maxSockets: number } & WebSocketCounts;
  /** Closes every socket (1001 Going Away, with `reason`), dropping those that do not close within graceMs. */
  close(graceMs?: number, reason?: string): Promise<void>;
}

/** Serves the WebSocket routes on `server`'s upgrade requests. */
export function attachWebSocketRoutes(server: http.Server, opts: WebSocketRoutesOptions): WebSocketRoutes {
  const limits: WebSocketLimits = { ...WEBSOCKET_LIMIT_DEFAULTS, ...definedOnly(opts.limits ?? {}) };
  const budget = opts.budget ?? new SocketBudget(socketCapInAll(limits.maxSockets), limits.maxSocketsPerAddress);
  const wss = new WebSocketServer({ noServer: true, maxPayload: opts.maxPayload });
  wss.on('wsClientError', rejectHandshake);
  const counts: WebSocketCounts = { refusedOrigin: 0, refusedPerAddress: 0, refusedInAll: 0, closedIdle: 0, closedUnread: 0 };
  const gate = { budget, counts, allowedOrigins: opts.allowedOrigins ?? [], hosts: opts.hosts };
  let maxPendingFrames = 0;
  const listener: FrameListener = {
    fetch: opts.fetch,
    states: new Set<SocketState>(),
    notePending: (frames) => {
      maxPendingFrames = Math.max(maxPendingFrames, frames);
    },
  };

  const onUpgrade = (req: http.IncomingMessage, socket: Duplex, head: Buffer) => {
    if (!isWebSocketUpgrade(req)) {
      answerIgnoringUpgrade(server, req, socket as Socket, head);
      return;
    }
    const target = admitUpgrade(gate, req, socket);
    if (target !== null) wss.handleUpgrade(req, socket, head, (ws) => serveSocket(listener, ws, req, socket as Socket, target));
  };
  // One timer for every socket of this listener: the idle, trickle, ping, unread-answer and close-grace rules.
  const sweeper = startSweeper(listener.states, limits, counts);

  server.on('upgrade', onUpgrade);
  return {
    stats: () => ({ open: wss.clients.size, maxPendingFrames, maxSockets: budget.maxInAll, ...counts }),
    close: (graceMs = 1000, reason = 'server shutting down') =>
      new Promise<void>((resolve) => {
        server.off('upgrade', onUpgrade);
        clearInterval(sweeper);
        for (const ws of wss.clients) ws.close(CLOSE_GOING_AWAY, closeReason(reason));
        const timer = setTimeout(() => {
          for (const ws of wss.clients) ws.terminate();
        }, graceMs);
        timer.unref();
        wss.close(() => {
          clearTimeout(timer);
          resolve();
        });
      }),
  };
}

/** A close frame's reason is at most 123 bytes (ws throws on more). */
function closeReason(reason: string): string {
  const bytes = Buffer.from(reason);
  return bytes.length <= 123
    ? reason
    : bytes
        .subarray(0, 123)
        .toString()
        .replace(/\uFFFD+$/, '');
}

function definedOnly<T extends object>(o: T): Partial<T> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<T>;
}
