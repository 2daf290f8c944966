// The error handlers of the app and of the sub-apps that answer errors in their own shape (objects, DeepStack):
// all map a thrown value the same way, and log what is the server's fault.

import type { Context } from 'hono';
import { clientAbortError } from './client-abort.js';
import { errorResponse, toHttpError, type HttpError } from './errors.js';
import { requestPath } from './request-trace.js';

/** The HttpError answering `err` (a body read that failed because the client left is the client's doing). */
export function requestError(err: unknown, c: Context): HttpError {
  const e = toHttpError(clientAbortError(c) ?? err);
  if (e.status >= 500 && e.status !== 503) console.error(`[edgecv] ${c.req.method} ${requestPath(c)} failed:`, err);
  return e;
}

/** Hono onError handler: {"success":"false","error":"..."} with the error's status and headers. */
export function onError(err: Error, c: Context): Response {
  const e = requestError(err, c);
  return errorResponse(c, e.status, e.message, e.headers);
}
