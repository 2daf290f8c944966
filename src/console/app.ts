// The fleet console's HTTP application: the platform's API over every instance of a region. It serves the
// same login and metrics routes as an instance (the same route modules), with the metrics answered from
// InfluxDB (FleetMetrics) instead of the instance's own SQLite store; its audit trail and GET /metrics
// (loopback only) record every request as serve's do.

import { Hono } from 'hono';
import type { AuditLog } from '../audit/audit-log.js';
import type { AuthService } from '../auth/auth-service.js';
import { serverApp } from '../server/app.js';
import { requireUser } from '../server/auth-guard.js';
import { loginRoutes } from '../server/routes/login.js';
import { metricsAppRoutes } from '../server/routes/metrics-app.js';
import { prometheusRoutes } from '../server/routes/prometheus.js';
import type { FleetMetrics } from './fleet-metrics.js';

export const CONSOLE_BODY_LIMIT = 64 * 1024;

export interface ConsoleDeps {
  auth: AuthService;
  metrics: Pick<FleetMetrics, 'answer'>;
  /** Largest request body (default CONSOLE_BODY_LIMIT: its requests are small JSON). */
  bodyLimit?: number;
  /** The audit trail (a line per request, logins failed or not), as serve keeps one. */
  audit?: AuditLog;
}

export function createConsoleApp(deps: ConsoleDeps): Hono {
  const api = new Hono().route('/api/v1/login', loginRoutes(deps));
  // Not chained: the guard's variables (AppEnv) are for the routes behind it, and serverApp() takes a plain Hono.
  api.use('/api/v1/auth/*', requireUser(deps.auth));
  api.route('/api/v1/auth/metrics/app', metricsAppRoutes(deps));
  // the request counters (logins by status among them), to this machine only: the console has no admin key
  api.route('/metrics', prometheusRoutes({ access: 'loopback' }));
  return serverApp({ config: { bodyLimit: deps.bodyLimit ?? CONSOLE_BODY_LIMIT }, ops: { audit: deps.audit } }, api);
}
