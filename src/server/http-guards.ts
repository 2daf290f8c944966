// Guards on the Node HTTPS server, for what happens before (or instead of) Hono seeing a request:
//  - requests Node's parser refuses (bad Content-Length or chunking, unknown method, headers too large, a
//    timeout) get the usual JSON error with a tracid, a Prometheus count and an audit line, not a bare
//    status line ('clientError');
//  - a Content-Length over the body limit is refused before any byte of the body is read, also when the
//    client sent `Expect: 100-continue` (no 100 Continue first), and the rest of the body is read and
//    dropped for a while so that a client still uploading sees the 413 instead of a reset;
//  - a missing Host header gets a JSON 400 (Node's own check answers a bare 400); an IP-literal Host is given
//    its canonical form (host-literal.ts), which @hono/node-server requires;
//  - slow clients are cut: headers and the TLS handshake within seconds, a body that arrives slower than
//    a minimum rate (after a grace period), and any request after a total time.

import type http from 'node:http';
import type { IncomingMessage, RequestListener, ServerResponse } from 'node:http';
import type https from 'node:https';
import type { Socket } from 'node:net';
import type { AuditLog } from '../audit/audit-log.js';
import { errorBody } from './errors.js';
import { canonicalIpHost } from './host-literal.js';
import { observeHttpRequest } from './prometheus.js';
import { newTraceId, TRACE_HEADER, traceIdOf } from './request-trace.js';
import { SECURITY_HEADERS } from './security-headers.js';

export interface HttpGuardOptions {
  /** Largest request body in bytes. */
  bodyLimit: number;
  audit?: AuditLog;
  /** Headers must be complete within this many ms of the connection's first request byte. */
  headersTimeoutMs: number;
  /** A whole request (headers and body) must arrive within this many ms. */
  requestTimeoutMs: number;
  /** After bodyGraceMs, a body must have come at least this fast on average (bytes per second). */
  minBodyBytesPerSec: number;
  bodyGraceMs: number;
  /** After an early reject, the rest of the body is read and dropped for at most this long. */
  lingerMs: number;
}

export const HTTP_GUARD_DEFAULTS = {
  headersTimeoutMs: 10_000,
  handshakeTimeoutMs: 10_000,
  requestTimeoutMs: 120_000,
  minBodyBytesPerSec: 8 * 1024,
  bodyGraceMs: 5_000,
  lingerMs: 10_000,
} as const;

/** At most this much of a refused body is read and dropped (as @hono/node-server does after an answer). */
const MAX_LINGER_BYTES = 64 * 1024 * 1024;

/** Route label (Prometheus and audit) of answers given before routing. */
export const UNROUTED = 'unrouted';

/** Requests these guards cut after the app had them: why, for the app's answer (408 slow, 400 malformed). */
const cutRequests = new WeakMap<IncomingMessage, { status: 400 | 408; message: string }>();

export function whyCut(incoming: IncomingMessage): { status: 400 | 408; message: string } | undefined {
  return cutRequests.get(incoming);
}

export function bodyTooLargeMessage(limit: number): string {
  return `request body larger than the limit of ${limit} bytes`;
}

function clientOf(socket: Socket): string {
  const a = socket.remoteAddress ?? '';
  return a.startsWith('::ffff:') ? a.slice(7) : a;
}

function record(opts: HttpGuardOptions, tracid: string, method: string, path: string, status: number, client: string): void {
  observeHttpRequest(method, UNROUTED, status, 0);
  opts.audit?.write({ tracid, method, route: UNROUTED, path, status, durationMs: 0, client, user: null });
}

