// Who may change the gallery. With an admin key configured (--admin-key), a request must carry it as
// `Authorization: Bearer <key>` or `X-API-Key: <key>`; the comparison is constant-time (SHA-256 digests of both,
// compared with crypto.timingSafeEqual, so neither the content nor the length of the key leaks through timing).
// With no key configured, only loopback clients may (127.0.0.0/8, ::1): an unknown client address counts as remote.

import { createHash, timingSafeEqual } from 'node:crypto';
import { getConnInfo } from '@hono/node-server/conninfo';
import type { Context } from 'hono';
import { HttpError } from './errors.js';

const digest = (s: string) => createHash('sha256').update(s, 'utf8').digest();

/** A constant-time test of a presented key against `secret`. */
export function keyMatcher(secret: string): (presented: string) => boolean {
  const expected = digest(secret);
  return (presented) => timingSafeEqual(digest(presented), expected);
}

/** The key the request presents in a header (Bearer or X-API-Key), if any. */
export function presentedKey(c: Context): string | undefined {
  const auth = c.req.header('authorization');
  const bearer = auth ? /^Bearer\s+(.+)$/i.exec(auth.trim()) : null;
  if (bearer) return bearer[1]!.trim();
  const apiKey = c.req.header('x-api-key');
  return apiKey === undefined ? undefined : apiKey.trim();
}

export function isLoopback(address: string | undefined): boolean {
  if (!address) return false;
  const v4 = address.startsWith('::ffff:') ? address.slice(7) : address;
  return v4 === '::1' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(v4);
}

/** The client's address from the socket; undefined without one (e.g. app.request() in tests). */
export function clientAddress(c: Context): string | undefined {
  try {
    return getConnInfo(c).remote.address;
  } catch {
    return undefined;
  }
}

/**
 * A check to run first in every gallery-changing handler (and on /metrics with --metrics-access admin):
 * throws HttpError 401/403 unless the caller is the admin. `what` names the guarded thing in the errors.
 * `formKey` is a key the request's form carries (the DeepStack routes' api_key / admin_key), used when no header does.
 */
export function adminCheck(adminKey: string | undefined, what = 'gallery changes'): (c: Context, formKey?: string) => void {
  const matches = adminKey ? keyMatcher(adminKey) : undefined;
  return (c, formKey) => {
    if (matches) {
      const key = presentedKey(c) || formKey?.trim();
      if (key === undefined || key === '') {
        throw new HttpError(401, `${what} need the admin key: send it as "Authorization: Bearer <key>" or "X-API-Key: <key>"`, {
          'WWW-Authenticate': 'Bearer',
        });
      }
      if (!matches(key)) throw new HttpError(401, 'wrong admin key', { 'WWW-Authenticate': 'Bearer' });
    } else if (!isLoopback(clientAddress(c))) {
      throw new HttpError(403, `${what} are allowed from this machine only (loopback), unless the server is started with --admin-key`);
    }
  };
}
