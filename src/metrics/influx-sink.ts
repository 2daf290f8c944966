// The metrics sink (--metrics-sink URL): sends every sample of the local store to InfluxDB, in time order,
// in gzip-compressed batches of line protocol. SQLite stays the source of truth: the sink keeps a cursor in
// the store (sink_cursor: the newest acknowledged sample time), so that after InfluxDB was down, restarted,
// or this process was killed, it resumes from the first sample InfluxDB has not acknowledged.
//
// Exactly once: InfluxDB would merge a point written twice (same series, same time) into one, so a resend
// is harmless; it is avoided anyway. Before sending a batch the sink records its newest time as `inflight`.
// When the outcome of a send is unknown (timeout, reset, a crash before the cursor moved), the next attempt
// first counts that range's points in InfluxDB: when they are all there the batch is acknowledged without
// sending it again, otherwise it is sent again.

import { promisify } from 'node:util';
import { gzip } from 'node:zlib';
import { InfluxClient, InfluxError, InfluxPointsRefused, quoteIdent, quoteString, type InfluxTarget } from './influx-client.js';
import { INFLUX_TAG_VALUES, lineOf } from './influx-line.js';
import { SELECTORS, seriesName, TAG_COLUMNS, VALUE_COLUMNS, type Selector, type TagColumn } from './selectors.js';
import type { MetricsStore, SinkRow } from './store.js';
import { formatRfc3339Nano, nowNs } from './time.js';

const gzipAsync = promisify(gzip);

export const SINK_BATCH_SAMPLES = 1000;
export const SINK_BACKOFF_BASE_MS = 500;
export const SINK_BACKOFF_MAX_MS = 30_000;
/** How long stop() lets the last flush run when not told (serve tells it the drain's time left). */
export const SINK_STOP_WAIT_MS = 5_000;

export interface SinkStatus {
  /** The InfluxDB URL without its user part (it is shown to unauthenticated readers). */
  url: string;
  /** Seconds since the oldest sample InfluxDB has not acknowledged; 0 when caught up. */
  lagSeconds: number;
  /** Samples not yet acknowledged. */
  backlogSamples: number;
  /** Failed sends (and failed checks) since start. */
  errors: number;
  lastError: string | null;
  /** RFC 3339 time of the newest acknowledged sample, or null. */
  ackedUpTo: string | null;
  /** Points InfluxDB acknowledged since start. */
  pointsWritten: number;
  /**
   * Points InfluxDB refused for good since start (400 partial write, e.g. beyond its retention policy, or
   * unable to parse): their batch counts as sent, its other points are stored, none is sent again.
   */
  pointsRefused: number;
  /** InfluxDB's answer to the last batch it refused in part, or null. */
  lastRefusal: string | null;
}

export interface SinkOptions {
  store: MetricsStore;
  target: InfluxTarget;
  /** Batch size in samples (default SINK_BATCH_SAMPLES). */
  batchSamples?: number;
  backoffBaseMs?: number;
  backoffMaxMs?: number;
  /** ms one exchange with InfluxDB may take in all, the answer included (default: the client's, 10 s). */
  timeoutMs?: number;
  /** Called after each acknowledged batch with its sample times (the bench measures lag with it). */
  onAcknowledged?: (times: bigint[]) => void;
  /** Where errors are told (once per new message); default console.error. */
  log?: (message: string) => void;
}

export class InfluxSink {
  readonly #store: MetricsStore;
  readonly #client: InfluxClient;
  readonly #opts: SinkOptions;
  readonly #key: string;
  #running: Promise<void> | undefined;
  #again = false;
  #retryTimer: NodeJS.Timeout | undefined;
  #failures = 0;
  #stopped = false;
  /** stop() was called: no retry is scheduled and no new send is started by kick(). */
  #stopping = false;
  #started = false;
  #databaseChecked = false;
  #errors = 0;
  #lastError: string | null = null;
  #points = 0;
  #refused = 0;
  #lastRefusal: string | null = null;

  constructor(opts: SinkOptions) {
    this.#opts = opts;
    this.#store = opts.store;
    this.#client = new InfluxClient(opts.target, { timeoutMs: opts.timeoutMs });
    this.#key = opts.target.redacted;
  }

