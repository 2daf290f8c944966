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


import http from 'node:http';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { WebSocketServer, type RawData, type WebSocket } from 'ws';
import { foreignHostMessage, type HostCheck } from './host-check.js';
import { isAllowedOrigin } from './origin-check.js';
import { observeWebSocketConnection, observeWebSocketCut, observeWebSocketRefused } from './prometheus.js';
import { addressGroup } from '../address-group.js';
import { isWebSocketUpgrade } from './http-guards.js';
import { SocketBudget, socketCapInAll, WEBSOCKET_LIMIT_DEFAULTS, type WebSocketLimits } from './websocket-limits.js';

/** WebSocket path (without trailing slash) -> the REST route it answers like. */
export const WS_ROUTES: Readonly<Record<string, string>> = {
  '/ws/detector/detect': '/detector/detect/',
  '/ws/recognizer/predict': '/recognizer/predict/',
  '/ws/pose/detect': '/pose/detect/',
  '/ws/openpose/detect': '/openpose/detect/',
  '/ws/object/detect': '/object/detect/',
};

/** Headers of the upgrade request that travel with every frame (keys for guarded routes, client identification). */
const FORWARDED_HEADERS = ['authorization', 'x-api-key', 'user-agent', 'x-forwarded-for'];

/** Close code (RFC 6455 7.4.1) of a socket the server closes: idle, or the server shutting down. */
export const CLOSE_GOING_AWAY = 1001;

export interface WebSocketRoutesOptions {
  /** The app's fetch (createApp(...).fetch). */
  fetch: (request: Request, env: unknown) => Response | Promise<Response>;
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

/** Why an upgrade was refused, or a socket closed by the server. */
export interface WebSocketCounts {
  refusedOrigin: number;
  refusedPerAddress: number;
  refusedInAll: number;
  closedIdle: number;
  closedUnread: number;
}

export interface WebSocketRoutes {
  /** Open sockets, the most frames one socket has held unanswered (the one in flight included), refusals and cuts. */
  stats(): { open: number; maxPendingFrames: number; maxSockets: number } & WebSocketCounts;
  /** Closes every socket (1001 Going Away, with `reason`), dropping those that do not close within graceMs. */
  close(graceMs?: number, reason?: string): Promise<void>;
}

/** The text frame answering one REST response: its body as is for a 2xx, else the JSON error body plus "status". */
export async function replyText(res: Response): Promise<string> {
  const text = await res.text();
  if (res.ok) return text;
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    body = undefined;
  }
  // a plain-text error (the 501 of --pose-requires-gpu) is wrapped in the JSON error shape
  const json = typeof body === 'object' && body !== null && !Array.isArray(body) ? body : { success: 'false', error: text };
  return JSON.stringify({ ...json, status: res.status });
}

function rejectUpgrade(socket: Duplex, status: number, reason: string, message: string, extraHeaders = ''): void {
  const body = JSON.stringify({ success: 'false', error: message });
  socket.end(
    `HTTP/1.1 ${status} ${reason}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n` +
      `${extraHeaders}Connection: close\r\n\r\n${body}`,
  );
  // a client that does not read the refusal must not keep the descriptor
  setTimeout(() => socket.destroy(), 1000).unref();
}

/**
 * A request that asks to upgrade to anything but WebSocket (curl --http2 on http:// asks for h2c). HTTP/1.1 lets a
 * server ignore the wish, but Node hands every upgrade request to the 'upgrade' listener once there is one, and
 * its parser has let go of the socket and of the body: the request is answered here as the plain request it also
 * is, through the server's own request listeners (guards, app), on a copy whose body (Content-Length only) is what
 * came with the headers, then the socket's data. The connection closes after the answer.
 */
function answerIgnoringUpgrade(server: http.Server, req: http.IncomingMessage, socket: Socket, head: Buffer): void {
  if (req.headers['transfer-encoding'] !== undefined) {
    rejectUpgrade(socket, 400, 'Bad Request', `upgrading to ${JSON.stringify(req.headers.upgrade)} is not supported; send the request without Upgrade`);
    return;
  }
  const copy = new http.IncomingMessage(socket);
  Object.assign(copy, {
    method: req.method,
    url: req.url,
    headers: req.headers,
    rawHeaders: req.rawHeaders,
    httpVersion: req.httpVersion,
    httpVersionMajor: req.httpVersionMajor,
    httpVersionMinor: req.httpVersionMinor,
  });
  copy._read = () => socket.resume();
  let left = Number(req.headers['content-length'] ?? 0) || 0;
  const feed = (chunk: Buffer) => {
    const part = chunk.subarray(0, left);
    left -= part.length;
    if (part.length > 0 && !copy.push(part)) socket.pause();
    if (left === 0) {
      socket.off('data', feed);
      copy.complete = true;
      copy.push(null);
    }
  };
  const res = new http.ServerResponse(copy);
  res.shouldKeepAlive = false;
  res.assignSocket(socket);
  res.once('finish', () => {
    res.detachSocket(socket);
    socket.end();
  });
  socket.on('data', feed);
  feed(head);
  server.emit('request', copy, res);
}

