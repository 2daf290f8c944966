// First middleware of the app: gives every request a trace id (`tracid` response header), and once the
// response is ready records it in the Prometheus request metrics and in the audit trail.

import { randomBytes } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { Context, MiddlewareHandler } from 'hono';
import { matchedRoutes } from 'hono/route';
import { getPath } from 'hono/utils/url';
import type { AuditLog } from '../audit/audit-log.js';
import { headersBeforeAnswer } from './answer-headers.js';
import type { AppEnv } from './app-env.js';
import { observeHttpRequest } from './prometheus.js';

export const TRACE_HEADER = 'tracid';

export function newTraceId(): string {
  return randomBytes(16).toString('hex');
}

/** The trace id of each Node request the app has taken, so that an answer written on its raw socket carries it. */
const traceIds = new WeakMap<IncomingMessage, string>();

export function traceIdOf(incoming: IncomingMessage): string | undefined {
  return traceIds.get(incoming);
}

/** The route pattern that matched (without trailing slash), or 'unmatched': a bounded label set. */
export function routeLabel(c: Context): string {
  const route = matchedRoutes(c)
    .map((r) => r.path)
    .filter((p) => p !== '*' && p !== '/*')
    .at(-1);
  if (route === undefined) return 'unmatched';
  return route.length > 1 ? route.replace(/\/+$/, '') : route;
}

/** The path as the client sent it: c.req.path has lost its trailing slash (the app is built with strict: false). */
export function requestPath(c: Context): string {
  return getPath(c.req.raw);
}

/** The peer's IP address on a real socket ('' for in-process requests such as app.request()). */
export function clientAddress(c: Context): string {
  const env = c.env as { incoming?: { socket?: { remoteAddress?: string } } } | undefined;
  const address = env?.incoming?.socket?.remoteAddress ?? '';
  return address.startsWith('::ffff:') ? address.slice(7) : address;
}

export function requestTrace(opts: { audit?: AuditLog }): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    const tracid = newTraceId();
    c.set('tracid', tracid);
    const incoming = (c.env as { incoming?: IncomingMessage } | undefined)?.incoming;
    if (incoming) traceIds.set(incoming, tracid);
    const t0 = performance.now();
    await headersBeforeAnswer(c, next, { [TRACE_HEADER]: tracid });
    const ms = performance.now() - t0;
    const route = routeLabel(c);
    observeHttpRequest(c.req.method, route, c.res.status, ms / 1000);
    // A balancer checks health every second or two: a passing check is counted, but it is not an event worth an
    // audit line (a failing one is).
    if (route.startsWith('/health/') && c.res.status < 300) return;
    opts.audit?.write({
      tracid,
      method: c.req.method,
      route,
      path: requestPath(c),
      status: c.res.status,
      durationMs: Math.round(ms * 1000) / 1000,
      client: clientAddress(c),
      user: c.get('user')?.username ?? null,
    });
  };
}
