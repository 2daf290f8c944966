// POST /api/v1/login {"username","password"} -> {"token":"<JWT>"}; 401 when wrong, 429 while throttled.

import { Hono } from 'hono';
import { AuthError, type AuthService } from '../../auth/auth-service.js';
import { MAX_PASSWORD_LENGTH, MAX_USERNAME_LENGTH } from '../../auth/users.js';
import type { AppEnv } from '../app-env.js';
import { authHttpError } from '../auth-guard.js';
import { HttpError } from '../errors.js';
import { readJsonBody } from '../json-body.js';
import { clientAddress } from '../request-trace.js';

/** Mounted at /api/v1/login. */
export function loginRoutes(deps: { auth: AuthService }): Hono<AppEnv> {
  return new Hono<AppEnv>().post('/', async (c) => {
    const body = await readJsonBody(c);
    const { username, password } = (typeof body === 'object' && body !== null ? body : {}) as Record<string, unknown>;
    if (typeof username !== 'string' || username === '' || typeof password !== 'string' || password === '') {
      throw new HttpError(400, 'send {"username":"...","password":"..."}');
    }
    // Checked before anything keeps or hashes them: no user can have a longer name, and the limiter
    // would otherwise hold whatever a failed try sent for its whole window.
    if (username.length > MAX_USERNAME_LENGTH) throw new HttpError(400, `username too long: at most ${MAX_USERNAME_LENGTH} characters`);
    if (password.length > MAX_PASSWORD_LENGTH) throw new HttpError(400, `password too long: at most ${MAX_PASSWORD_LENGTH} characters`);
    try {
      const { token } = await deps.auth.login(username, password, clientAddress(c));
      c.set('user', { username, orgs: [] });
      return c.json({ token });
    } catch (e) {
      throw e instanceof AuthError ? authHttpError(e) : e;
    }
  });
}