/** Answers a request Hono never sees, then reads and drops its body for at most lingerMs. */
function answerEarly(req: IncomingMessage, res: ServerResponse, status: number, message: string, opts: HttpGuardOptions, close = false): void {
  const tracid = newTraceId();
  const body = JSON.stringify(errorBody(message));
  res.writeHead(status, {
    'Content-Type': 'application/json',
    'Content-Length': Buffer.byteLength(body),
    [TRACE_HEADER]: tracid,
    ...SECURITY_HEADERS,
    ...(close ? { Connection: 'close' } : {}),
  });
  res.end(body);
  // The unread body is read and dropped, the connection kept: bound how long and how much that may take.
  const socket = req.socket;
  const timer = setTimeout(() => socket.destroy(), opts.lingerMs);
  timer.unref();
  let dropped = 0;
  req.on('data', (chunk: Buffer) => {
    dropped += chunk.length;
    if (dropped > MAX_LINGER_BYTES) socket.destroy();
  });
  req.once('end', () => clearTimeout(timer));
  req.once('close', () => clearTimeout(timer));
  record(opts, tracid, req.method ?? '', (req.url ?? '').split('?', 1)[0]!, status, clientOf(socket));
}

const lingering = new WeakSet<Socket>();

/**
 * Makes Node's close after a last answer (a client's `Connection: close`, or ours) a lingering close:
 * the answer is written and the sending side shut (FIN), then what the client still sends is read and dropped
 * until it closes, for at most lingerMs and MAX_LINGER_BYTES. Destroying the socket at once with a body still
 * arriving makes the kernel reset the connection, and the client lost the early 413 to EPIPE/ECONNRESET.
 */
function lingerOnClose(socket: Socket, opts: HttpGuardOptions): void {
  if (lingering.has(socket)) return;
  lingering.add(socket);
  socket.destroySoon = function lingeringClose(this: Socket) {
    if (this.destroyed) return;
    const timer = setTimeout(() => this.destroy(), opts.lingerMs);
    timer.unref();
    let dropped = 0;
    this.on('data', (chunk: Buffer) => {
      dropped += chunk.length;
      if (dropped > MAX_LINGER_BYTES) this.destroy();
    });
    this.once('end', () => this.destroy());
    this.once('close', () => clearTimeout(timer));
    if (this.writable) this.end();
    this.resume();
  };
}

function oversize(req: IncomingMessage, limit: number): boolean {
  const length = req.headers['content-length'];
  return length !== undefined && /^\d+$/.test(length) && Number(length) > limit;
}

/** Cuts a request whose body comes slower than the minimum rate (average since the request began). */
function watchBodyRate(req: IncomingMessage, res: ServerResponse, opts: HttpGuardOptions): void {
  const hasBody = req.headers['transfer-encoding'] !== undefined || Number(req.headers['content-length'] ?? 0) > 0;
  if (!hasBody || opts.minBodyBytesPerSec <= 0) return;
  const socket = req.socket;
  const t0 = Date.now();
  const read0 = socket.bytesRead;
  const timer = setInterval(() => {
    if (req.complete || res.writableEnded || socket.destroyed) {
      clearInterval(timer);
      return;
    }
    const seconds = (Date.now() - t0) / 1000;
    if (seconds * 1000 < opts.bodyGraceMs) return;
    if (socket.bytesRead - read0 < opts.minBodyBytesPerSec * seconds) {
      clearInterval(timer);
      cutRequest(req, socket, { status: 408, message: `request body arrived slower than ${opts.minBodyBytesPerSec} bytes/s` }, opts);
    }
  }, 1000);
  timer.unref();
  res.once('close', () => clearInterval(timer));
}

const CLIENT_ERRORS: Record<string, { status: number; reason: string; message: string }> = {
  HPE_HEADER_OVERFLOW: { status: 431, reason: 'Request Header Fields Too Large', message: 'request headers too large' },
  ERR_HTTP_REQUEST_TIMEOUT: { status: 408, reason: 'Request Timeout', message: 'request not received in time' },
  HPE_HEADERS_TIMEOUT: { status: 408, reason: 'Request Timeout', message: 'request headers not received in time' },
  HPE_INVALID_METHOD: { status: 400, reason: 'Bad Request', message: 'unknown HTTP method' },
  HPE_INVALID_CONTENT_LENGTH: { status: 400, reason: 'Bad Request', message: 'invalid Content-Length' },
  HPE_UNEXPECTED_CONTENT_LENGTH: { status: 400, reason: 'Bad Request', message: 'Content-Length together with Transfer-Encoding' },
  HPE_INVALID_CHUNK_SIZE: { status: 400, reason: 'Bad Request', message: 'invalid chunked encoding' },
  HPE_INVALID_TRANSFER_ENCODING: { status: 400, reason: 'Bad Request', message: 'invalid Transfer-Encoding' },
};
const MALFORMED = { status: 400, reason: 'Bad Request', message: 'malformed HTTP request' };