  /** The InfluxDB URL without its user part. */
  get url(): string {
    return this.#opts.target.address;
  }

  /** Sends what the store holds now and after every kick(). */
  start(): void {
    this.#started = true;
    this.kick();
  }

  /** A new sample is stored: send it (now, unless a retry is waiting out its backoff). */
  kick(): void {
    if (!this.#started || this.#stopping || this.#retryTimer) return;
    if (this.#running) {
      this.#again = true;
      return;
    }
    this.#running = this.#drain().finally(() => {
      this.#running = undefined;
      if (this.#again && !this.#retryTimer) {
        this.#again = false;
        this.kick();
      }
    });
  }

  /** Sends batches until the store has nothing newer than the cursor, or a send fails (then retries later). */
  async #drain(): Promise<void> {
    try {
      await this.#ensureDatabase();
      for (;;) {
        if (this.#stopped) return;
        const sent = await this.#sendNext();
        if (!sent) break;
      }
      this.#failures = 0;
    } catch (e) {
      this.#fail(e);
    }
  }

  async #ensureDatabase(): Promise<void> {
    if (this.#databaseChecked) return;
    try {
      await this.#client.createDatabase();
    } catch (e) {
      // without admin rights CREATE DATABASE is refused: the database may exist all the same, writes will tell
      if (!(e instanceof InfluxError) || e.status === 0) throw e;
    }
    this.#databaseChecked = true;
  }

  /** Sends the next batch; false when there was nothing to send. */
  async #sendNext(): Promise<boolean> {
    const cursor = this.#store.sinkCursor(this.#key);
    if (cursor.inflight !== null && cursor.inflight > cursor.acked) {
      const rows = this.#store.rowsInRange(cursor.acked, cursor.inflight);
      if (await this.#alreadyThere(rows, cursor.acked, cursor.inflight)) {
        this.#acknowledge(rows, cursor.inflight);
        return true;
      }
      await this.#send(rows, cursor.acked, cursor.inflight);
      return true;
    }
    const times = this.#store.sampleTimesAfter(cursor.acked, this.#opts.batchSamples ?? SINK_BATCH_SAMPLES);
    if (times.length === 0) return false;
    const upTo = times[times.length - 1]!;
    await this.#send(this.#store.rowsInRange(cursor.acked, upTo), cursor.acked, upTo);
    return true;
  }

  async #send(rows: SinkRow[], after: bigint, upTo: bigint): Promise<void> {
    const body = await gzipAsync(Buffer.from(rows.map((r) => lineOf(r.selector, r.tags, r.time, r.values)).join('\n') + '\n'));
    this.#store.setSinkCursor(this.#key, { acked: after, inflight: upTo });
    try {
      await this.#client.writeGzip(body);
    } catch (e) {
      if (e instanceof InfluxPointsRefused) {
        this.#refusedInPart(e, rows, upTo);
        return;
      }
      // refused before sending, or refused whole by InfluxDB: nothing of it was written, no check needed
      if (e instanceof InfluxError && !e.maybeDelivered) this.#store.setSinkCursor(this.#key, { acked: after, inflight: null });
      throw e;
    }
    this.#acknowledge(rows, upTo);
  }

  /**
   * InfluxDB stored what it could of the batch and will never take the rest (as Telegraf does: told, counted,
   * passed): the batch is done, so that newer samples do not wait behind it.
   */
  #refusedInPart(e: InfluxPointsRefused, rows: SinkRow[], upTo: bigint): void {
    const dropped = Math.min(e.dropped ?? rows.length, rows.length);
    this.#acknowledge(rows, upTo, rows.length - dropped);
    this.#refused += dropped;
    this.#lastRefusal = e.message;
    this.#log(
      `[edgecv] metrics sink ${this.#key}: InfluxDB refused ${dropped} of ${rows.length} points up to ${formatRfc3339Nano(upTo)} (${e.message}); not sent again`,
    );
  }

  #acknowledge(rows: SinkRow[], upTo: bigint, stored = rows.length): void {
    this.#store.setSinkCursor(this.#key, { acked: upTo, inflight: null });
    this.#points += stored;
    if (this.#lastError !== null) this.#log(`[edgecv] metrics sink ${this.#key}: sending again`);
    this.#lastError = null;
    const onAck = this.#opts.onAcknowledged;
    if (onAck) onAck([...new Set(rows.filter((r) => r.selector === 'cpu').map((r) => r.time))]);
  }

  /** True when InfluxDB holds every point of `rows` (after < time <= upTo) already. */
  async #alreadyThere(rows: SinkRow[], after: bigint, upTo: bigint): Promise<boolean> {
    if (rows.length === 0) return true;
    const instances = new Map<string, Record<TagColumn, string>>();
    for (const r of rows) instances.set(JSON.stringify(r.tags), r.tags);
    const match = [...instances.values()]
      .map((tags) => `(${TAG_COLUMNS.map((c) => `${quoteIdent(c)} = ${quoteString(tags[c])}`).join(' AND ')})`)
      .join(' OR ');
    const statements = SELECTORS.map((s) => {
      const field = VALUE_COLUMNS[s].find((c) => !(INFLUX_TAG_VALUES[s] ?? []).includes(c.name))!.name;
      return `SELECT count(${quoteIdent(field)}) FROM ${quoteIdent(seriesName(s))} WHERE time > ${after} AND time <= ${upTo} AND (${match})`;
    });
    const results = await this.#client.query(statements.join('; '));
    return SELECTORS.every((s: Selector, i) => {
      const counted = results[i]?.series?.[0]?.values[0]?.[1];
      return Number(counted ?? 0) === rows.filter((r) => r.selector === s).length;
    });
  }

  #fail(e: unknown): void {
    this.#errors++;
    this.#failures++;
    const message = e instanceof Error ? e.message : String(e);
    if (message !== this.#lastError) this.#log(`[edgecv] metrics sink ${this.#key}: ${message} (retrying with backoff)`);
    this.#lastError = message;
    if (this.#stopping) return;
    // exponential backoff, each wait a random 50-100 % of its step, so that a fleet does not retry in step after an outage
    const base = this.#opts.backoffBaseMs ?? SINK_BACKOFF_BASE_MS;
    const cap = Math.min(this.#opts.backoffMaxMs ?? SINK_BACKOFF_MAX_MS, base * 2 ** Math.min(this.#failures - 1, 20));
    const delay = cap / 2 + Math.random() * (cap / 2);
    this.#retryTimer = setTimeout(() => {
      this.#retryTimer = undefined;
      this.kick();
    }, delay);
    this.#retryTimer.unref();
  }

  #log(message: string): void {
    (this.#opts.log ?? console.error)(message);
  }

  status(): SinkStatus {
    const cursor = this.#store.sinkCursor(this.#key);
    const backlog = this.#store.backlog(cursor.acked);
    const lagNs = backlog.oldest === null ? 0n : nowNs() - backlog.oldest;
    return {
      url: this.#opts.target.address,
      lagSeconds: Math.max(0, Number(lagNs) / 1e9),
      backlogSamples: backlog.samples,
      errors: this.#errors,
      lastError: this.#lastError,
      ackedUpTo: cursor.acked > 0n ? formatRfc3339Nano(cursor.acked) : null,
      pointsWritten: this.#points,
      pointsRefused: this.#refused,
      lastRefusal: this.#lastRefusal,
    };
  }

  /**
   * Stops sending; the cursor stays where it is. First the last flush: what the store holds now (the drain's
   * last sample included) is sent, a send in progress finishing first, for up to `waitMs` (the drain's time
   * left); then a send still waiting is ended: its batch is checked in InfluxDB at the next start.
   */
  async stop(waitMs = SINK_STOP_WAIT_MS): Promise<void> {
    this.#stopping = true;
    clearTimeout(this.#retryTimer);
    this.#retryTimer = undefined;
    let flush = this.#running;
    if (waitMs > 0 && this.#started && !this.#stopped) {
      // a send in progress reads the store again after its batch; otherwise (idle, or waiting out a backoff) one more try
      flush ??= this.#drain();
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([flush, new Promise<void>((r) => (timer = setTimeout(r, waitMs)))]);
      clearTimeout(timer);
    }
    this.#stopped = true;
    this.#client.close();
    await flush;
  }
}
