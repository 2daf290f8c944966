// Compressed request bodies are refused with 415 (RFC 7694): nothing here inflates them, and a body labelled
// gzip that is not gzip must not be taken as the plain image either. Images are compressed already.

import type { MiddlewareHandler } from 'hono';
import { HttpError } from './errors.js';

export function refuseContentEncoding(): MiddlewareHandler {
  return async (c, next) => {
    const encoding = c.req.header('content-encoding')?.trim().toLowerCase();
    if (encoding !== undefined && encoding !== '' && encoding !== 'identity') {
      throw new HttpError(415, `Content-Encoding '${encoding}' is not supported: send the body uncompressed`, {
        'Accept-Encoding': 'identity',
      });
    }
    await next();
  };
}
