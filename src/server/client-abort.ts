// A client that goes away in the middle of its body is not a server error: the failed body read is answered
// (and counted, and audited) as 400, or as what http-guards.ts cut it for (408 slow, 400 bad chunking), not 500.

import type { IncomingMessage } from 'node:http';
import type { Context } from 'hono';
import { HttpError } from './errors.js';
import { whyCut } from './http-guards.js';

/** The HttpError for a request whose client left or was cut before its body was complete; else null. */
export function clientAbortError(c: Context): HttpError | null {
  const incoming = (c.env as { incoming?: IncomingMessage } | undefined)?.incoming;
  if (incoming === undefined || incoming.complete) return null;
  const cut = whyCut(incoming);
  if (cut) return new HttpError(cut.status, cut.message);
  if (incoming.destroyed || incoming.readableAborted || incoming.socket?.destroyed) {
    return new HttpError(400, 'the client closed the connection before the request body was complete');
  }
  return null;
}
