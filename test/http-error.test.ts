// One error mechanism: HttpError is Hono's HTTPException carrying edgecv's JSON error body, so Hono itself answers
// it as the apps' error handler does. And the server's context variables are typed per app (AppEnv), not added to
// every Hono app of the process (`npm test` typechecks this file: the @ts-expect-error below must hold).

import { Hono } from 'hono';
import { HTTPException } from 'hono/http-exception';
import { describe, expect, it } from 'vitest';
import type { AppEnv } from '../src/server/app-env.js';
import { onError } from '../src/server/error-handler.js';
import { HttpError } from '../src/server/errors.js';

async function answer(app: Hono): Promise<{ status: number; retryAfter: string | null; body: unknown }> {
  const res = await app.request('/');
  return { status: res.status, retryAfter: res.headers.get('retry-after'), body: await res.json() };
}

describe('HttpError', () => {
  const thrower = () =>
    new Hono().get('/', () => {
      throw new HttpError(429, 'slow down', { 'Retry-After': '7' });
    });
  const expected = { status: 429, retryAfter: '7', body: { success: 'false', error: 'slow down' } };

  it('is an HTTPException, which Hono answers with the JSON error body, status and headers', async () => {
    const e = new HttpError(429, 'slow down');
    expect(e).toBeInstanceOf(HTTPException);
    expect(e).toMatchObject({ name: 'HttpError', status: 429, message: 'slow down', headers: {} });
    expect(await answer(thrower())).toEqual(expected);
  });

  it("gets the same answer from the apps' error handler", async () => {
    const app = thrower();
    app.onError(onError);
    expect(await answer(app)).toEqual(expected);
  });
});

describe('context variables', () => {
  it('are typed on the apps that use them, not on every Hono app', async () => {
    const typed = new Hono<AppEnv>().get('/', (c) => {
      c.set('tracid', 'abc');
      return c.text(c.get('tracid'));
    });
    expect(await (await typed.request('/')).text()).toBe('abc');
    // @ts-expect-error a plain Hono app has no `tracid`: only Hono<AppEnv> apps do
    const plain = new Hono().get('/', (c) => c.text(String(c.get('tracid'))));
    expect(await (await plain.request('/')).text()).toBe('undefined');
  });
});
