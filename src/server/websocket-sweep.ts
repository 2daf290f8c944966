// The phases of a WebSocket socket and the one timer that enforces the rules of each: idle and trickle while
// waiting for a frame, unread answers while writing, the close grace while closing; pings keep NATs open.

import type { Socket } from 'node:net';
import type { WebSocket } from 'ws';
import { observeWebSocketCut } from './prometheus.js';
import type { WebSocketLimits } from './websocket-limits.js';
import type { WebSocketCounts } from './websocket-upgrade.js';

/** Close code (RFC 6455 7.4.1) of a socket the server closes: idle, or the server shutting down. */
export const CLOSE_GOING_AWAY = 1001;

/**
 * Where a socket is: waiting for a frame from the client (idle and ping rules), answering one (the engine's time,
 * no rule), writing the answer (the client must read it within the idle timeout), or closing (the peer must
 * answer the close frame within closeGraceMs).
 */
export type Phase = 'waiting' | 'answering' | 'writing' | 'closing';

export interface SocketState {
  ws: WebSocket;
  socket: Socket;
  phase: Phase;
  /** When the phase began, and the socket's bytes read then. */
  since: number;
  bytesAtSince: number;
  lastPingAt: number;
}

export function enterPhase(s: SocketState, phase: Phase): void {
  s.phase = phase;
  s.since = Date.now();
  s.bytesAtSince = s.socket.bytesRead;
}

/** Sends a close frame; the sweep drops the connection if the peer does not answer it within closeGraceMs. */
function closeSocket(s: SocketState, code: number, reason: string): void {
  if (s.phase === 'closing') return;
  enterPhase(s, 'closing');
  s.ws.close(code, reason);
}

/** A waiting socket: closed when no complete frame came within the idle timeout (or it trickles), else pinged. */
function sweepWaiting(s: SocketState, now: number, limits: WebSocketLimits, counts: WebSocketCounts): void {
  const elapsed = now - s.since;
  if (elapsed > limits.idleTimeoutMs) {
    const bytesPerSec = ((s.socket.bytesRead - s.bytesAtSince) * 1000) / elapsed;
    if (elapsed > limits.maxFrameMs || bytesPerSec < limits.minFrameBytesPerSec) {
      counts.closedIdle++;
      observeWebSocketCut('idle');
      closeSocket(s, CLOSE_GOING_AWAY, `idle timeout: no complete frame in ${Math.round(limits.idleTimeoutMs / 1000)} s`);
      return;
    }
  }
  // A liveness probe, and traffic for the NAT and proxies on the way. No rule hangs on the pong: a client
  // sending one large frame cannot answer before the frame ends; a peer gone silent is closed as idle.
  if (now - s.lastPingAt >= limits.idleTimeoutMs / 2) {
    s.lastPingAt = now;
    s.ws.ping();
  }
}

/** One pass of the rules over every socket of a listener. */
export function sweepSockets(states: Iterable<SocketState>, limits: WebSocketLimits, counts: WebSocketCounts): void {
  const now = Date.now();
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
      sweepWaiting(s, now, limits, counts);
    }
  }
}

/** The sweep's timer, a fraction of the idle timeout (not keeping the process alive). */
export function startSweeper(states: Iterable<SocketState>, limits: WebSocketLimits, counts: WebSocketCounts): NodeJS.Timeout {
  const sweeper = setInterval(() => sweepSockets(states, limits, counts), Math.max(50, Math.min(1000, limits.idleTimeoutMs / 4)));
  sweeper.unref();
  return sweeper;
}
