// The fleet gallery store: samples in Redis, changes broadcast on a pub/sub channel so that every server applies
// them, and a full resync whenever this server's subscription (re)connects, since it may have missed messages.
//
// Keys (prefix edgecv:gallery:):
//   samples    hash  id -> JSON {subject, createdAt, model, modelVersion, embedding (base64 float32 LE), cropRect,
//                    quality (absent in a record an older edgecv wrote: measured when listed, then written back)}
//   crops      hash  id -> JPEG bytes
//   subjects   hash  id -> subject (small: what removal scans)
//   next-id    counter for sample ids
//   changes    pub/sub channel: {origin, write, op: 'add', samples} | {origin, write, op: 'remove', ids} |
//              {origin, write, op: 'resync'}
//
// Every message on the channel is checked (change-messages.ts) before it is applied: a malformed one is logged and
// skipped, and the gallery is resynced from Redis, which holds the truth. Every command has a timeout
// (REDIS_COMMAND_TIMEOUT_MS): a frozen or cut-off Redis makes a change fail in bounded time. A transaction publishes
// its own change, so its broadcast proves it was applied: a change whose answer timed out but whose broadcast came
// is acknowledged; one whose broadcast did not come either is "in doubt" (503): Redis may still apply it (whole: it
// is one MULTI/EXEC), and if it does, this server applies its own broadcast of it too, like its peers do.

import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { CHANGE_CHANNEL, MAX_ADD_MESSAGE, parseChangeMessage, type ChangeMessage, type ChangeOf } from './change-messages.js';
import { decodeRow, parseRecord, qualityWrites, record, withCrop, type SampleRecord } from './redis-records.js';
import { redisDurability } from './redis-durability.js';
import { MOVE_SCRIPT, QUALITY_SCRIPT, REMOVE_SCRIPT } from './redis-scripts.js';
import { isSampleId } from './sample-check.js';
import {
  embeddingToBytes,
  GalleryStoreError,
  type GalleryStore,
  type MeasuredQuality,
  type NewSample,
  type RemoteChanges,
  type SamplePage,
  type SamplePageRequest,
  type SampleVector,
  type StoreDurability,
  type StoredSample,
  type StoredVectors,
} from './types.js';

const PREFIX = 'edgecv:gallery:';
const KEY = { samples: `${PREFIX}samples`, crops: `${PREFIX}crops`, subjects: `${PREFIX}subjects`, nextId: `${PREFIX}next-id` };
const CHANNEL = CHANGE_CHANNEL;

/**
 * Longest wait for one Redis command. An enrolment makes two round trips (the id counter, then the transaction),
 * so a frozen Redis gets its 503 within 2 x 1.5 s plus the embedding, under the 5 s the API promises.
 */
export const REDIS_COMMAND_TIMEOUT_MS = 1_500;
/** How often the subscription is pinged: a subscription that stops answering is reconnected (and resynced). */
const SUBSCRIPTION_PING_MS = 5_000;
/**
 * Resyncs asked for by malformed messages: the first at once, then at most one per interval. A resync makes
 * predictions wait (503) while it runs: a stream of bad messages must not keep the gallery rebuilding.
 */
const DOUBT_RESYNC_INTERVAL_MS = 10_000;
/** Writes in doubt remembered at most (a Redis that never applies them would otherwise grow the set). */
const MAX_IN_DOUBT = 10_000;

/** Reads and compare-and-sets of a move before it gives up (another change to the same sample each time). */
const MOVE_TRIES = 3;

/** Why a command failed before Redis could have applied it (nothing was sent): not in doubt. */
const NOT_SENT = /Stream isn't writeable/;

/** Any Redis failure becomes a GalleryStoreError (HTTP 503: the client may retry). */
function storeErrors<T>(p: Promise<T>): Promise<T> {
  return p.catch((e: unknown) => {
    throw e instanceof GalleryStoreError ? e : new GalleryStoreError(`Redis: ${(e as Error).message}`, { cause: e });
  });
}

/** Rate-limited connection-error logging: a Redis outage must not flood the log. */
function errorLogger(label: string): (e: Error) => void {
  let last = 0;
  return (e) => {
    const now = Date.now();
    if (now - last > 10_000) {
      last = now;
      console.error(`edgecv: gallery Redis (${label}): ${e.message}`);
    }
  };
}

