// Guards /api/v1/auth/*: a valid `Authorization: Bearer <token>` or 401. Organization checks (403) are
// made by each route, which knows which organization's data it serves.

import type { MiddlewareHandler } from 'hono';
import { AuthError, type AuthService } from '../auth/auth-service.js';
import type { AppEnv } from './app-env.js';
import { HttpError } from './errors.js';

/** HttpError for an AuthError: 401 with WWW-Authenticate, 429 with Retry-After. */
export function authHttpError(e: AuthError): HttpError {
  if (e.status === 429) return new HttpError(429, e.message, { 'Retry-After': String(e.retryAfterSeconds ?? 60) });
  return new HttpError(401, e.message, { 'WWW-Authenticate': 'Bearer realm="edgecv"' });
}

export function requireUser(auth: AuthService): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    try {
      c.set('user', await auth.authenticate(c.req.header('authorization')));
    } catch (e) {
      throw e instanceof AuthError ? authHttpError(e) : e;
    }
    await next();
  };
}

/** 403 unless the logged-in user may read `org`'s data. */
export function requireOrg(user: { username: string; orgs: string[] }, org: string): void {
  if (!user.orgs.includes(org)) {
    throw new HttpError(403, `user '${user.username}' may not read data of organization '${org}'`);
  }
}
