// GET /metrics: the Prometheus text exposition of src/server/prometheus.ts's registry. It names the Node
// version and process figures: --metrics-access loopback or admin keeps it from other hosts.

import { Hono, type MiddlewareHandler } from 'hono';
import type { MetricsAccess } from '../../config.js';
import { isLoopback, requireAdmin } from '../admin-auth.js';
import { HttpError } from '../errors.js';
import { registry } from '../prometheus.js';
import { clientAddress } from '../request-trace.js';

export interface PrometheusRouteDeps {
  /** Default 'open'. */
  access?: MetricsAccess;
  adminKey?: string;
}

/** --metrics-access as middleware: open, loopback clients only, or the admin only. */
function metricsAccess(deps: PrometheusRouteDeps): MiddlewareHandler {
  switch (deps.access ?? 'open') {
    case 'admin':
      return requireAdmin(deps.adminKey, { what: 'metrics reads' });
    case 'loopback':
      return async (c, next) => {
        if (!isLoopback(clientAddress(c))) throw new HttpError(403, 'metrics are served to this machine only (loopback): see --metrics-access');
        await next();
      };
    case 'open':
      return async (_c, next) => next();
  }
}

/** Mounted at /metrics. */
export function prometheusRoutes(deps: PrometheusRouteDeps = {}): Hono {
  return new Hono().get('/', metricsAccess(deps), async (c) => c.body(await registry.metrics(), 200, { 'Content-Type': registry.contentType }));
}
