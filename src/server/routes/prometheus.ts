// GET /metrics: the Prometheus text exposition of src/server/prometheus.ts's registry. It names the Node
// version and process figures: --metrics-access loopback or admin keeps it from other hosts.

import type { Hono } from 'hono';
import type { MetricsAccess } from '../../config.js';
import { adminCheck, clientAddress, isLoopback } from '../admin-auth.js';
import { HttpError } from '../errors.js';
import { registry } from '../prometheus.js';
import { resource } from '../routing.js';

export interface PrometheusRouteDeps {
  /** Default 'open'. */
  access?: MetricsAccess;
  adminKey?: string;
}

export function registerPrometheusRoutes(app: Hono, deps: PrometheusRouteDeps = {}): void {
  const access = deps.access ?? 'open';
  const admin = adminCheck(deps.adminKey, 'metrics reads');
  resource(app, '/metrics', {
    GET: async (c) => {
      if (access === 'loopback' && !isLoopback(clientAddress(c))) {
        throw new HttpError(403, 'metrics are served to this machine only (loopback): see --metrics-access');
      }
      if (access === 'admin') admin(c);
      return c.body(await registry.metrics(), 200, { 'Content-Type': registry.contentType });
    },
  });
}
