// WebSocket routes on the HTTPS port (wss://host:8008/ws/...). A binary frame is one image; it goes through the
// same Hono app as a POST of that image to the REST route (app.fetch with a raw body), so the text frame that
// answers it is the REST route's JSON byte for byte, and the request metrics, audit line, body limit, engine
// error mapping and the 503 "Training data update in progress" window are the REST ones. Errors come back as the
// REST JSON body plus "status", and the socket stays open. A text frame is echoed (latency probe).
// One frame in flight per socket: reading pauses while a frame is being answered, so a client that sends faster
// than the server answers fills its own TCP window, never a queue here.

import type http from 'node:http';
import type { Duplex } from 'node:stream';
import { WebSocketServer, type RawData, type WebSocket } from 'ws';
import { observeWebSocketConnection } from './prometheus.js';

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

export interface WebSocketRoutesOptions {
  /** The app's fetch (createApp(...).fetch). */
  fetch: (request: Request, env: unknown) => Response | Promise<Response>;
  /** Largest frame (bytes): the body limit. A bigger frame closes the socket with 1009 (Message Too Big). */
  maxPayload: number;
}

export interface WebSocketRoutes {
  /** Open sockets, and the most frames one socket has held unanswered (the one in flight included) since start. */
  stats(): { open: number; maxPendingFrames: number };
  /** Closes every socket (1001 Going Away), dropping those that do not close within graceMs. */
  close(graceMs?: number): Promise<void>;
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

function rejectUpgrade(socket: Duplex, status: number, reason: string, message: string): void {
  const body = JSON.stringify({ success: 'false', error: message });
  socket.end(
    `HTTP/1.1 ${status} ${reason}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n` +
      `Connection: close\r\n\r\n${body}`,
  );
}

function frameBytes(data: RawData): Buffer {
  if (Buffer.isBuffer(data)) return data;
  return Array.isArray(data) ? Buffer.concat(data) : Buffer.from(data);
}

/** Serves the WebSocket routes on `server`'s upgrade requests. */
export function attachWebSocketRoutes(server: http.Server, opts: WebSocketRoutesOptions): WebSocketRoutes {
  const wss = new WebSocketServer({ noServer: true, maxPayload: opts.maxPayload });
  let maxPendingFrames = 0;

  const onUpgrade = (req: http.IncomingMessage, socket: Duplex, head: Buffer) => {
    const url = new URL(req.url ?? '/', 'https://localhost');
    const restPath = WS_ROUTES[url.pathname.replace(/\/+$/, '')];
    if (!restPath) {
      rejectUpgrade(socket, 404, 'Not Found', `no WebSocket route at ${url.pathname}; routes: ${Object.keys(WS_ROUTES).join(', ')}`);
      return;
    }
    wss.handleUpgrade(req, socket, head, (ws) => serveSocket(ws, req, restPath + url.search));
  };

  const serveSocket = (ws: WebSocket, upgrade: http.IncomingMessage, target: string) => {
    observeWebSocketConnection(1);
    ws.once('close', () => observeWebSocketConnection(-1));
    ws.on('error', () => ws.terminate()); // a protocol error (1009 too big, bad frame): ws closes it, nothing to add
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

    const send = (data: Buffer | string, binary: boolean) =>
      new Promise<void>((resolve) => ws.send(data, { binary }, () => resolve()));

    const pump = async () => {
      if (pumping) return;
      pumping = true;
      try {
        while (pending.length > 0 && ws.readyState === ws.OPEN) {
          const frame = pending.shift()!;
          inFlight = 1;
          if (frame.binary) await send(await answer(frame.bytes), false);
          else await send(frame.bytes, false);
          inFlight = 0;
        }
      } finally {
        pumping = false;
        if (ws.readyState === ws.OPEN) ws.resume();
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
    stats: () => ({ open: wss.clients.size, maxPendingFrames }),
    close: (graceMs = 1000) =>
      new Promise<void>((resolve) => {
        server.off('upgrade', onUpgrade);
        for (const ws of wss.clients) ws.close(1001, 'server shutting down');
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
