// The console's metrics query: the same request and answer as an instance's POST /api/v1/auth/metrics/app
// (src/metrics/query.ts), answered from the region's InfluxDB for every instance that matches, with
// InfluxQL in the platform's manner (MobiledgeX edge-cloud-infra, mc/orm/metrics.go):
//   - one statement per selector, GROUP BY the instance tags, ORDER BY time DESC;
//   - last=N: LIMIT N per instance (per instance and port for connections), no time bound unless given;
//   - numsamples=N: the window cut into N equal buckets (GROUP BY time(W, offset)) with cpu the mean,
//     mem and disk the max, network and connections the last value; fill(none): a bucket without
//     samples gives no row (the platform filled with the previous value, inventing samples);
//   - otherwise the default window (the last hour) and at most ROW_LIMIT_PER_INSTANCE rows per instance;
//   - an answer over MAX_ANSWER_ROWS rows is refused with 400 rather than built.
// Rows come back merged into one Series per selector, newest first, tags as columns ("" where InfluxDB
// has none), time with 9 fraction digits and a Z.

import { InfluxAnswerTooLarge, InfluxClient, InfluxError, quoteIdent, quoteString, type InfluxStatementResult } from '../metrics/influx-client.js';
import { INFLUX_TAG_VALUES } from '../metrics/influx-line.js';
import type { InstanceFilter, MetricsAppQuery } from '../metrics/query.js';
import { seriesColumns, seriesName, TAG_COLUMNS, VALUE_COLUMNS, type Selector } from '../metrics/selectors.js';
import { formatRfc3339Nano, msToNs, nowNs, parseRfc3339 } from '../metrics/time.js';
import { HttpError } from '../server/errors.js';

export const DEFAULT_WINDOW_MS = 3600_000;
/** Rows per instance and series at most: 48 h of 10 s samples (the default retention) fit. */
export const ROW_LIMIT_PER_INSTANCE = 20_000;
export const MAX_ANSWER_ROWS = 200_000;

/** How numsamples combines the samples of a bucket, by series. */
export const BUCKET_FUNCTION: Record<Selector, 'mean' | 'max' | 'last'> = {
  cpu: 'mean',
  mem: 'max',
  disk: 'max',
  network: 'last',
  connections: 'last',
};

function filterCondition(f: InstanceFilter): string {
  const pairs: [string, string | undefined][] = [
    ['apporg', f.apporg],
    ['app', f.app],
    ['ver', f.ver],
    ['cluster', f.cluster],
    ['clusterorg', f.clusterorg],
    ['cloudlet', f.cloudlet],
    ['cloudletorg', f.cloudletorg],
  ];
  return `(${pairs
    .filter((p): p is [string, string] => p[1] !== undefined)
    .map(([k, v]) => `${quoteIdent(k)} = ${quoteString(v)}`)
    .join(' AND ')})`;
}

/** numsamples' window (the last hour unless given) and its N buckets of equal width, the first at `start`. */
function buckets(w: MetricsAppQuery['window'], numsamples: number, now: bigint): { start: bigint; end: bigint; width: bigint } {
  const end = w.end ?? now;
  const start = w.start ?? end - msToNs(DEFAULT_WINDOW_MS);
  const n = BigInt(numsamples);
  return { start, end, width: (end - start + 1n + n - 1n) / n };
}

