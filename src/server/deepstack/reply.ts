// Answers of the DeepStack-compatible routes: JSON booleans, a `duration` (always 0, as DeepStack's own server
// sends it), and an explicit Content-Length: Blue Iris fails on a chunked JSON answer.
//   success: {"success":true, ..., "duration":0}
//   error:   {"success":false,"error":"...","duration":0} with 400, 401, 403, 404, 413, 503 or 500

import type { Context, Handler } from 'hono';
import type { ContentfulStatusCode } from 'hono/utils/http-status';
import { engineErrorCode } from '../engine-types.js';
import { toHttpError } from '../errors.js';

/** DeepStack's words for a request without a usable image part. */
export const NO_IMAGE = 'No valid image file found';
/** DeepStack's words for bytes that are not a decodable PNG/JPEG. */
export const INVALID_IMAGE = 'invalid image file';

export function dsReply(c: Context, body: object, status: ContentfulStatusCode = 200, headers: Record<string, string> = {}): Response {
  const text = JSON.stringify({ ...body, duration: 0 });
  return c.body(text, status, {
    ...headers,
    'Content-Type': 'application/json; charset=UTF-8',
    'Content-Length': String(Buffer.byteLength(text)),
  });
}

/** The DeepStack error answer for anything a handler throws; image errors get DeepStack's own messages. */
export function dsErrorReply(c: Context, err: unknown): Response {
  const code = engineErrorCode(err);
  const e = toHttpError(err);
  let message = e.message;
  if (code === 'INVALID_IMAGE' || code === 'UNSUPPORTED_FORMAT') message = INVALID_IMAGE;
  else if (e.status === 400 && message.startsWith('missing image')) message = NO_IMAGE;
  if (e.status >= 500 && e.status !== 503) console.error(`[edgecv] ${c.req.method} ${c.req.path} failed:`, err);
  return dsReply(c, { success: false, error: message }, e.status, e.headers);
}

/** A handler whose every failure answers in the DeepStack error shape. */
export function dsHandler(work: (c: Context) => Promise<Response>): Handler {
  return async (c) => {
    try {
      return await work(c);
    } catch (e) {
      return dsErrorReply(c, e);
    }
  };
}
