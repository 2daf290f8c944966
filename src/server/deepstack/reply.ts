// Answers of the DeepStack-compatible routes: JSON booleans, a `duration` (always 0, as DeepStack's own server
// sends it), and an explicit Content-Length: Blue Iris fails on a chunked JSON answer.
//   success: {"success":true, ..., "duration":0}
//   error:   {"success":false,"error":"...","duration":0} with 400, 401, 403, 404, 413, 503 or 500

import type { Context } from 'hono';
import type { ContentfulStatusCode } from 'hono/utils/http-status';
import { engineErrorCode } from '../engine-types.js';
import { requestError } from '../error-handler.js';

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

/** The DeepStack sub-app's onError: image errors get DeepStack's own messages. */
export function dsErrorReply(err: Error, c: Context): Response {
  const code = engineErrorCode(err);
  const e = requestError(err, c);
  let message = e.message;
  if (code === 'INVALID_IMAGE' || code === 'UNSUPPORTED_FORMAT') message = INVALID_IMAGE;
  else if (e.status === 400 && message.startsWith('missing image')) message = NO_IMAGE;
  return dsReply(c, { success: false, error: message }, e.status, e.headers);
}
