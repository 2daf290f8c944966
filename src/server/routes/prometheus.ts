// GET /metrics: the Prometheus text exposition of src/server/prometheus.ts's registry.

import type { Hono } from 'hono';
import { registry } from '../prometheus.js';
import { resource } from '../routing.js';

export function registerPrometheusRoutes(app: Hono): void {
  resource(app, '/metrics', {
    GET: async (c) => c.body(await registry.metrics(), 200, { 'Content-Type': registry.contentType }),
  });
}
