// The embedded metrics store: SQLite (better-sqlite3) in <data-dir>/metrics.db, one table per series.
// Times are integer nanoseconds since the epoch, read back as bigint (they exceed 2^53). The tags of the
// instance that wrote a row live once in `instance`; each row points at them.

import fs from 'node:fs';
import path from 'node:path';
import { Database, statementCache, type Prepare, type SqliteDatabase, type SqliteStatement } from '../sqlite.js';
import type { InstanceIdentity } from './identity.js';
import { LATENCY_PERCENTILES } from './percentiles.js';
import { SELECTORS, TAG_COLUMNS, VALUE_COLUMNS, type Selector, type TagColumn } from './selectors.js';

export const METRICS_DB_FILE = 'metrics.db';
const SCHEMA_VERSION = 1;

export interface ConnectionSample {
  port: number;
  active: number;
  handled: number;
  accepts: number;
  bytesSent: number;
  bytesRecvd: number;
  /** Request latency in ms at LATENCY_PERCENTILES, in that order. */
  latencyPercentiles: number[];
}

export interface MetricsSample {
  time: bigint;
  cpu: number;
  mem: number;
  disk: number;
  sendBytes: number;
  recvBytes: number;
  connections: ConnectionSample[];
}

/** The app an answer is for: what the query's region and app_key select. */
export interface AppFilter {
  region: string;
  apporg: string;
  app: string;
  ver: string;
}

export interface RowWindow {
  /** Inclusive bounds, ns. */
  start?: bigint;
  end?: bigint;
  /** Only the rows of the N newest sample times. */
  last?: number;
  /** At most N sample times, spread evenly over the window: the newest one in each of N equal slices. */
  numsamples?: number;
}

export interface StoredRow {
  time: bigint;
  tags: Record<TagColumn, string>;
  /** In VALUE_COLUMNS order. */
  values: number[];
}

const TAG_SQL: Record<TagColumn, string> = {
  app: 'app',
  ver: 'ver',
  cluster: 'cluster',
  clusterorg: 'clusterorg',
  cloudlet: 'cloudlet',
  cloudletorg: 'cloudletorg',
  apporg: 'apporg',
  pod: 'pod',
};

function schema(): string {
  const table = (name: Selector) => {
    const cols = VALUE_COLUMNS[name].map((c) => `${c.sql} ${c.type === 'int' ? 'INTEGER' : 'REAL'} NOT NULL`).join(', ');
    return `CREATE TABLE IF NOT EXISTS ${name} (instance INTEGER NOT NULL REFERENCES instance(id), time INTEGER NOT NULL, ${cols});
            CREATE INDEX IF NOT EXISTS ${name}_by_time ON ${name} (time);`;
  };
  return `
    CREATE TABLE IF NOT EXISTS instance (
      id INTEGER PRIMARY KEY,
      region TEXT NOT NULL, apporg TEXT NOT NULL, app TEXT NOT NULL, ver TEXT NOT NULL,
      cluster TEXT NOT NULL, clusterorg TEXT NOT NULL, cloudlet TEXT NOT NULL, cloudletorg TEXT NOT NULL, pod TEXT NOT NULL,
      UNIQUE (region, apporg, app, ver, cluster, clusterorg, cloudlet, cloudletorg, pod)
    );
    ${SELECTORS.map(table).join('\n')}
    -- how far each InfluxDB sink (by its redacted URL) has been acknowledged: every sample time <= acked is there;
    -- inflight: the newest time of a batch sent but not yet acknowledged (its outcome unknown after a crash)
    CREATE TABLE IF NOT EXISTS sink_cursor (target TEXT PRIMARY KEY, acked INTEGER NOT NULL, inflight INTEGER);`;
}

/** A stored row with its instance's tags and the series it belongs to, as the InfluxDB sink sends it. */
export interface SinkRow extends StoredRow {
  selector: Selector;
}

export interface SinkCursor {
  acked: bigint;
  inflight: bigint | null;
}

export class MetricsStore {
  readonly #db: SqliteDatabase;
  readonly #prepare: Prepare;
  #insertSample: ((instance: number, s: MetricsSample) => void) | undefined;

  private constructor(
    readonly file: string,
    readonly readonly: boolean,
  ) {
    if (readonly) {
      // A reader beside the writer (the query worker): WAL lets it read while samples are written.
      this.#db = new Database(file, { readonly: true, fileMustExist: true });
      this.#prepare = statementCache(this.#db);
      return;
    }
    this.#db = new Database(file);
    this.#prepare = statementCache(this.#db);
    this.#db.pragma('journal_mode = WAL');
    this.#db.pragma('synchronous = NORMAL');
    const version = this.#db.pragma('user_version', { simple: true }) as number;
    if (version > SCHEMA_VERSION) {
      this.#db.close();
      throw new Error(`${file} has metrics schema ${version}, newer than this edgecv understands (${SCHEMA_VERSION})`);
    }
    this.#db.exec(schema());
    this.#db.pragma(`user_version = ${SCHEMA_VERSION}`);
  }

