// The text fields of a /trainer request that carries no image (remove, move, train): query string, then the body
// (urlencoded, multipart or JSON) wins.

import type { Context } from 'hono';
import { HttpError } from '../errors.js';
import { mediaType, readFormParts } from '../image-input.js';

/** Text fields of a request without an image: query string, then the body (urlencoded, multipart or JSON) wins. */
export async function readFields(c: Context): Promise<Map<string, string>> {
  const fields = new Map<string, string>(Object.entries(c.req.query()));
  const type = mediaType(c.req.header('content-type'));
  try {
    if (type === 'application/x-www-form-urlencoded' || type === 'multipart/form-data') {
      // streamed and bounded (form-body.ts): a form of many parts is refused, not parsed whole
      const form = await readFormParts(c);
      for (const [k, v] of form?.fields ?? []) fields.set(k, v);
    } else if (type === 'application/json') {
      const body: unknown = await c.req.json();
      if (typeof body !== 'object' || body === null || Array.isArray(body)) throw new Error('the JSON body must be an object');
      for (const [k, v] of Object.entries(body)) {
        if (typeof v === 'string' || typeof v === 'number') fields.set(k, String(v));
      }
    } else if (type !== '') {
      throw new HttpError(415, `unsupported Content-Type '${type}'; send subject (and id) as form fields, JSON or query parameters`);
    }
  } catch (e) {
    if (e instanceof HttpError) throw e;
    throw new HttpError(400, `malformed request body: ${(e as Error).message}`);
  }
  return fields;
}