export class RedisGalleryStore implements GalleryStore {
  readonly kind = 'redis' as const;
  /** Tells this server's own broadcasts apart from other servers'. */
  readonly origin = randomUUID();
  readonly #client: Redis;
  readonly #subscriber: Redis;
  readonly #durability: StoreDurability;
  /** Own writes sent and not answered yet -> their broadcast once it came (then they were applied), else null. */
  readonly #sent = new Map<string, ChangeOf | null>();
  /** Own writes whose answer timed out before their broadcast came: when it comes, it is applied here too. */
  readonly #inDoubt = new Set<string>();
  readonly #logBadMessage = errorLogger('change channel');
  #skipped = 0;
  #lastDoubtResync = -Infinity;
  #doubtResyncTimer: NodeJS.Timeout | null = null;
  #pinger: NodeJS.Timeout | null = null;
  #closed = false;

  private constructor(client: Redis, subscriber: Redis, durability: StoreDurability) {
    this.#client = client;
    this.#subscriber = subscriber;
    this.#durability = durability;
  }

  /** Connects to redis://host:port/db. Rejects when the first connection fails. Warns when Redis does not persist. */
  static async open(url: string, log: (message: string) => void = (m) => console.warn(`edgecv: ${m}`)): Promise<RedisGalleryStore> {
    const options = {
      lazyConnect: true,
      // Fail fast while disconnected: an enrolment must answer an error, not hang until Redis is back.
      enableOfflineQueue: false,
      maxRetriesPerRequest: 1,
      // ...and while connected to a Redis that does not answer (stopped, or a silent network partition).
      commandTimeout: REDIS_COMMAND_TIMEOUT_MS,
      connectTimeout: 5_000,
      retryStrategy: (attempt: number) => Math.min(attempt * 200, 2000),
      autoResubscribe: false, // resubscribed, then resynced, on 'ready' (watch)
    };
    const client = new Redis(url, options);
    const subscriber = new Redis(url, options);
    client.on('error', errorLogger('commands'));
    subscriber.on('error', errorLogger('subscription'));
    try {
      await client.connect();
      await subscriber.connect();
    } catch (e) {
      client.disconnect();
      subscriber.disconnect();
      throw new Error(`cannot connect to the gallery at ${url}: ${(e as Error).message}`, { cause: e });
    }
    const durability = await redisDurability(client, url);
    if (durability.warning) log(`WARNING: ${durability.warning}`);
    return new RedisGalleryStore(client, subscriber, durability);
  }

  durability(): StoreDurability {
    return { ...this.#durability };
  }

  vectors(): Promise<StoredVectors> {
    return storeErrors(this.#vectors());
  }

  async #vectors(): Promise<StoredVectors> {
    const out: StoredVectors = { vectors: [], unreadable: [] };
    let cursor = '0';
    do {
      const [next, flat] = await this.#client.hscan(KEY.samples, cursor, 'COUNT', 200);
      for (let i = 0; i + 1 < flat.length; i += 2) {
        const v = decodeRow(flat[i]!, flat[i + 1]!);
        if ('reason' in v) out.unreadable.push(v);
        else out.vectors.push(v);
      }
      cursor = next;
    } while (cursor !== '0');
    out.vectors.sort((a, b) => a.id - b.id);
    return out;
  }

  async *samples(batch = 256): AsyncIterable<StoredSample[]> {
    const found = new Set<number>();
    let cursor = '0';
    do {
      const [next, flat] = await this.#client.hscan(KEY.subjects, cursor, 'COUNT', 2000);
      for (let i = 0; i < flat.length; i += 2) found.add(Number(flat[i]));
      cursor = next;
    } while (cursor !== '0');
    const ids = [...found].filter(isSampleId).sort((a, b) => a - b);
    for (let i = 0; i < ids.length; i += batch) {
      const page = ids.slice(i, i + batch);
      const records = await this.#client.hmget(KEY.samples, ...page.map(String));
      const crops = await this.#client.hmgetBuffer(KEY.crops, ...page.map(String));
      const out: StoredSample[] = [];
      page.forEach((id, k) => {
        const text = records[k];
        if (text == null) return; // removed meanwhile
        const v = decodeRow(String(id), text);
        if ('reason' in v) return; // unreadable: quarantined at load
        out.push(withCrop(v, text, crops[k] ?? null));
      });
      if (out.length) yield out;
    }
  }

  #publish(multi: ReturnType<Redis['multi']>, message: ChangeMessage): void {
    multi.publish(CHANNEL, JSON.stringify(message));
  }

