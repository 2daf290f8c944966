// 405 and OPTIONS for the API's paths, on hono's method-not-allowed middleware: a request whose path is a route
// of `api` but whose method is not answers 405 with Allow and the JSON error body; OPTIONS answers 204 with Allow.
// Allow lists the route's methods (GET brings HEAD) and OPTIONS. Paths outside `api` stay 404s.

import type { Hono, MiddlewareHandler } from 'hono';
import { methodNotAllowed } from 'hono/method-not-allowed';
import { errorResponse } from './errors.js';
import { requestPath } from './request-trace.js';

export function allowedMethods(api: Hono): MiddlewareHandler {
  return methodNotAllowed({
    app: api,
    onMethodNotAllowed: (c, methods) => {
      const allow = [...methods, 'OPTIONS'].join(', ');
      if (c.req.method === 'OPTIONS') return c.body(null, 204, { Allow: allow });
      return errorResponse(c, 405, `method ${c.req.method} not allowed on ${requestPath(c)}; allowed: ${allow}`, { Allow: allow });
    },
  });
}
