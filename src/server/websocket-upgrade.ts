// Which upgrade requests become WebSocket sockets: the route, the Host, the Origin and the socket caps decide; a
// refusal is a JSON error like the REST routes', written on the raw socket. A request that asks to upgrade to
// anything but WebSocket is answered as the plain request it also is.

import http from 'node:http';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { addressGroup } from '../address-group.js';
import { foreignHostMessage, type HostCheck } from './host-check.js';
import { isAllowedOrigin } from './origin-check.js';
import { observeWebSocketRefused } from './prometheus.js';
import type { SocketBudget } from './websocket-limits.js';

/** WebSocket path (without trailing slash) -> the REST route it answers like. */
export const WS_ROUTES: Readonly<Record<string, string>> = {
  '/ws/detector/detect': '/detector/detect/',
  '/ws/recognizer/predict': '/recognizer/predict/',
  '/ws/pose/detect': '/pose/detect/',
  '/ws/openpose/detect': '/openpose/detect/',
  '/ws/object/detect': '/object/detect/',
};

/** Why an upgrade was refused, or a socket closed by the server. */
export interface WebSocketCounts {
  refusedOrigin: number;
  refusedPerAddress: number;
  refusedInAll: number;
  closedIdle: number;
  closedUnread: number;
}

export function rejectUpgrade(socket: Duplex, status: number, reason: string, message: string, extraHeaders = ''): void {
  const body = JSON.stringify({ success: 'false', error: message });
  socket.end(
    `HTTP/1.1 ${status} ${reason}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n` +
      `${extraHeaders}Connection: close\r\n\r\n${body}`,
  );
  // a client that does not read the refusal must not keep the descriptor
  setTimeout(() => socket.destroy(), 1000).unref();
}

/** A handshake ws refuses (method, Upgrade, key, version, protocol or extension headers) gets the JSON error too. */
export function rejectHandshake(err: Error, socket: Duplex): void {
  const method = /method/i.test(err.message);
  const version = /version/i.test(err.message) ? 'Sec-WebSocket-Version: 13, 8\r\n' : '';
  rejectUpgrade(socket, method ? 405 : 400, method ? 'Method Not Allowed' : 'Bad Request', `WebSocket handshake refused: ${err.message}`, version);
}

/**
 * A request that asks to upgrade to anything but WebSocket (curl --http2 on http:// asks for h2c). HTTP/1.1 lets a
 * server ignore the wish, but Node hands every upgrade request to the 'upgrade' listener once there is one, and
 * its parser has let go of the socket and of the body: the request is answered here as the plain request it also
 * is, through the server's own request listeners (guards, app), on a copy whose body (Content-Length only) is what
 * came with the headers, then the socket's data. The connection closes after the answer.
 */
export function answerIgnoringUpgrade(server: http.Server, req: http.IncomingMessage, socket: Socket, head: Buffer): void {
  if (req.headers['transfer-encoding'] !== undefined) {
    rejectUpgrade(
      socket,
      400,
      'Bad Request',
      `upgrading to ${JSON.stringify(req.headers.upgrade)} is not supported; send the request without Upgrade`,
    );
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

export interface UpgradeGate {
  budget: SocketBudget;
  counts: WebSocketCounts;
  allowedOrigins: readonly string[];
  hosts?: HostCheck;
}

/**
 * The REST route (with the query) a WebSocket upgrade request answers like, once it has a place in the socket
 * budget (given back when the socket closes); null when the upgrade is refused (the refusal is written).
 */
export function admitUpgrade(gate: UpgradeGate, req: http.IncomingMessage, socket: Duplex): string | null {
  const url = new URL(req.url ?? '/', 'https://localhost');
  const restPath = WS_ROUTES[url.pathname.replace(/\/+$/, '')];
  if (!restPath) {
    rejectUpgrade(socket, 404, 'Not Found', `no WebSocket route at ${url.pathname}; routes: ${Object.keys(WS_ROUTES).join(', ')}`);
    return null;
  }
  // a DNS-rebinding page's socket names its own host
  if (gate.hosts && !gate.hosts(req.headers.host)) {
    rejectUpgrade(socket, 421, 'Misdirected Request', foreignHostMessage(req.headers.host));
    return null;
  }
  // Browsers let any page open a WebSocket anywhere; the Origin header is what says whose page it is.
  if (!isAllowedOrigin(req.headers.origin, req.headers.host, gate.allowedOrigins)) {
    gate.counts.refusedOrigin++;
    observeWebSocketRefused('origin');
    rejectUpgrade(
      socket,
      403,
      'Forbidden',
      `WebSocket upgrade from origin ${JSON.stringify(req.headers.origin)} refused: only this server's own pages and --allowed-origins may open sockets`,
    );
    return null;
  }
  return takeSocketPlace(gate, req, socket) ? restPath + url.search : null;
}

/** A place in the socket budget for the upgrade's address, held until the socket's descriptor closes. */
function takeSocketPlace({ budget, counts }: UpgradeGate, req: http.IncomingMessage, socket: Duplex): boolean {
  const key = addressGroup(req.socket.remoteAddress);
  const refused = budget.take(key);
  if (refused === 'address') {
    counts.refusedPerAddress++;
    observeWebSocketRefused('address');
    rejectUpgrade(
      socket,
      429,
      'Too Many Requests',
      `too many WebSocket sockets from this address (at most ${budget.maxPerAddress})`,
      'Retry-After: 10\r\n',
    );
    return false;
  }
  if (refused === 'all') {
    counts.refusedInAll++;
    observeWebSocketRefused('all');
    rejectUpgrade(socket, 503, 'Service Unavailable', `too many WebSocket sockets open (at most ${budget.maxInAll})`, 'Retry-After: 10\r\n');
    return false;
  }
  // the place is the socket's until its descriptor is closed, whatever becomes of the handshake
  socket.once('close', () => budget.give(key));
  return true;
}
