// POST /api/v1/auth/metrics/app: the request body, checked, and the answer built from the store.
//   {"data":[{"Series":[{"name":"appinst-cpu","columns":["time","app",...,"cpu"],"values":[[...], ...]}]}]}
// One Series per selector, in the order asked; rows newest first; `time` RFC 3339 with 9 fraction digits.

import type { InstanceIdentity } from './identity.js';
import { SELECTORS, isSelector, seriesColumns, seriesName, TAG_COLUMNS, type Selector } from './selectors.js';
import type { AppFilter, MetricsStore, RowWindow } from './store.js';
import { formatRfc3339Nano, parseRfc3339 } from './time.js';
import { isRecord } from '../engine/options.js';

export class QueryError extends Error {
  override name = 'QueryError';
}

export interface MetricsAppQuery {
  app: AppFilter;
  selectors: Selector[];
  window: RowWindow;
}

export type SeriesValue = string | number;

export interface Series {
  name: string;
  columns: string[];
  values: SeriesValue[][];
}

export interface MetricsAppAnswer {
  data: { Series: Series[] }[];
}

function requiredString(v: unknown, name: string): string {
  if (typeof v !== 'string' || v.trim() === '') throw new QueryError(`${name} is required (a non-empty string)`);
  return v;
}

function positiveInteger(v: unknown, name: string): number | undefined {
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < 1) {
    throw new QueryError(`${name} must be a positive integer (got ${JSON.stringify(v)})`);
  }
  return v;
}

function time(v: unknown, name: string): bigint | undefined {
  if (v === undefined || v === null || v === '') return undefined;
  const ns = typeof v === 'string' ? parseRfc3339(v) : null;
  if (ns === null) {
    throw new QueryError(`${name} must be an RFC 3339 date-time such as 2026-11-21T10:00:00Z (got ${JSON.stringify(v)})`);
  }
  return ns;
}

function selectors(v: unknown): Selector[] {
  if (v === undefined || v === null) return [...SELECTORS];
  if (typeof v !== 'string') throw new QueryError(`selector must be a string: one of ${SELECTORS.join(', ')}, or a comma-separated list`);
  const names = v
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
  if (names.length === 0 || (names.length === 1 && names[0] === '*')) return [...SELECTORS];
  const out: Selector[] = [];
  for (const name of names) {
    if (!isSelector(name)) throw new QueryError(`unknown selector '${name}': use ${SELECTORS.join(', ')}, or a comma-separated list`);
    if (!out.includes(name)) out.push(name);
  }
  return out;
}

/** Checks a request body; throws QueryError with what is wrong. */
export function parseMetricsAppQuery(body: unknown): MetricsAppQuery {
  if (!isRecord(body)) throw new QueryError('the body must be a JSON object');
  const appinst = body['appinst'];
  const key = isRecord(appinst) ? appinst['app_key'] : undefined;
  if (!isRecord(key)) throw new QueryError('appinst.app_key is required: {"appinst":{"app_key":{"organization":...,"name":...,"version":...}}}');
  const app: AppFilter = {
    region: requiredString(body['region'], 'region'),
    apporg: requiredString(key['organization'], 'appinst.app_key.organization'),
    app: requiredString(key['name'], 'appinst.app_key.name'),
    ver: requiredString(key['version'], 'appinst.app_key.version'),
  };
  const window: RowWindow = {};
  const start = time(body['starttime'], 'starttime');
  const end = time(body['endtime'], 'endtime');
  if (start !== undefined && end !== undefined && start > end) throw new QueryError('starttime is after endtime');
  const last = positiveInteger(body['last'], 'last');
  const numsamples = positiveInteger(body['numsamples'], 'numsamples');
  if (start !== undefined) window.start = start;
  if (end !== undefined) window.end = end;
  if (last !== undefined) window.last = last;
  if (numsamples !== undefined) window.numsamples = numsamples;
  return { app, selectors: selectors(body['selector']), window };
}

/** True when `app` names this instance. */
export function isThisInstance(app: AppFilter, id: InstanceIdentity): boolean {
  return app.region === id.region && app.apporg === id.appOrg && app.app === id.appname && app.ver === id.appvers;
}

/**
 * The answer: one Series per selector with the rows the store holds for the app. An app this instance is
 * not gets an empty Series list, never another app's rows.
 */
export function answerMetricsApp(store: MetricsStore, identity: InstanceIdentity, q: MetricsAppQuery): MetricsAppAnswer {
  if (!isThisInstance(q.app, identity)) return { data: [{ Series: [] }] };
  const series = q.selectors.map((selector): Series => ({
    name: seriesName(selector),
    columns: seriesColumns(selector),
    values: store
      .rows(selector, q.app, q.window)
      .map((r) => [formatRfc3339Nano(r.time), ...TAG_COLUMNS.map((c) => r.tags[c]), ...r.values]),
  }));
  return { data: [{ Series: series }] };
}
