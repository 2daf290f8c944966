// GET/HEAD /test/ : connectivity check.

import { Hono } from 'hono';

/** Mounted at /test. */
export function testRoutes(): Hono {
  return new Hono().get('/', (c) => c.json({ success: 'true' }));
}
