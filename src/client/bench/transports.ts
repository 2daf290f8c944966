// How `edgecv bench` sends one image and gets its answer: a keep-alive HTTPS POST (REST), or a binary frame on a
// WebSocket that stays open (one per client). Both give the HTTP-like status and the JSON text of the answer.

import https from 'node:https';
import WebSocket from 'ws';
import type { BenchImage } from './images.js';

export interface Answer {
  /** HTTP status (REST), or the "status" of a WebSocket error reply (200 for an answer without one). */
  status: number;
  text: string;
}

export interface Sender {
  send(image: BenchImage): Promise<Answer>;
  close(): void;
}

export interface SenderOptions {
  addr: string;
  /** REST path, e.g. /detector/detect/ */
  path: string;
  tls: { ca?: string; rejectUnauthorized: boolean };
  timeoutMs: number;
}

export function restSender(opts: SenderOptions): Sender {
  // one connection per client, kept alive: what a camera client does
  const agent = new https.Agent({ keepAlive: true, maxSockets: 1, ...opts.tls });
  const url = new URL(opts.path, opts.addr);
  return {
    send: (image) =>
      new Promise((resolve, reject) => {
        const req = https.request(
          url,
          { method: 'POST', agent, timeout: opts.timeoutMs, headers: { 'Content-Type': image.type, 'Content-Length': image.bytes.length } },
          (res) => {
            const chunks: Buffer[] = [];
            res.on('data', (d: Buffer) => chunks.push(d));
            res.on('error', reject);
            res.on('end', () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8') }));
          },
        );
        req.on('timeout', () => req.destroy(Object.assign(new Error('timed out'), { code: 'ETIMEDOUT' })));
        req.on('error', reject);
        req.end(image.bytes);
      }),
    close: () => agent.destroy(),
  };
}

/** The WebSocket path of a REST route: /detector/detect/ -> /ws/detector/detect */
export function webSocketPath(restPath: string): string {
  return `/ws${restPath.replace(/\/+$/, '')}`;
}

export async function webSocketSender(opts: SenderOptions): Promise<Sender> {
  const url = new URL(webSocketPath(opts.path), opts.addr.replace(/^https:/, 'wss:'));
  const ws = new WebSocket(url, { ...opts.tls, handshakeTimeout: opts.timeoutMs });
  await new Promise<void>((resolve, reject) => {
    ws.once('open', () => resolve());
    ws.once('error', reject);
    ws.once('unexpected-response', (_req, res) =>
      reject(new Error(`the server refused the WebSocket upgrade of ${url.pathname}: HTTP ${res.statusCode}`)),
    );
  });
  // replies come in order, one per frame: a FIFO of waiting senders
  const waiting: { resolve: (a: Answer) => void; reject: (e: Error) => void }[] = [];
  let failure: Error | undefined;
  ws.on('message', (data) => {
    const text = data.toString();
    let status = 200;
    try {
      const s = (JSON.parse(text) as { status?: unknown }).status;
      if (typeof s === 'number') status = s;
    } catch {
      // not JSON: counted as it comes
    }
    waiting.shift()?.resolve({ status, text });
  });
  const fail = (e: Error) => {
    failure ??= e;
    for (const w of waiting.splice(0)) w.reject(e);
  };
  ws.on('error', fail);
  ws.on('close', (code) => fail(Object.assign(new Error(`WebSocket closed (${code})`), { code: 'ECONNRESET' })));
  return {
    send: (image) =>
      new Promise((resolve, reject) => {
        if (failure) return reject(failure);
        const timer = setTimeout(() => ws.terminate(), opts.timeoutMs);
        waiting.push({
          resolve: (a) => {
            clearTimeout(timer);
            resolve(a);
          },
          reject: (e) => {
            clearTimeout(timer);
            reject(e);
          },
        });
        ws.send(image.bytes, { binary: true });
      }),
    close: () => ws.close(),
  };
}