  /** Opens (creating when needed) <dataDir>/metrics.db for writing and reading. */
  static open(dataDir: string): MetricsStore {
    fs.mkdirSync(dataDir, { recursive: true });
    return new MetricsStore(path.join(dataDir, METRICS_DB_FILE), false);
  }

  /** Opens an existing store file for reading only. */
  static openReadOnly(file: string): MetricsStore {
    return new MetricsStore(file, true);
  }

  #prepareInsert(): (instance: number, s: MetricsSample) => void {
    const insert = (name: Selector) => {
      const cols = VALUE_COLUMNS[name].map((c) => c.sql);
      return this.#prepare(`INSERT INTO ${name} (instance, time, ${cols.join(', ')}) VALUES (?, ?, ${cols.map(() => '?').join(', ')})`);
    };
    const statements = Object.fromEntries(SELECTORS.map((s) => [s, insert(s)])) as Record<Selector, SqliteStatement>;
    return this.#db.transaction((instance: number, s: MetricsSample) => {
      statements.cpu.run(instance, s.time, s.cpu);
      statements.mem.run(instance, s.time, Math.round(s.mem));
      statements.disk.run(instance, s.time, Math.round(s.disk));
      statements.network.run(instance, s.time, Math.round(s.sendBytes), Math.round(s.recvBytes));
      for (const c of s.connections) {
        if (c.latencyPercentiles.length !== LATENCY_PERCENTILES.length) throw new Error('one latency value per percentile expected');
        statements.connections.run(instance, s.time, c.port, c.active, c.handled, c.accepts, c.bytesSent, c.bytesRecvd, ...c.latencyPercentiles);
      }
    });
  }

  /** The id of an instance's tag set, added on first use. */
  instanceId(id: InstanceIdentity): number {
    const tags = [id.region, id.appOrg, id.appname, id.appvers, id.cluster, id.clusterorg, id.cloudlet, id.cloudletorg, id.pod];
    this.#prepare(
      `INSERT OR IGNORE INTO instance (region, apporg, app, ver, cluster, clusterorg, cloudlet, cloudletorg, pod)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    ).run(...tags);
    const row = this.#prepare(
      `SELECT id FROM instance WHERE region = ? AND apporg = ? AND app = ? AND ver = ? AND cluster = ? AND clusterorg = ?
         AND cloudlet = ? AND cloudletorg = ? AND pod = ?`,
    ).get(...tags) as { id: number };
    return row.id;
  }

  /** Writes one sample (all series, same time) atomically. */
  insert(instance: number, sample: MetricsSample): void {
    this.#insertSample ??= this.#prepareInsert();
    this.#insertSample(instance, sample);
  }

  /** Deletes every row older than `beforeNs`; returns how many rows went. */
  prune(beforeNs: bigint): number {
    let n = 0;
    const tx = this.#db.transaction(() => {
      for (const s of SELECTORS) n += this.#prepare(`DELETE FROM ${s} WHERE time < ?`).run(beforeNs).changes;
    });
    tx();
    return n;
  }

  /** The oldest row time held in any series, or null when the store is empty. */
  oldest(): bigint | null {
    const union = SELECTORS.map((s) => `SELECT MIN(time) AS t FROM ${s}`).join(' UNION ALL ');
    const row = this.#prepare(`SELECT MIN(t) AS t FROM (${union})`).safeIntegers(true).get() as { t: bigint | null };
    return row.t;
  }

  /** Rows of `selector` for `app` within `window`, newest first (connections: by port within a time). */
  rows(selector: Selector, app: AppFilter, window: RowWindow = {}): StoredRow[] {
    // The tags of the matching instances, read once: rows only carry the instance id.
    const instances = this.#prepare(
      `SELECT id, ${TAG_COLUMNS.map((c) => `${TAG_SQL[c]} AS ${c}`).join(', ')} FROM instance
         WHERE region = @region AND apporg = @apporg AND app = @app AND ver = @ver`,
    ).all(app) as ({ id: number } & Record<TagColumn, string>)[];
    if (instances.length === 0) return [];
    const tagsById = new Map(
      instances.map((i) => [i.id, Object.fromEntries(TAG_COLUMNS.map((c) => [c, String(i[c])])) as Record<TagColumn, string>]),
    );

    const ids = instances.map((i) => i.id);
    const conditions = [`instance IN (${ids.map(() => '?').join(', ')})`];
    const params: (number | bigint | string)[] = [...ids];
    if (window.start !== undefined) {
      conditions.push('time >= ?');
      params.push(clampInt64(window.start));
    }
    if (window.end !== undefined) {
      conditions.push('time <= ?');
      params.push(clampInt64(window.end));
    }

    if (window.last !== undefined || window.numsamples !== undefined) {
      // Pick the sample times first (cheap: one column), then read the rows of those times only.
      const limit = window.numsamples === undefined ? ` LIMIT ${window.last}` : '';
      let times = this.#prepare(`SELECT DISTINCT time FROM ${selector} WHERE ${conditions.join(' AND ')} ORDER BY time DESC${limit}`)
        .pluck()
        .safeIntegers(true)
        .all(...params) as bigint[];
      if (window.numsamples !== undefined) times = spreadTimes(times, window.numsamples, window.start, window.end);
      if (window.last !== undefined) times = times.slice(0, window.last);
      if (times.length === 0) return [];
      conditions.push('time IN (SELECT value FROM json_each(?))');
      params.push(`[${times.join(',')}]`);
    }

    const columns = VALUE_COLUMNS[selector];
    const order = selector === 'connections' ? 'time DESC, port ASC' : 'time DESC';
    const raw = this.#prepare(
      `SELECT instance, time, ${columns.map((c) => c.sql).join(', ')} FROM ${selector} WHERE ${conditions.join(' AND ')} ORDER BY ${order}`,
    )
      .raw()
      .safeIntegers(true)
      .all(...params) as (bigint | number)[][];
    return raw.map((r) => ({
      time: r[1] as bigint,
      tags: tagsById.get(Number(r[0]))!,
      values: r.slice(2).map(Number),
    }));
  }

  /** Up to `limit` sample times after `afterNs`, oldest first (every sample has a cpu row). */
  sampleTimesAfter(afterNs: bigint, limit: number): bigint[] {
    return this.#prepare('SELECT DISTINCT time FROM cpu WHERE time > ? ORDER BY time LIMIT ?')
      .pluck()
      .safeIntegers(true)
      .all(clampInt64(afterNs), limit) as bigint[];
  }

  /** How many sample times lie after `afterNs`, and the oldest of them. */
  backlog(afterNs: bigint): { samples: number; oldest: bigint | null } {
    const row = this.#prepare('SELECT COUNT(DISTINCT time) AS n, MIN(time) AS oldest FROM cpu WHERE time > ?')
      .safeIntegers(true)
      .get(clampInt64(afterNs)) as { n: bigint; oldest: bigint | null };
    return { samples: Number(row.n), oldest: row.oldest };
  }

  /** Every row of every series with afterNs < time <= upToNs, with its instance's tags, oldest first. */
  rowsInRange(afterNs: bigint, upToNs: bigint): SinkRow[] {
    const tags = TAG_COLUMNS.map((c) => `i.${TAG_SQL[c]}`).join(', ');
    const out: SinkRow[] = [];
    for (const selector of SELECTORS) {
      const columns = VALUE_COLUMNS[selector].map((c) => `s.${c.sql}`).join(', ');
      const raw = this.#prepare(
        `SELECT s.time, ${tags}, ${columns} FROM ${selector} s JOIN instance i ON i.id = s.instance WHERE s.time > ? AND s.time <= ? ORDER BY s.time`,
      )
        .raw()
        .safeIntegers(true)
        .all(clampInt64(afterNs), clampInt64(upToNs)) as (bigint | number | string)[][];
      for (const r of raw) {
        out.push({
          selector,
          time: r[0] as bigint,
          tags: Object.fromEntries(TAG_COLUMNS.map((c, i) => [c, String(r[1 + i])])) as Record<TagColumn, string>,
          values: r.slice(1 + TAG_COLUMNS.length).map(Number),
        });
      }
    }
    return out.sort((a, b) => (a.time < b.time ? -1 : a.time > b.time ? 1 : 0));
  }

  /** A sink's cursor; a new sink starts before every stored sample. */
  sinkCursor(target: string): SinkCursor {
    const row = this.#prepare('SELECT acked, inflight FROM sink_cursor WHERE target = ?').safeIntegers(true).get(target) as
      { acked: bigint; inflight: bigint | null } | undefined;
    return row ?? { acked: INT64_MIN, inflight: null };
  }

  setSinkCursor(target: string, cursor: SinkCursor): void {
    this.#prepare(
      'INSERT INTO sink_cursor (target, acked, inflight) VALUES (?, ?, ?) ON CONFLICT (target) DO UPDATE SET acked = excluded.acked, inflight = excluded.inflight',
    ).run(target, cursor.acked, cursor.inflight);
  }

  close(): void {
    if (this.#db.open) this.#db.close();
  }
}

const INT64_MAX = 2n ** 63n - 1n;
const INT64_MIN = -(2n ** 63n);

/** SQLite integers are 64-bit: a bound past year 2262 (or before 1677) holds the same rows as the limit. */
function clampInt64(ns: bigint): bigint {
  return ns > INT64_MAX ? INT64_MAX : ns < INT64_MIN ? INT64_MIN : ns;
}

/**
 * At most n of the sample times `times` (newest first) spread over [start, end] (their own span where a
 * bound is not given): the window is cut into n equal slices, and the newest time in each slice is kept.
 */
function spreadTimes(times: bigint[], n: number, start?: bigint, end?: bigint): bigint[] {
  if (times.length === 0) return times;
  const hi = end ?? times[0]!;
  const lo = start ?? times[times.length - 1]!;
  const span = hi - lo + 1n;
  const slices = BigInt(n);
  const taken = new Set<bigint>();
  return times.filter((t) => {
    const slice = ((t - lo) * slices) / span;
    if (taken.has(slice)) return false;
    taken.add(slice);
    return true;
  });
}