/** The InfluxQL statement of one selector. Exported for the tests and the bench. */
export function selectorStatement(selector: Selector, q: MetricsAppQuery, now: bigint = nowNs(), maxRows = MAX_ANSWER_ROWS): string {
  const tagValues = INFLUX_TAG_VALUES[selector] ?? [];
  const fields = VALUE_COLUMNS[selector].filter((c) => !tagValues.includes(c.name)).map((c) => c.name);
  const groupTags = [...TAG_COLUMNS, ...tagValues].map(quoteIdent).join(', ');
  const where = [`(${q.instances.map(filterCondition).join(' OR ')})`];
  const w = q.window;
  const measurement = quoteIdent(seriesName(selector));

  if (w.numsamples !== undefined) {
    const { start, end, width } = buckets(w, w.numsamples, now);
    where.push(`time >= ${start}`, `time <= ${end}`);
    const offset = ((start % width) + width) % width;
    const fn = BUCKET_FUNCTION[selector];
    const select = fields.map((f) => `${fn}(${quoteIdent(f)}) AS ${quoteIdent(f)}`).join(', ');
    return `SELECT ${select} FROM ${measurement} WHERE ${where.join(' AND ')} GROUP BY time(${width}ns, ${offset}ns), ${groupTags} fill(none) ORDER BY time DESC LIMIT ${w.numsamples}${slimitClause(w.numsamples, maxRows)}`;
  }
  if (w.start !== undefined) where.push(`time >= ${w.start}`);
  else if (w.last === undefined) where.push(`time >= ${(w.end ?? now) - msToNs(DEFAULT_WINDOW_MS)}`);
  if (w.end !== undefined) where.push(`time <= ${w.end}`);
  const limit = Math.min(w.last ?? ROW_LIMIT_PER_INSTANCE, ROW_LIMIT_PER_INSTANCE);
  const slimit = w.last !== undefined ? slimitClause(limit, maxRows) : '';
  return `SELECT ${fields.map(quoteIdent).join(', ')} FROM ${measurement} WHERE ${where.join(' AND ')} GROUP BY ${groupTags} ORDER BY time DESC LIMIT ${limit}${slimit}`;
}

/**
 * With at most `perSeries` rows per series, the series count that keeps an answer within `maxRows`, plus
 * one: InfluxDB returning that many series tells the answer is too large. Undefined when one series may
 * already hold more rows than that (numsamples over maxRows): then only the rows read are counted.
 */
function seriesLimit(perSeries: number, maxRows: number): number | undefined {
  return perSeries > maxRows ? undefined : Math.floor(maxRows / perSeries) + 1;
}

function slimitClause(perSeries: number, maxRows: number): string {
  const limit = seriesLimit(perSeries, maxRows);
  return limit === undefined ? '' : ` SLIMIT ${limit}`;
}

/** Rows per series at most, where the window bounds them (last, numsamples). */
function rowsPerSeries(q: MetricsAppQuery): number | undefined {
  return q.window.numsamples ?? (q.window.last !== undefined ? Math.min(q.window.last, ROW_LIMIT_PER_INSTANCE) : undefined);
}

/** InfluxDB's time range: int64 nanoseconds, less the two values it keeps for itself. */
const INFLUX_MIN_NS = -(2n ** 63n) + 2n;
const INFLUX_MAX_NS = 2n ** 63n - 2n;
/** The longest duration InfluxQL parses (int64 nanoseconds). */
const INFLUX_MAX_DURATION_NS = 2n ** 63n - 1n;
const FILTER_FIELDS: Record<keyof InstanceFilter, string> = {
  apporg: 'app_key.organization',
  app: 'app_key.name',
  ver: 'app_key.version',
  cluster: 'cluster_inst_key.cluster_key.name',
  clusterorg: 'cluster_inst_key.organization',
  cloudlet: 'cluster_inst_key.cloudlet_key.name',
  cloudletorg: 'cluster_inst_key.cloudlet_key.organization',
};

