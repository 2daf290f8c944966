// One WebSocket socket's frames: a binary frame is one image, answered by the app as a POST of it to the REST route;
// a text frame is echoed. One frame in flight: reading pauses while a frame is answered and its answer written.

import type http from 'node:http';
import type { Socket } from 'node:net';
import type { RawData, WebSocket } from 'ws';
import { observeWebSocketConnection } from './prometheus.js';
import { enterPhase, type SocketState } from './websocket-sweep.js';

/** Headers of the upgrade request that travel with every frame (keys for guarded routes, client identification). */
const FORWARDED_HEADERS = ['authorization', 'x-api-key', 'user-agent', 'x-forwarded-for'];

export type AppFetch = (request: Request, env: unknown) => Response | Promise<Response>;

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

function frameBytes(data: RawData): Buffer {
  if (Buffer.isBuffer(data)) return data;
  return Array.isArray(data) ? Buffer.concat(data) : Buffer.from(data);
}

/** What every socket of a listener shares: the app, the sockets open, and the deepest queue seen. */
export interface FrameListener {
  fetch: AppFetch;
  states: Set<SocketState>;
  notePending(frames: number): void;
}

/** The frames of one socket, answered in order, one at a time. */
class FrameQueue {
  /** Frames ws has already parsed while reading was pausing: at most one socket read's worth. */
  private pending: { bytes: Buffer; binary: boolean }[] = [];
  private pumping = false;
  private inFlight = 0;
  private headers: Record<string, string> = { 'content-type': 'application/octet-stream' };

  constructor(
    private listener: FrameListener,
    private state: SocketState,
    private upgrade: http.IncomingMessage,
    private target: string,
  ) {
    for (const name of FORWARDED_HEADERS) {
      const value = upgrade.headers[name];
      if (typeof value === 'string') this.headers[name] = value;
    }
  }

  push(data: RawData, binary: boolean): void {
    this.state.ws.pause();
    this.pending.push({ bytes: frameBytes(data), binary });
    this.listener.notePending(this.pending.length + this.inFlight);
    void this.pump();
  }

  private async answer(bytes: Buffer): Promise<string> {
    const request = new Request(new URL(this.target, 'https://localhost'), {
      method: 'POST',
      headers: { ...this.headers, 'content-length': String(bytes.length) },
      body: bytes,
    });
    try {
      // env.incoming: the upgrade request, whose socket gives the client address to the audit line
      return await replyText(await this.listener.fetch(request, { incoming: this.upgrade }));
    } catch (e) {
      console.error('[edgecv] WebSocket frame failed:', e);
      return JSON.stringify({ success: 'false', error: 'internal server error', status: 500 });
    }
  }

  /** Resolves once the answer is written to the socket: until then nothing more is read, so the unread answers a socket holds are one at most. */
  private send(data: Buffer | string): Promise<void> {
    return new Promise<void>((resolve) => {
      if (this.state.phase !== 'closing') enterPhase(this.state, 'writing');
      this.state.ws.send(data, { binary: false }, () => resolve());
    });
  }

  private async pump(): Promise<void> {
    const { ws } = this.state;
    if (this.pumping) return;
    this.pumping = true;
    try {
      while (this.pending.length > 0 && ws.readyState === ws.OPEN) {
        const frame = this.pending.shift()!;
        this.inFlight = 1;
        if (this.state.phase !== 'closing') enterPhase(this.state, 'answering');
        await this.send(frame.binary ? await this.answer(frame.bytes) : frame.bytes);
        this.inFlight = 0;
      }
    } finally {
      this.pumping = false;
      if (ws.readyState === ws.OPEN && this.state.phase !== 'closing') {
        enterPhase(this.state, 'waiting');
        ws.resume();
      }
    }
  }
}

/** Serves an accepted socket whose frames answer like the REST route `target` (path and query). */
export function serveSocket(listener: FrameListener, ws: WebSocket, upgrade: http.IncomingMessage, socket: Socket, target: string): void {
  const now = Date.now();
  const state: SocketState = { ws, socket, phase: 'waiting', since: now, bytesAtSince: socket.bytesRead, lastPingAt: now };
  listener.states.add(state);
  observeWebSocketConnection(1);
  ws.once('close', () => {
    listener.states.delete(state);
    observeWebSocketConnection(-1);
  });
  // A protocol error (1009 too big, a bad frame): ws has queued the close frame and ends the connection once it
  // is written. Tearing the socket down here would drop that frame (the client would see 1006), so the sweep
  // only drops a connection whose peer does not finish the close within closeGraceMs.
  ws.on('error', () => {
    if (state.phase !== 'closing') enterPhase(state, 'closing');
  });
  const frames = new FrameQueue(listener, state, upgrade, target);
  ws.on('message', (data, isBinary) => frames.push(data, isBinary));
}
