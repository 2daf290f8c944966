// Serving an app with @hono/node-server: over HTTPS, or plain HTTP when no certificate is given (--http-port).

import http from 'node:http';
import type net from 'node:net';
import type { AddressInfo } from 'node:net';
import https from 'node:https';
import { serve } from '@hono/node-server';
import type { Hono } from 'hono';
import { DEFAULT_BODY_LIMIT } from '../config.js';
import { guardedServerOptions, HTTP_GUARD_DEFAULTS, installHttpGuards, type HttpGuardOptions } from './http-guards.js';
import { TLS_HARDENING } from './tls.js';
import { attachWebSocketRoutes, type WebSocketRoutes, type WebSocketRoutesOptions } from './websocket.js';

export interface RunningServer {
  server: https.Server | http.Server;
  /** The bound port (useful with port 0). */
  port: number;
  /** https://<host>:<port>/, or http:// without TLS */
  url: string;
  /** The /ws/* routes, when asked for (webSocketMaxPayload). */
  webSockets?: WebSocketRoutes;
  /**
   * Starts a drain: every answer from now on (those in flight whose headers are not out yet included) says
   * Connection: close, so keep-alive clients reconnect (through a balancer: to another server).
   */
  drain(): void;
  /** Stops accepting, lets in-flight requests finish (up to graceMs), then drops what is left. */
  close(graceMs?: number): Promise<void>;
}

export interface ListenOptions {
  app: Hono;
  /** Without it: plain HTTP. */
  tls?: { cert: string; key: string };
  port: number;
  host: string;
  /** Body limit, audit trail, timeouts (src/server/http-guards.ts); defaults where left out. */
  guards?: Partial<HttpGuardOptions> & { handshakeTimeoutMs?: number };
  /** Serve the /ws/* routes (through `app`), frames up to this many bytes: the body limit. */
  webSocketMaxPayload?: number;
  /** Their caps, times, shared socket budget and allowed origins (src/server/websocket-limits.ts). */
  webSocket?: Omit<WebSocketRoutesOptions, 'fetch' | 'maxPayload'>;
}

function urlHost(host: string): string {
  if (host === '0.0.0.0' || host === '::') return 'localhost';
  return host.includes(':') ? `[${host}]` : host;
}

/**
 * Tracks the answers whose headers are not out yet; the function returned makes those, and every later one, close
 * their connection after the answer (Node then writes Connection: close).
 */
function connectionCloseOnDrain(server: http.Server): () => void {
  let draining = false;
  const unanswered = new Set<http.ServerResponse>();
  // prepended: runs before the app's handler writes anything
  server.prependListener('request', (_req: http.IncomingMessage, res: http.ServerResponse) => {
    if (draining) {
      res.shouldKeepAlive = false;
      return;
    }
    unanswered.add(res);
    res.once('close', () => unanswered.delete(res));
  });
  return () => {
    draining = true;
    for (const res of unanswered) if (!res.headersSent) res.shouldKeepAlive = false;
    unanswered.clear();
  };
}

export function startServer(opts: ListenOptions): Promise<RunningServer> {
  return new Promise((resolve, reject) => {
    const listen = { fetch: opts.app.fetch, port: opts.port, hostname: opts.host };
    const guardServerOptions = guardedServerOptions(opts.guards?.handshakeTimeoutMs ?? HTTP_GUARD_DEFAULTS.handshakeTimeoutMs);
    const server = (
      opts.tls
        ? serve({
            ...listen,
            createServer: https.createServer,
            serverOptions: { cert: opts.tls.cert, key: opts.tls.key, ...TLS_HARDENING, ...guardServerOptions },
          })
        : serve({ ...listen, createServer: http.createServer, serverOptions: guardServerOptions })
    ) as https.Server | http.Server;
    const given = Object.fromEntries(Object.entries(opts.guards ?? {}).filter(([, v]) => v !== undefined));
    installHttpGuards(server, { ...HTTP_GUARD_DEFAULTS, bodyLimit: DEFAULT_BODY_LIMIT, ...given });
    const closeAfterAnswer = connectionCloseOnDrain(server);
    // Every TCP connection, from accept on: closeAllConnections() knows only those HTTP has taken over, not
    // one still in its TLS handshake (or that never starts one), and server.close() waits for those too.
    const sockets = new Set<net.Socket>();
    server.on('connection', (socket: net.Socket) => {
      sockets.add(socket);
      socket.once('close', () => sockets.delete(socket));
    });
    const onError = (err: Error) => reject(err);
    server.once('error', onError);
    server.once('listening', () => {
      server.off('error', onError);
      server.on('error', (err) => console.error('[edgecv] server error:', err));
      const port = (server.address() as AddressInfo).port;
      const webSockets: WebSocketRoutes | undefined =
        opts.webSocketMaxPayload === undefined
          ? undefined
          : attachWebSocketRoutes(server, { ...opts.webSocket, fetch: opts.app.fetch, maxPayload: opts.webSocketMaxPayload });
      resolve({
        server,
        port,
        webSockets,
        url: `${opts.tls ? 'https' : 'http'}://${urlHost(opts.host)}:${port}/`,
        // Idle keep-alive connections stay open until close(): closing one now would race a request the client is
        // sending on it; used during the drain, each gets Connection: close on its next answer.
        drain: closeAfterAnswer,
        close: (graceMs = 5000) =>
          new Promise<void>((done) => {
            // upgraded sockets are no longer the HTTP server's: close them, or server.close() waits for them
            void webSockets?.close(graceMs);
            const timer = setTimeout(() => {
              server.closeAllConnections();
              for (const socket of sockets) socket.destroy();
            }, graceMs);
            timer.unref();
            server.close(() => {
              clearTimeout(timer);
              done();
            });
            server.closeIdleConnections();
          }),
      });
    });
  });
}
