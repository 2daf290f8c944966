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

/**
 * One application instance filter: an app key, optionally narrowed by its cluster and cloudlet
 * (`appinsts[]` entries with a `cluster_inst_key`, as the platform's API takes them).
 */
export interface InstanceFilter {
  apporg: string;
  app: string;
  ver: string;
  cluster?: string;
  clusterorg?: string;
  cloudlet?: string;
  cloudletorg?: string;
}

export interface MetricsAppQuery {
  /** The region and the first instance filter's app. */
  app: AppFilter;
  /** Every instance filter of the request (appinst, appinsts[]): an instance matching any of them answers. */
  instances: InstanceFilter[];
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

function optionalString(v: unknown, name: string): string | undefined {
  if (v === undefined || v === null || v === '') return undefined;
  if (typeof v !== 'string') throw new QueryError(`${name} must be a string`);
  return v;
}

function optionalRecord(v: unknown, name: string): Record<string, unknown> {
  if (v === undefined || v === null) return {};
  if (!isRecord(v)) throw new QueryError(`${name} must be an object`);
  return v;
}

/** {"app_key":{...},"cluster_inst_key":{"cluster_key":{"name"},"organization","cloudlet_key":{"name","organization"}}} */
function instanceFilter(appinst: unknown, where: string): InstanceFilter {
  const key = isRecord(appinst) ? appinst['app_key'] : undefined;
  if (!isRecord(key)) throw new QueryError(`${where}.app_key is required: {"appinst":{"app_key":{"organization":...,"name":...,"version":...}}}`);
  const filter: InstanceFilter = {
    apporg: requiredString(key['organization'], `${where}.app_key.organization`),
    app: requiredString(key['name'], `${where}.app_key.name`),
    ver: requiredString(key['version'], `${where}.app_key.version`),
  };
  const clusterInst = optionalRecord((appinst as Record<string, unknown>)['cluster_inst_key'], `${where}.cluster_inst_key`);
  const narrowing = {
    cluster: optionalString(
      optionalRecord(clusterInst['cluster_key'], `${where}.cluster_inst_key.cluster_key`)['name'],
      `${where}.cluster_inst_key.cluster_key.name`,
    ),
    clusterorg: optionalString(clusterInst['organization'], `${where}.cluster_inst_key.organization`),
    cloudlet: optionalString(
      optionalRecord(clusterInst['cloudlet_key'], `${where}.cluster_inst_key.cloudlet_key`)['name'],
      `${where}.cluster_inst_key.cloudlet_key.name`,
    ),
    cloudletorg: optionalString(
      optionalRecord(clusterInst['cloudlet_key'], `${where}.cluster_inst_key.cloudlet_key`)['organization'],
      `${where}.cluster_inst_key.cloudlet_key.organization`,
    ),
  };
  for (const [k, v] of Object.entries(narrowing)) if (v !== undefined) filter[k as 'cluster'] = v;
  return filter;
}

/** At most this many entries in appinsts[]. */
export const MAX_APPINSTS = 100;

/** Checks a request body; throws QueryError with what is wrong. */
export function parseMetricsAppQuery(body: unknown): MetricsAppQuery {
  if (!isRecord(body)) throw new QueryError('the body must be a JSON object');
  const instances: InstanceFilter[] = [];
  if (body['appinst'] !== undefined || body['appinsts'] === undefined) instances.push(instanceFilter(body['appinst'], 'appinst'));
  const list = body['appinsts'];
  if (list !== undefined && list !== null) {
    if (!Array.isArray(list) || list.length > MAX_APPINSTS)
      throw new QueryError(`appinsts must be a list of at most ${MAX_APPINSTS} appinst objects`);
    list.forEach((entry, i) => instances.push(instanceFilter(entry, `appinsts[${i}]`)));
  }
  if (instances.length === 0)
    throw new QueryError('appinst.app_key is required: {"appinst":{"app_key":{"organization":...,"name":...,"version":...}}}');
  const first = instances[0]!;
  const app: AppFilter = { region: requiredString(body['region'], 'region'), apporg: first.apporg, app: first.app, ver: first.ver };
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
  return { app, instances, selectors: selectors(body['selector']), window };
}

/** True when `app` names this instance. */
export function isThisInstance(app: AppFilter, id: InstanceIdentity): boolean {
  return app.region === id.region && app.apporg === id.appOrg && app.app === id.appname && app.ver === id.appvers;
}

/** True when the instance filter `f` selects the instance `id` (region aside). */
export function instanceMatches(f: InstanceFilter, id: InstanceIdentity): boolean {
  return (
    f.apporg === id.appOrg &&
    f.app === id.appname &&
    f.ver === id.appvers &&
    (f.cluster === undefined || f.cluster === id.cluster) &&
    (f.clusterorg === undefined || f.clusterorg === id.clusterorg) &&
    (f.cloudlet === undefined || f.cloudlet === id.cloudlet) &&
    (f.cloudletorg === undefined || f.cloudletorg === id.cloudletorg)
  );
}

/**
 * The answer: one Series per selector with the rows the store holds for the app. An app this instance is
 * not gets an empty Series list, never another app's rows.
 */
export function answerMetricsApp(store: MetricsStore, identity: InstanceIdentity, q: MetricsAppQuery): MetricsAppAnswer {
  const filter = q.app.region === identity.region ? q.instances.find((f) => instanceMatches(f, identity)) : undefined;
  if (!filter) return { data: [{ Series: [] }] };
  const app: AppFilter = { region: q.app.region, apporg: filter.apporg, app: filter.app, ver: filter.ver };
  const series = q.selectors.map((selector): Series => ({
    name: seriesName(selector),
    columns: seriesColumns(selector),
    values: store.rows(selector, app, q.window).map((r) => [formatRfc3339Nano(r.time), ...TAG_COLUMNS.map((c) => r.tags[c]), ...r.values]),
  }));
  return { data: [{ Series: series }] };
}
