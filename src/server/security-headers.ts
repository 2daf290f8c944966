// Headers on every answer: HSTS, no MIME sniffing, and no caching of anything the API
// returns (login tokens, face crops from /trainer/export/, results), unless a route chose its own Cache-Control.

import type { MiddlewareHandler } from 'hono';
import { headersBeforeAnswer } from './answer-headers.js';

export const SECURITY_HEADERS = {
  'Strict-Transport-Security': 'max-age=31536000',
  'X-Content-Type-Options': 'nosniff',
} as const;

export function securityHeaders(): MiddlewareHandler {
  return async (c, next) => {
    // Cache-Control is only a default: a route's own c.header() or response headers replace it.
    await headersBeforeAnswer(c, next, { ...SECURITY_HEADERS, 'Cache-Control': 'no-store' }, ['Cache-Control']);
  };
}