function frameBytes(data: RawData): Buffer {
  if (Buffer.isBuffer(data)) return data;
  return Array.isArray(data) ? Buffer.concat(data) : Buffer.from(data);
}

/**
 * Where a socket is: waiting for a frame from the client (idle and ping rules), answering one (the engine's time,
 * no rule), writing the answer (the client must read it within the idle timeout), or closing (the peer must
 * answer the close frame within closeGraceMs).
 */
type Phase = 'waiting' | 'answering' | 'writing' | 'closing';

interface SocketState {
  ws: WebSocket;
  socket: Socket;
  phase: Phase;
  /** When the phase began, and the socket's bytes read then. */
  since: number;
  bytesAtSince: number;
  lastPingAt: number;
}

/** Serves the WebSocket routes on `server`'s upgrade requests. */
export function attachWebSocketRoutes(server: http.Server, opts: WebSocketRoutesOptions): WebSocketRoutes {
  const limits: WebSocketLimits = { ...WEBSOCKET_LIMIT_DEFAULTS, ...definedOnly(opts.limits ?? {}) };
  const budget = opts.budget ?? new SocketBudget(socketCapInAll(limits.maxSockets), limits.maxSocketsPerAddress);
  const wss = new WebSocketServer({ noServer: true, maxPayload: opts.maxPayload });
  // A handshake ws refuses (method, Upgrade, key, version, protocol or extension headers) gets the JSON error too.
  wss.on('wsClientError', (err: Error, socket: Duplex) => {
    const method = /method/i.test(err.message);
    const version = /version/i.test(err.message) ? 'Sec-WebSocket-Version: 13, 8\r\n' : '';
    rejectUpgrade(socket, method ? 405 : 400, method ? 'Method Not Allowed' : 'Bad Request', `WebSocket handshake refused: ${err.message}`, version);
  });
  const states = new Set<SocketState>();
  const counts: WebSocketCounts = { refusedOrigin: 0, refusedPerAddress: 0, refusedInAll: 0, closedIdle: 0, closedUnread: 0 };
  let maxPendingFrames = 0;

  const onUpgrade = (req: http.IncomingMessage, socket: Duplex, head: Buffer) => {
    if (!isWebSocketUpgrade(req)) {
      answerIgnoringUpgrade(server, req, socket as Socket, head);
      return;
    }
    const url = new URL(req.url ?? '/', 'https://localhost');
    const restPath = WS_ROUTES[url.pathname.replace(/\/+$/, '')];
    if (!restPath) {
      rejectUpgrade(socket, 404, 'Not Found', `no WebSocket route at ${url.pathname}; routes: ${Object.keys(WS_ROUTES).join(', ')}`);
      return;
    }
    // a DNS-rebinding page's socket names its own host
    if (opts.hosts && !opts.hosts(req.headers.host)) {
      rejectUpgrade(socket, 421, 'Misdirected Request', foreignHostMessage(req.headers.host));
      return;
    }
    // Browsers let any page open a WebSocket anywhere; the Origin header is what says whose page it is.
    if (!isAllowedOrigin(req.headers.origin, req.headers.host, opts.allowedOrigins ?? [])) {
      counts.refusedOrigin++;
      observeWebSocketRefused('origin');
      rejectUpgrade(socket, 403, 'Forbidden', `WebSocket upgrade from origin ${JSON.stringify(req.headers.origin)} refused: only this server's own pages and --allowed-origins may open sockets`);
      return;
    }
    const key = addressGroup(req.socket.remoteAddress);
    const refused = budget.take(key);
    if (refused === 'address') {
      counts.refusedPerAddress++;
      observeWebSocketRefused('address');
      rejectUpgrade(socket, 429, 'Too Many Requests', `too many WebSocket sockets from this address (at most ${budget.maxPerAddress})`, 'Retry-After: 10\r\n');
      return;
    }
    if (refused === 'all') {
      counts.refusedInAll++;
      observeWebSocketRefused('all');
      rejectUpgrade(socket, 503, 'Service Unavailable', `too many WebSocket sockets open (at most ${budget.maxInAll})`, 'Retry-After: 10\r\n');
      return;
    }
    // the place is the socket's until its descriptor is closed, whatever becomes of the handshake
    socket.once('close', () => budget.give(key));
    wss.handleUpgrade(req, socket, head, (ws) => serveSocket(ws, req, socket as Socket, restPath + url.search));
  };

  const enter = (s: SocketState, phase: Phase) => {
    s.phase = phase;
    s.since = Date.now();
    s.bytesAtSince = s.socket.bytesRead;
  };

  /** Sends a close frame; the sweep drops the connection if the peer does not answer it within closeGraceMs. */
  const closeSocket = (s: SocketState, code: number, reason: string) => {
    if (s.phase === 'closing') return;
    enter(s, 'closing');
    s.ws.close(code, reason);
  };

  // One timer for every socket of this listener: the idle, trickle, ping, unread-answer and close-grace rules.
  const sweep = () => {
    const now = Date.now();
    const pingEvery = limits.idleTimeoutMs / 2;
    for (const s of states) {
      const elapsed = now - s.since;
      if (s.phase === 'closing') {
        if (elapsed > limits.closeGraceMs) s.ws.terminate();
      } else if (s.phase === 'writing') {
        // The answer has not reached the kernel for that long: the client does not read (its unread answers would
        // otherwise hold both sides' socket buffers, megabytes, for as long as it likes). No close frame can get
        // through either: drop it.
        if (elapsed > limits.idleTimeoutMs) {
          counts.closedUnread++;
          observeWebSocketCut('unread');
          s.ws.terminate();
        }
      } else if (s.phase === 'waiting') {
        if (elapsed > limits.idleTimeoutMs) {
          const bytesPerSec = ((s.socket.bytesRead - s.bytesAtSince) * 1000) / elapsed;
          if (elapsed > limits.maxFrameMs || bytesPerSec < limits.minFrameBytesPerSec) {
            counts.closedIdle++;
            observeWebSocketCut('idle');
            closeSocket(s, CLOSE_GOING_AWAY, `idle timeout: no complete frame in ${Math.round(limits.idleTimeoutMs / 1000)} s`);
            continue;
          }
        }
        // A liveness probe, and traffic for the NAT and proxies on the way. No rule hangs on the pong: a client
        // sending one large frame cannot answer before the frame ends; a peer gone silent is closed as idle.
        if (now - s.lastPingAt >= pingEvery) {
          s.lastPingAt = now;
          s.ws.ping();
        }
      }
    }
  };
  const sweeper = setInterval(sweep, Math.max(50, Math.min(1000, limits.idleTimeoutMs / 4)));
  sweeper.unref();

  const serveSocket = (ws: WebSocket, upgrade: http.IncomingMessage, socket: Socket, target: string) => {
    const now = Date.now();
    const state: SocketState = { ws, socket, phase: 'waiting', since: now, bytesAtSince: socket.bytesRead, lastPingAt: now };
    states.add(state);
    observeWebSocketConnection(1);
    ws.once('close', () => {
      states.delete(state);
      observeWebSocketConnection(-1);
    });
    // A protocol error (1009 too big, a bad frame): ws has queued the close frame and ends the connection once it
    // is written. Tearing the socket down here would drop that frame (the client would see 1006), so the sweep
    // only drops a connection whose peer does not finish the close within closeGraceMs.
    ws.on('error', () => {
      if (state.phase !== 'closing') enter(state, 'closing');
    });
    const headers: Record<string, string> = { 'content-type': 'application/octet-stream' };
    for (const name of FORWARDED_HEADERS) {
      const value = upgrade.headers[name];
      if (typeof value === 'string') headers[name] = value;
    }
    // Frames ws has already parsed while reading was pausing: at most one socket read's worth.
    const pending: { bytes: Buffer; binary: boolean }[] = [];
    let pumping = false;
    let inFlight = 0;

    const answer = async (bytes: Buffer): Promise<string> => {
      const request = new Request(new URL(target, 'https://localhost'), {
        method: 'POST',
        headers: { ...headers, 'content-length': String(bytes.length) },
        body: bytes,
      });
      try {
        // env.incoming: the upgrade request, whose socket gives the client address to the audit line
        return await replyText(await opts.fetch(request, { incoming: upgrade }));
      } catch (e) {
        console.error('[edgecv] WebSocket frame failed:', e);
        return JSON.stringify({ success: 'false', error: 'internal server error', status: 500 });
      }
    };

    // Resolves once the answer is written to the socket: until then nothing more is read, so the unread answers
    // a socket holds are one at most.
    const send = (data: Buffer | string) =>
      new Promise<void>((resolve) => {
        if (state.phase !== 'closing') enter(state, 'writing');
        ws.send(data, { binary: false }, () => resolve());
      });

    const pump = async () => {
      if (pumping) return;
      pumping = true;
      try {
        while (pending.length > 0 && ws.readyState === ws.OPEN) {
          const frame = pending.shift()!;
          inFlight = 1;
          if (state.phase !== 'closing') enter(state, 'answering');
          await send(frame.binary ? await answer(frame.bytes) : frame.bytes);
          inFlight = 0;
        }
      } finally {
        pumping = false;
        if (ws.readyState === ws.OPEN && state.phase !== 'closing') {
          enter(state, 'waiting');
          ws.resume();
        }
      }
    };

    ws.on('message', (data, isBinary) => {
      ws.pause();
      pending.push({ bytes: frameBytes(data), binary: isBinary });
      maxPendingFrames = Math.max(maxPendingFrames, pending.length + inFlight);
      void pump();
    });
  };

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
  return bytes.length <= 123 ? reason : bytes.subarray(0, 123).toString().replace(/\uFFFD+$/, '');
}

function definedOnly<T extends object>(o: T): Partial<T> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<T>;
}
