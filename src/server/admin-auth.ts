// Who may change the gallery. With an admin key configured (--admin-key), a request must carry it as
// `Authorization: Bearer <key>` or `X-API-Key: <key>`; the comparison is constant-time (SHA-256 digests of both,
// compared with crypto.timingSafeEqual, so neither the content nor the length of the key leaks through timing).
// With no key configured, only loopback clients may (127.0.0.0/8, ::1): an unknown client address counts as remote.

import { createHash, timingSafeEqual } from 'node:crypto';
import type { Context, MiddlewareHandler } from 'hono';
import { HttpError } from './errors.js';
import { clientAddress } from './request-trace.js';

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

/** Whether `address` (from clientAddress(): '' without a socket) is this machine. */
export function isLoopback(address: string): boolean {
  if (!address) return false;
  const v4 = address.startsWith('::ffff:') ? address.slice(7) : address;
  return v4 === '::1' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(v4);
}

/**
 * Middleware of every gallery-changing route (and of /metrics with --metrics-access admin): 401/403 unless the
 * caller is the admin. `what` names the guarded thing in the errors. `formKey` gives a key the request's form
 * carries (the DeepStack routes' api_key / admin_key), used when no header does.
 */
export function requireAdmin(
  adminKey: string | undefined,
  opts: { what?: string; formKey?: (c: Context) => string | undefined } = {},
): MiddlewareHandler {
  const what = opts.what ?? 'gallery changes';
  const matches = adminKey ? keyMatcher(adminKey) : undefined;
  return async (c, next) => {
    if (matches) {
      const key = presentedKey(c) || opts.formKey?.(c)?.trim();
      if (key === undefined || key === '') {
        throw new HttpError(401, `${what} need the admin key: send it as "Authorization: Bearer <key>" or "X-API-Key: <key>"`, {
          'WWW-Authenticate': 'Bearer',
        });
      }
      if (!matches(key)) throw new HttpError(401, 'wrong admin key', { 'WWW-Authenticate': 'Bearer' });
    } else if (!isLoopback(clientAddress(c))) {
      throw new HttpError(403, `${what} are allowed from this machine only (loopback), unless the server is started with --admin-key`);
    }
    await next();
  };
}
