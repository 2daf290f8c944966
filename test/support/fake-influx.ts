// A fake InfluxDB over a real loopback socket, for the faults a real influxd does not make on demand: an
// answer that trickles, one far too large, one of the wrong shape, a 400 partial write for every batch.
// Each test gives the handler; the server counts the requests by path.

import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface FakeInflux {
  /** http://127.0.0.1:<port> */
  origin: string;
  /** Requests seen, by path (/write, /query, ...). */
  requests: Map<string, number>;
  close(): Promise<void>;
}

export type FakeHandler = (req: http.IncomingMessage, res: http.ServerResponse, body: Buffer) => void;

export async function startFakeInflux(handler: FakeHandler): Promise<FakeInflux> {
  const requests = new Map<string, number>();
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (d: Buffer) => chunks.push(d));
    req.on('end', () => {
      const path = new URL(req.url ?? '/', 'http://x').pathname;
      requests.set(path, (requests.get(path) ?? 0) + 1);
      handler(req, res, Buffer.concat(chunks));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/**
 * Answers 200 and then one byte every `everyMs` (at most `maxBytes` of them, so the loop is bounded), as
 * an InfluxDB behind a stalling proxy might: never idle for long, never done.
 */
export function trickle(res: http.ServerResponse, everyMs: number, maxBytes = 200): void {
  res.writeHead(200, { 'Content-Type': 'application/json' });
  let sent = 0;
  const timer = setInterval(() => {
    if (res.destroyed || sent >= maxBytes) {
      clearInterval(timer);
      if (!res.destroyed) res.end();
      return;
    }
    res.write(' ');
    sent++;
  }, everyMs);
  res.on('close', () => clearInterval(timer));
}

/** The answer to a query without series, or to CREATE DATABASE. */
export function emptyQueryAnswer(res: http.ServerResponse): void {
  res.writeHead(200, { 'Content-Type': 'application/json' });
  res.end('{"results":[{"statement_id":0}]}\n');
}
