// Headers on every answer: HSTS, no MIME sniffing, and no caching of anything the API
// returns (login tokens, face crops from /trainer/export/, results), unless a route chose its own Cache-Control.

import type { MiddlewareHandler } from 'hono';

export const SECURITY_HEADERS = {
  'Strict-Transport-Security': 'max-age=31536000',
  'X-Content-Type-Options': 'nosniff',
} as const;

export function securityHeaders(): MiddlewareHandler {
  return async (c, next) => {
    await next();
    for (const [k, v] of Object.entries(SECURITY_HEADERS)) c.header(k, v);
    if (!c.res.headers.has('Cache-Control')) c.header('Cache-Control', 'no-store');
  };
}