  /**
   * Runs a transaction that publishes its change as `write`. Resolves when Redis applied it; rejects with a
   * GalleryStoreError, `inDoubt` when it was sent and its answer did not come in time (Redis may apply it later,
   * all of it, and then this server's subscription applies it here too: see watch).
   */
  async #exec(multi: ReturnType<Redis['multi']>, write: string, what: string): Promise<unknown[]> {
    let results: [Error | null, unknown][] | null;
    this.#sent.set(write, null);
    try {
      results = await multi.exec();
    } catch (e) {
      // Its broadcast came: Redis applied the transaction (the PUBLISH is part of it), only the answer was lost.
      // A removal's broadcast says which ids it removed: that is the script's answer.
      const came = this.#sent.get(write);
      if (came) return came.op === 'remove' ? [came.ids.map(String)] : [];
      const inDoubt = !NOT_SENT.test((e as Error).message);
      if (inDoubt) {
        this.#inDoubt.add(write);
        if (this.#inDoubt.size > MAX_IN_DOUBT) this.#inDoubt.delete(this.#inDoubt.values().next().value!);
      }
      throw new GalleryStoreError(`${what} in Redis: ${(e as Error).message}${inDoubt ? ' (it may still be applied)' : ''}`, { cause: e, inDoubt });
    } finally {
      this.#sent.delete(write);
    }
    const failed = results?.find(([err]) => err);
    if (!results || failed) throw new GalleryStoreError(`${what} failed in Redis: ${failed?.[0]?.message ?? 'transaction aborted'}`);
    return results.map(([, value]) => value);
  }

