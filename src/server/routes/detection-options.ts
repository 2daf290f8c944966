// Per-request options of the detection routes, from the query string or a form field of the request.

import type { Context } from 'hono';
import { HttpError } from '../errors.js';

/**
 * The 0..1 number a client gave as `name` (query parameter first, then form field), or undefined.
 * Throws HttpError 400 on anything else.
 */
export function unitParameter(c: Context, fields: Map<string, string>, name: string): number | undefined {
  const raw = c.req.query(name) ?? fields.get(name);
  if (raw === undefined || raw.trim() === '') return undefined;
  const value = Number(raw);
  if (!Number.isFinite(value) || value < 0 || value > 1) {
    throw new HttpError(400, `${name} must be a number from 0 to 1 (got ${JSON.stringify(raw)})`);
  }
  return value;
}