/** Sockets whose parse error is handled already: Node reports every later bad byte again. */
const erroredSockets = new WeakSet<Socket>();

/**
 * 'clientError': the JSON error shape on the raw socket. Bytes the parser refuses after a complete request
 * (a client library's stray `0\r\n\r\n` after a body-less POST) do not lose that request's answer: it
 * is written first, then the error, then the connection is closed.
 */
function onClientError(err: Error & { code?: string }, socket: Socket, opts: HttpGuardOptions): void {
  if (erroredSockets.has(socket)) return;
  erroredSockets.add(socket);
  const e = CLIENT_ERRORS[err.code ?? ''] ?? MALFORMED;
  const inFlight = inFlightResponse(socket);
  if (inFlight?.req && !inFlight.req.complete && err.code !== 'ECONNRESET') {
    // A body gone bad (chunking) after the app took the request.
    cutRequest(inFlight.req, socket, { status: e.status === 408 ? 408 : 400, message: e.message }, opts);
    return;
  }
  if (err.code === 'ECONNRESET' || !socket.writable) {
    socket.destroy();
    return;
  }
  afterAnswers(
    socket,
    () => {
      if (socket.writable) writeRawAnswer(socket, e.status, e.reason, e.message, opts, { method: '', path: '' });
      else socket.destroy();
    },
    opts,
  );
}

/**
 * Calls `then` once every answer to the complete requests on this socket is written (at once when none is
 * pending); the socket is destroyed if that takes longer than the request timeout.
 */
function afterAnswers(socket: Socket, then: () => void, opts: HttpGuardOptions): void {
  const pending = inFlightResponse(socket);
  if (!pending || pending.writableFinished) {
    then();
    return;
  }
  const timer = setTimeout(() => socket.destroy(), opts.requestTimeoutMs);
  timer.unref();
  const next = () => {
    clearTimeout(timer);
    // Node hands the socket to the next pipelined answer (or none) after 'finish'
    setImmediate(() => afterAnswers(socket, then, opts));
  };
  pending.once('finish', next);
  pending.once('close', () => {
    if (!pending.writableFinished) {
      clearTimeout(timer);
      socket.destroy();
    }
  });
}

const REASONS: Record<number, string> = { 400: 'Bad Request', 408: 'Request Timeout' };

/** The response Node's HTTP server is writing on this connection, if any (its own private link to it). */
function inFlightResponse(socket: Socket): ServerResponse | null | undefined {
  return (socket as Socket & { _httpMessage?: ServerResponse | null })._httpMessage;
}

/**
 * Cuts a request the app has taken but whose body went bad (malformed chunking, too slow). While nothing was
 * answered on the connection yet, the JSON error goes out on the raw socket first, with the request's own trace
 * id (as Node itself would send a bare 400). The connection is then closed, the app's body read fails, and the
 * app records the cut from whyCut(); what it answers goes nowhere.
 */
function cutRequest(req: IncomingMessage, socket: Socket, why: { status: 400 | 408; message: string }, opts: HttpGuardOptions): void {
  cutRequests.set(req, why);
  if (!socket.writable || inFlightResponse(socket)?.headersSent) {
    socket.destroy();
    return;
  }
  writeRawAnswer(socket, why.status, REASONS[why.status]!, why.message, opts, { appTracid: traceIdOf(req) ?? newTraceId() });
}

/**
 * An answer written straight on the socket (no request object exists, or the app's cannot be used any more), then
 * the connection is closed. `of` says whose: a request recorded here, or (appTracid) one the app records itself.
 */