/** What InfluxDB cannot take in a query is the client's error (400 naming the field), not the database's. */
function checkForInflux(q: MetricsAppQuery, now: bigint): void {
  for (const [field, t] of [
    ['starttime', q.window.start],
    ['endtime', q.window.end],
  ] as const) {
    if (t !== undefined && (t < INFLUX_MIN_NS || t > INFLUX_MAX_NS)) {
      throw new HttpError(400, `${field} is outside InfluxDB's time range (1677-09-21T00:12:43.145224194Z to 2262-04-11T23:47:16.854775806Z)`);
    }
  }
  const n = q.window.numsamples;
  const width = n === undefined ? 0n : buckets(q.window, n, now).width;
  // GROUP BY time() takes an int64 count of nanoseconds: InfluxDB answers a longer bucket "invalid duration"
  if (width > INFLUX_MAX_DURATION_NS) {
    throw new HttpError(
      400,
      `starttime to endtime cut into numsamples=${n} buckets makes buckets of ${width} ns, longer than InfluxDB's longest interval (${INFLUX_MAX_DURATION_NS} ns, about 292 years): ask for more numsamples or a shorter window`,
    );
  }
  for (const filter of q.instances) {
    for (const [key, value] of Object.entries(filter) as [keyof InstanceFilter, string | undefined][]) {
      if (value !== undefined && /[\u0000\r\n]/.test(value))
        throw new HttpError(400, `${FILTER_FIELDS[key]} holds a NUL, CR or LF character, which no metrics tag holds`);
    }
  }
}

/** The regions a console answers for: name -> that region's InfluxDB. */
export class FleetMetrics {
  readonly #regions: Map<string, InfluxClient>;
  readonly #log: (message: string) => void;
  readonly #maxRows: number;

  /** `maxAnswerRows`: default MAX_ANSWER_ROWS. */
  constructor(regions: Map<string, InfluxClient>, opts: { log?: (message: string) => void; maxAnswerRows?: number } = {}) {
    this.#regions = regions;
    this.#log = opts.log ?? console.error;
    this.#maxRows = opts.maxAnswerRows ?? MAX_ANSWER_ROWS;
  }