  async #write(samples: NewSample[], replace: boolean): Promise<StoredSample[]> {
    // Ids first: a counter bump that is lost or applied late only leaves a gap.
    const last = samples.length ? await this.#client.incrby(KEY.nextId, samples.length) : 0;
    const stored = samples.map((s, i) => ({ ...s, id: last - samples.length + 1 + i }));
    const write = randomUUID();
    const multi = this.#client.multi();
    if (replace) multi.del(KEY.samples, KEY.crops, KEY.subjects);
    for (const s of stored) {
      multi.hset(KEY.samples, String(s.id), JSON.stringify(record(s)));
      multi.hset(KEY.subjects, String(s.id), s.subject);
      if (s.crop) multi.hset(KEY.crops, String(s.id), s.crop);
    }
    if (replace || stored.length > MAX_ADD_MESSAGE) {
      // A bulk change: every server reloads rather than receiving it all in one message.
      this.#publish(multi, { origin: this.origin, write, op: 'resync' });
    } else {
      const wire = stored.map((s) => ({ id: s.id, ...record(s) }));
      this.#publish(multi, { origin: this.origin, write, op: 'add', samples: wire });
    }
    await this.#exec(multi, write, 'gallery write');
    return stored;
  }

  add(sample: NewSample): Promise<StoredSample> {
    return storeErrors(this.#write([sample], false).then((s) => s[0]!));
  }

  addMany(samples: NewSample[], replace: boolean): Promise<StoredSample[]> {
    return storeErrors(this.#write(samples, replace));
  }

  remove(subject: string, id?: number): Promise<number[]> {
    return storeErrors(this.#remove(subject, id));
  }

  async #remove(subject: string, id?: number): Promise<number[]> {
    // The candidates; the script removes those still the subject's when it runs (a move may come in between).
    const candidates = id !== undefined ? [id] : await this.#idsOf(subject);
    if (candidates.length === 0) return [];
    const write = randomUUID();
    const head = JSON.stringify({ origin: this.origin, write, op: 'remove', ids: [] }).slice(0, -2); // up to "ids":[
    const multi = this.#client
      .multi()
      .eval(REMOVE_SCRIPT, 3, KEY.samples, KEY.crops, KEY.subjects, subject, CHANNEL, head, ']}', ...candidates.map(String));
    const [removed] = await this.#exec(multi, write, 'gallery removal');
    return (removed as string[]).map(Number);
  }

  samplesOf(subject: string, page: SamplePageRequest): Promise<SamplePage> {
    return storeErrors(this.#samplesOf(subject, page));
  }

  /**
   * The ids whose subject is `subject`, scanned a page at a time (each command well inside the command timeout:
   * 5000 short fields; a 100,000-sample gallery is 20 commands).
   */
  async #idsOf(subject: string): Promise<number[]> {
    const ids: number[] = [];
    let cursor = '0';
    do {
      const [next, flat] = await this.#client.hscan(KEY.subjects, cursor, 'COUNT', 5000);
      for (let i = 0; i + 1 < flat.length; i += 2) if (flat[i + 1] === subject) ids.push(Number(flat[i]));
      cursor = next;
    } while (cursor !== '0');
    return [...new Set(ids.filter(isSampleId))].sort((a, b) => a - b); // HSCAN may return a field twice
  }

  async #samplesOf(subject: string, { after, limit }: SamplePageRequest): Promise<SamplePage> {
    const all = await this.#idsOf(subject);
    const later = all.filter((id) => id > after);
    const ids = later.slice(0, limit);
    const next = later.length > limit ? ids[ids.length - 1]! : null;
    if (ids.length === 0) return { samples: [], total: all.length, next };
    const keys = ids.map(String);
    const records = await this.#client.hmget(KEY.samples, ...keys);
    const crops = await this.#client.hmgetBuffer(KEY.crops, ...keys);
    const out: StoredSample[] = [];
    ids.forEach((id, k) => {
      const text = records[k];
      if (text == null) return; // removed meanwhile
      const v = decodeRow(String(id), text);
      if ('reason' in v || v.subject !== subject) return; // unreadable (quarantined), or moved meanwhile
      out.push(withCrop(v, text, crops[k] ?? null));
    });
    return { samples: out, total: all.length, next };
  }

  move(id: number, from: string, to: string): Promise<SampleVector | null> {
    return storeErrors(this.#move(id, from, to));
  }

  async #move(id: number, from: string, to: string): Promise<SampleVector | null> {
    for (let attempt = 0; attempt < MOVE_TRIES; attempt++) {
      const [subject, text] = await Promise.all([this.#client.hget(KEY.subjects, String(id)), this.#client.hget(KEY.samples, String(id))]);
      if (subject !== from || text == null) return null;
      const v = decodeRow(String(id), text);
      if ('reason' in v) return null; // unreadable: it stays where it is, quarantined
      const moved: SampleRecord = { ...(parseRecord(text) as SampleRecord), subject: to };
      const write = randomUUID();
      // Published as the sample added again under its new subject: every server replaces the id in its index.
      const message: ChangeMessage = { origin: this.origin, write, op: 'add', samples: [{ id, ...moved }] };
      const multi = this.#client
        .multi()
        .eval(MOVE_SCRIPT, 2, KEY.samples, KEY.subjects, String(id), text, from, JSON.stringify(moved), to, CHANNEL, JSON.stringify(message));
      const [applied] = await this.#exec(multi, write, 'gallery move');
      // [] : the answer was lost but the broadcast came, so the script did move it.
      if (applied === 1 || applied === undefined) return { ...v, subject: to };
    }
    throw new GalleryStoreError(`gallery move: sample ${id} changed ${MOVE_TRIES} times while it was being moved; try again`);
  }

  async setQualities(qualities: MeasuredQuality[]): Promise<void> {
    if (qualities.length === 0) return;
    const current = await storeErrors(this.#client.hmget(KEY.samples, ...qualities.map((q) => String(q.id))));
    const args = qualityWrites(qualities, current);
    if (args.length > 0) await storeErrors(this.#client.eval(QUALITY_SCRIPT, 1, KEY.samples, ...args));
  }

  updateEmbeddings(updates: { id: number; model: string; modelVersion: string; embedding: Float32Array }[]): Promise<void> {
    return storeErrors(this.#updateEmbeddings(updates));
  }

  async #updateEmbeddings(updates: { id: number; model: string; modelVersion: string; embedding: Float32Array }[]): Promise<void> {
    if (updates.length === 0) return;
    const current = await this.#client.hmget(KEY.samples, ...updates.map((u) => String(u.id)));
    const multi = this.#client.multi();
    updates.forEach((u, i) => {
      const text = current[i];
      if (text == null) return; // removed meanwhile
      const r = parseRecord(text);
      if (typeof r === 'string') return; // unreadable: stays quarantined
      multi.hset(
        KEY.samples,
        String(u.id),
        JSON.stringify({ ...r, model: u.model, modelVersion: u.modelVersion, embedding: embeddingToBytes(u.embedding).toString('base64') }),
      );
    });
    const results = await multi.exec();
    const failed = results?.find(([err]) => err);
    if (!results || failed) throw new GalleryStoreError(`re-embedding update failed in Redis: ${failed?.[0]?.message ?? 'transaction aborted'}`);
  }

  /** Change-channel messages skipped as malformed since this store opened. */
  get skippedMessages(): number {
    return this.#skipped;
  }

  /** A resync after a malformed message: now, or once the interval since the last one has passed. */
  #resyncInDoubt(changes: RemoteChanges): void {
    if (this.#closed || this.#doubtResyncTimer) return;
    const wait = this.#lastDoubtResync + DOUBT_RESYNC_INTERVAL_MS - Date.now();
    const run = () => {
      this.#doubtResyncTimer = null;
      this.#lastDoubtResync = Date.now();
      if (!this.#closed) changes.resync();
    };
    if (wait <= 0) run();
    else this.#doubtResyncTimer = setTimeout(run, wait).unref();
  }

  /** Applies one message of the change channel; never throws (a bad message is logged and answered by a resync). */
  #onMessage(changes: RemoteChanges, text: string): void {
    const m = parseChangeMessage(text);
    if (typeof m === 'string') {
      // Redis holds the truth: whatever the message meant, a resync catches it.
      this.#skipped++;
      this.#logBadMessage(new Error(`malformed change message skipped (${m}; ${this.#skipped} so far), resyncing: ${text.slice(0, 120)}`));
      this.#resyncInDoubt(changes);
      return;
    }
    if (m.origin === this.origin) {
      if (m.write !== null && this.#sent.has(m.write)) {
        this.#sent.set(m.write, m); // its answer is still awaited: the write applies it here when it comes
        return;
      }
      // Applied locally already, unless this server stopped waiting for it (a timeout): then it is applied now.
      if (m.write === null || !this.#inDoubt.delete(m.write)) return;
    }
    if (m.op === 'add') changes.added(m.samples);
    else if (m.op === 'remove') changes.removed(m.ids);
    else changes.resync();
  }

  /**
   * Subscribes to the change channel; resolves once subscribed, so a load that follows misses nothing. On every
   * later (re)connection it resubscribes and asks for a full resync, since messages may have been missed.
   */
  async watch(changes: RemoteChanges): Promise<void> {
    this.#subscriber.on('message', (channel: string, text: string) => {
      if (channel !== CHANNEL) return;
      try {
        this.#onMessage(changes, text);
      } catch (e) {
        // Nothing a message holds may take the server down.
        this.#skipped++;
        this.#logBadMessage(new Error(`change message failed (${(e as Error).message}), resyncing`));
        this.#resyncInDoubt(changes);
      }
    });
    // Registered after the first connection: every 'ready' from here on is a reconnection.
    this.#subscriber.on('ready', () => {
      if (this.#closed) return;
      void this.#subscriber.subscribe(CHANNEL).then(
        () => changes.resync(),
        (e: unknown) => console.error(`edgecv: gallery Redis: cannot subscribe: ${(e as Error).message}`),
      );
    });
    await this.#subscriber.subscribe(CHANNEL);
    // A subscription that stops answering (Redis stopped, a silent partition) would miss changes without knowing:
    // one that does not answer a ping in time is reconnected, and the reconnection resyncs.
    this.#pinger = setInterval(() => {
      if (this.#closed || this.#subscriber.status !== 'ready') return;
      this.#subscriber.ping().catch(() => {
        if (!this.#closed && this.#subscriber.status === 'ready') this.#subscriber.disconnect(true);
      });
    }, SUBSCRIPTION_PING_MS);
    this.#pinger.unref();
  }

  async close(): Promise<void> {
    this.#closed = true;
    if (this.#pinger) clearInterval(this.#pinger);
    if (this.#doubtResyncTimer) clearTimeout(this.#doubtResyncTimer);
    this.#subscriber.disconnect();
    await this.#client.quit().catch(() => this.#client.disconnect());
  }
}
