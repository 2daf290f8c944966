// POST /api/v1/auth/metrics/app: this instance's metrics series (format in src/metrics/query.ts).

import { Hono } from 'hono';
import { parseMetricsAppQuery, QueryError, type MetricsAppQuery } from '../../metrics/query.js';
import type { AppEnv } from '../app-env.js';
import { requireOrg } from '../auth-guard.js';
import { HttpError } from '../errors.js';
import { readJsonBody } from '../json-body.js';

/** Mounted at /api/v1/auth/metrics/app, behind the auth guard (on the server and on the console, src/console/app.ts). */
export function metricsAppRoutes(deps: { metrics: { answer(query: MetricsAppQuery): Promise<string> } }): Hono<AppEnv> {
  return new Hono<AppEnv>().post('/', async (c) => {
    let query: MetricsAppQuery;
    try {
      query = parseMetricsAppQuery(await readJsonBody(c));
    } catch (e) {
      throw e instanceof QueryError ? new HttpError(400, e.message) : e;
    }
    for (const org of new Set(query.instances.map((f) => f.apporg))) requireOrg(c.get('user'), org);
    // built off the event loop (MetricsQueryRunner), already JSON
    return c.body(await deps.metrics.answer(query), 200, { 'Content-Type': 'application/json' });
  });
}
