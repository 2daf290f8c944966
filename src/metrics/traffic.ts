// Real traffic counters of the server's listening sockets: bytes read and written on the TCP sockets (TLS
// records included, as on the wire), connections accepted, open and completed, and request latencies, per
// listening port.

import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo, Server, Socket } from 'node:net';
import { LatencyReservoir } from './percentiles.js';

export interface PortTraffic {
  port: number;
  /** Open connections now. */
  active: number;
  /** Connections accepted since start. */
  accepts: number;
  /** Connections completed (closed) since start. */
  handled: number;
  bytesSent: number;
  bytesRecvd: number;
}

export interface TrafficSnapshot {
  ports: (PortTraffic & { latenciesMs: number[] })[];
  sendBytes: number;
  recvBytes: number;
}

class PortState {
  readonly open = new Set<Socket>();
  accepts = 0;
  handled = 0;
  closedSent = 0;
  closedRecvd = 0;
  readonly latencies = new LatencyReservoir();
  constructor(readonly port: number) {}
}

export class TrafficMeter {
  readonly #ports = new Map<number, PortState>();

  #port(port: number): PortState {
    let state = this.#ports.get(port);
    if (!state) {
      state = new PortState(port);
      this.#ports.set(port, state);
    }
    return state;
  }

  /** Counts `server`'s traffic from now on; returns a function that stops counting new connections. */
  attach(server: Server): () => void {
    const onListening = () => {
      const address = server.address();
      if (address && typeof address === 'object') this.#port((address as AddressInfo).port);
    };
    // 'connection' hands over the raw TCP socket, before TLS: its byte counts are the wire bytes.
    const onConnection = (socket: Socket) => {
      const state = this.#port(socket.localPort ?? 0);
      state.accepts++;
      state.open.add(socket);
      socket.once('close', () => {
        state.open.delete(socket);
        state.handled++;
        state.closedSent += socket.bytesWritten;
        state.closedRecvd += socket.bytesRead;
      });
    };
    const onRequest = (req: IncomingMessage, res: ServerResponse) => {
      const t0 = performance.now();
      const port = req.socket.localPort ?? 0;
      res.once('close', () => this.#port(port).latencies.add(performance.now() - t0));
    };
    if (server.listening) onListening();
    server.on('listening', onListening);
    server.on('connection', onConnection);
    server.on('request', onRequest);
    return () => {
      server.off('listening', onListening);
      server.off('connection', onConnection);
      server.off('request', onRequest);
    };
  }

  /** Counters since start for every port seen, and the latencies since the previous snapshot. */
  snapshot(): TrafficSnapshot {
    const ports = [...this.#ports.values()]
      .sort((a, b) => a.port - b.port)
      .map((s) => {
        let bytesSent = s.closedSent;
        let bytesRecvd = s.closedRecvd;
        for (const socket of s.open) {
          bytesSent += socket.bytesWritten;
          bytesRecvd += socket.bytesRead;
        }
        return {
          port: s.port,
          active: s.open.size,
          accepts: s.accepts,
          handled: s.handled,
          bytesSent,
          bytesRecvd,
          latenciesMs: s.latencies.drain(),
        };
      });
    return {
      ports,
      sendBytes: ports.reduce((n, p) => n + p.bytesSent, 0),
      recvBytes: ports.reduce((n, p) => n + p.bytesRecvd, 0),
    };
  }
}