function writeRawAnswer(
  socket: Socket,
  status: number,
  reason: string,
  message: string,
  opts: HttpGuardOptions,
  of: { method: string; path: string } | { appTracid: string },
): void {
  const tracid = 'appTracid' in of ? of.appTracid : newTraceId();
  const body = JSON.stringify(errorBody(message));
  const headers = {
    'Content-Type': 'application/json',
    'Content-Length': String(Buffer.byteLength(body)),
    Connection: 'close',
    [TRACE_HEADER]: tracid,
    ...SECURITY_HEADERS,
  };
  const head = Object.entries(headers)
    .map(([k, v]) => `${k}: ${v}\r\n`)
    .join('');
  const answer = `HTTP/1.1 ${status} ${reason}\r\n${head}\r\n${body}`;
  setTimeout(() => socket.destroy(), 1000).unref();
  if ('appTracid' in of) {
    // Closed as soon as the answer is written: the app's own late answer then finds a destroyed socket.
    socket.end(answer, () => socket.destroy());
    return;
  }
  socket.end(answer);
  record(opts, tracid, of.method, of.path, status, clientOf(socket));
}

/**
 * Installs the guards on a server made by @hono/node-server's serve(): timeouts, 'clientError',
 * 'checkContinue', and a wrapper around its request listener. Create the server with
 * guardedServerOptions() so that Node leaves the Host check to the wrapper.
 */
export function installHttpGuards(server: http.Server | https.Server, opts: HttpGuardOptions): void {
  server.headersTimeout = opts.headersTimeoutMs;
  server.requestTimeout = opts.requestTimeoutMs;
  const listeners = server.listeners('request') as RequestListener[];
  server.removeAllListeners('request');
  const guarded: RequestListener = (req, res) => {
    lingerOnClose(req.socket, opts);
    if (req.headers.host === undefined && req.httpVersionMajor === 1 && req.httpVersionMinor >= 1) {
      answerEarly(req, res, 400, 'missing Host header', opts, true);
      return;
    }
    const ipHost = canonicalIpHost(req.headers.host);
    if (ipHost !== undefined) req.headers.host = ipHost;
    if (oversize(req, opts.bodyLimit)) {
      answerEarly(req, res, 413, bodyTooLargeMessage(opts.bodyLimit), opts);
      return;
    }
    watchBodyRate(req, res, opts);
    for (const l of listeners) l(req, res);
  };
  server.on('request', guarded);
  // Without this listener Node answers "100 Continue" before anything looks at the request.
  server.on('checkContinue', (req: IncomingMessage, res: ServerResponse) => {
    if (!oversize(req, opts.bodyLimit) && req.headers.host !== undefined) res.writeContinue();
    guarded(req, res);
  });
  server.on('clientError', (err: Error, socket: Socket) => onClientError(err, socket, opts));
  // Without this listener Node drops a CONNECT request without a word.
  server.on('connect', (req: IncomingMessage, socket: Socket) =>
    writeRawAnswer(socket, 405, 'Method Not Allowed', 'CONNECT is not supported here', opts, { method: 'CONNECT', path: req.url ?? '' }),
  );
}

/** Options for http(s).createServer that the guards rely on (the handshake timeout only matters with TLS). */
export function guardedServerOptions(handshakeTimeoutMs: number): https.ServerOptions {
  // Node checks the header and request timeouts only every connectionsCheckingInterval (default 30 s).
  return {
    requireHostHeader: false,
    handshakeTimeout: handshakeTimeoutMs,
    connectionsCheckingInterval: 1000,
    // Node 24.9+: only a WebSocket upgrade goes to the 'upgrade' listener; any other (h2c) is an ordinary request.
    // Older Node hands every upgrade there, and websocket.ts answers the others itself (answerIgnoringUpgrade).
    shouldUpgradeCallback: isWebSocketUpgrade,
  } as https.ServerOptions;
}

/** Whether a request asks to upgrade to WebSocket (the only upgrade the server takes). */
export function isWebSocketUpgrade(req: IncomingMessage): boolean {
  return (req.headers.upgrade ?? '').toLowerCase() === 'websocket';
}