  get regions(): string[] {
    return [...this.#regions.keys()];
  }

  /**
   * The answer to `q` as JSON text; HttpError 400 for an unknown region, a field InfluxDB cannot take or too
   * large an answer, 502 for an answer over the byte cap, 503 when InfluxDB fails or gives no whole answer in time.
   */
  async answer(q: MetricsAppQuery): Promise<string> {
    const client = this.#regions.get(q.app.region);
    if (!client) {
      throw new HttpError(400, `unknown region '${q.app.region}': this console knows ${this.regions.map((r) => `'${r}'`).join(', ')}`);
    }
    const now = nowNs();
    checkForInflux(q, now);
    const results = await this.#fetch(client, q, now);
    // The answer is written as JSON text row by row (an answer can hold 100,000 rows: building arrays of
    // them and stringifying those took longer than InfluxDB took to answer).
    const seriesTexts = q.selectors.map((selector, i): string => {
      const tagValues = INFLUX_TAG_VALUES[selector] ?? [];
      const rows: AnswerRow[] = [];
      const found = results[i]?.series ?? [];
      let groups = 0;
      let lastTags = '';
      for (const s of found) {
        // a chunked answer splits one series into several in a row: they are one group, already in order
        const tagKey = JSON.stringify(s.tags ?? {});
        if (groups === 0 || tagKey !== lastTags) groups++;
        lastTags = tagKey;
        const tags = s.tags ?? {};
        const tagCells = TAG_COLUMNS.map((c) => tags[c] ?? '');
        const tagText = JSON.stringify(tagCells).slice(1, -1);
        // where each value column comes from: a column of the answer, or a tag (the port)
        const sources = VALUE_COLUMNS[selector].map((col) =>
          tagValues.includes(col.name) ? String(Number(tags[col.name] ?? 0)) : s.columns.indexOf(col.name),
        );
        const port = tagValues.length > 0 ? String(Number(tags[tagValues[0]!] ?? 0)).padStart(5, '0') : '';
        // within a time: by instance, then port, as an instance's own answer is ordered
        const order = `${tagCells.join('\u0000')}\u0000${port}`;
        for (const v of s.values) {
          const time = rfc3339Nano(String(v[0]));
          if (time === null) continue;
          let text = `["${time}",${tagText}`;
          for (const src of sources) text += `,${typeof src === 'string' ? src : numberText(v[src])}`;
          rows.push({ time, order, text: `${text}]` });
        }
      }
      // newest first (one InfluxDB series already is). The times all have 9 fraction digits and a Z: as
      // strings they sort as the times do.
      if (groups > 1) rows.sort((a, b) => (a.time > b.time ? -1 : a.time < b.time ? 1 : a.order < b.order ? -1 : a.order > b.order ? 1 : 0));
      return `{"name":${JSON.stringify(seriesName(selector))},"columns":${JSON.stringify(seriesColumns(selector))},"values":[${rows.map((r) => r.text).join(',')}]}`;
    });
    return `{"data":[{"Series":[${seriesTexts.join(',')}]}]}`;
  }

  /**
   * One request per series, side by side (InfluxDB runs the statements of one request one after another),
   * each read in chunks: rows are counted as they come and the answer given up once it holds too many, and
   * no more than a chunk is parsed at a time, so that other requests keep being answered.
   */
  async #fetch(client: InfluxClient, q: MetricsAppQuery, now: bigint): Promise<(InfluxStatementResult | undefined)[]> {
    const maxRows = this.#maxRows;
    try {
      const results = await Promise.all(q.selectors.map((s) => client.query(selectorStatement(s, q, now, maxRows), { maxRows }).then((r) => r[0])));
      // SLIMIT cuts the series beyond the limit silently: reaching it says the answer would be too large
      const perSeries = rowsPerSeries(q);
      const slimit = perSeries === undefined ? undefined : seriesLimit(perSeries, maxRows);
      const cutBySlimit =
        slimit !== undefined && results.some((r) => new Set((r?.series ?? []).map((s) => JSON.stringify(s.tags ?? {}))).size >= slimit);
      if (cutBySlimit || results.reduce((n, r) => n + (r?.series ?? []).reduce((m, s) => m + s.values.length, 0), 0) > maxRows) {
        throw new InfluxError('too many rows', 413, false);
      }
      return results;
    } catch (e) {
      if (e instanceof InfluxError && e.status === 413) {
        throw new HttpError(400, `the answer would hold more than ${maxRows} rows: narrow starttime/endtime, or ask for last=N or numsamples=N`);
      }
      this.#log(`[edgecv console] region ${q.app.region}: ${(e as Error).message}`);
      if (e instanceof InfluxAnswerTooLarge) {
        throw new HttpError(
          502,
          `the metrics database of region '${q.app.region}' answered more than ${e.capBytes} bytes, the console's cap: narrow starttime/endtime, or ask for last=N or numsamples=N`,
        );
      }
      throw new HttpError(503, `the metrics database of region '${q.app.region}' did not answer; try again later`, { 'Retry-After': '5' });
    }
  }

  close(): void {
    for (const client of this.#regions.values()) client.close();
  }
}

const UTC_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,9})?Z$/;

/** InfluxDB's time (RFC 3339, trailing zeros of the fraction cut) with exactly 9 fraction digits and a Z. */
function rfc3339Nano(text: string): string | null {
  if (text.length === 30 && UTC_TIME.test(text)) return text;
  if (UTC_TIME.test(text)) {
    const dot = text.indexOf('.', 19);
    const fraction = dot < 0 ? '' : text.slice(dot + 1, -1);
    return `${text.slice(0, 19)}.${fraction.padEnd(9, '0')}Z`;
  }
  const ns = parseRfc3339(text);
  return ns === null ? null : formatRfc3339Nano(ns);
}

interface AnswerRow {
  time: string;
  order: string;
  /** The row as JSON. */
  text: string;
}

/** A value cell as JSON: InfluxDB's number, 0 for a missing one (every point carries every field). */
function numberText(cell: unknown): string {
  const n = typeof cell === 'number' ? cell : Number(cell ?? 0);
  return Number.isFinite(n) ? String(n) : '0';
}
