// The fleet gallery store: samples in Redis, changes broadcast on a pub/sub channel so that every server applies
// them, and a full resync whenever this server's subscription (re)connects, since it may have missed messages.
//
// Keys (prefix edgecv:gallery:):
//   samples    hash  id -> JSON {subject, createdAt, model, modelVersion, embedding (base64 float32 LE), cropRect}
//   crops      hash  id -> JPEG bytes
//   subjects   hash  id -> subject (small: what removal scans)
//   next-id    counter for sample ids
//   changes    pub/sub channel: {origin, op: 'add', samples} | {origin, op: 'remove', ids} | {origin, op: 'resync'}

import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { embeddingFromBytes, embeddingToBytes, GalleryStoreError, type GalleryStore, type NewSample, type Rect, type RemoteChanges, type SampleVector, type StoredSample } from './types.js';

const PREFIX = 'edgecv:gallery:';
const KEY = { samples: `${PREFIX}samples`, crops: `${PREFIX}crops`, subjects: `${PREFIX}subjects`, nextId: `${PREFIX}next-id` };
const CHANNEL = `${PREFIX}changes`;

interface SampleRecord {
  subject: string;
  createdAt: number;
  model: string;
  modelVersion: string;
  embedding: string;
  cropRect: Rect | null;
}

interface WireVector {
  id: number;
  subject: string;
  createdAt: number;
  model: string;
  modelVersion: string;
  embedding: string;
}

type ChangeMessage =
  | { origin: string; op: 'add'; samples: WireVector[] }
  | { origin: string; op: 'remove'; ids: number[] }
  | { origin: string; op: 'resync' };

function record(s: NewSample): SampleRecord {
  return { subject: s.subject, createdAt: s.createdAt, model: s.model, modelVersion: s.modelVersion, embedding: embeddingToBytes(s.embedding).toString('base64'), cropRect: s.cropRect };
}

function vectorOf(id: number, r: SampleRecord | WireVector): SampleVector {
  return { id, subject: r.subject, createdAt: r.createdAt, model: r.model, modelVersion: r.modelVersion, embedding: embeddingFromBytes(Buffer.from(r.embedding, 'base64')) };
}

function parseRecord(text: string): SampleRecord {
  const r = JSON.parse(text) as SampleRecord;
  if (typeof r.subject !== 'string' || typeof r.embedding !== 'string') throw new Error('malformed gallery sample in Redis');
  return r;
}

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
  #closed = false;

  private constructor(client: Redis, subscriber: Redis) {
    this.#client = client;
    this.#subscriber = subscriber;
  }

  /** Connects to redis://host:port/db. Rejects when the first connection fails. */
  static async open(url: string): Promise<RedisGalleryStore> {
    const options = {
      lazyConnect: true,
      // Fail fast while disconnected: an enrolment must answer an error, not hang until Redis is back.
      enableOfflineQueue: false,
      maxRetriesPerRequest: 1,
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
    return new RedisGalleryStore(client, subscriber);
  }

  async vectors(): Promise<SampleVector[]> {
    const out: SampleVector[] = [];
    let cursor = '0';
    do {
      const [next, flat] = await this.#client.hscan(KEY.samples, cursor, 'COUNT', 500);
      for (let i = 0; i < flat.length; i += 2) out.push(vectorOf(Number(flat[i]), parseRecord(flat[i + 1]!)));
      cursor = next;
    } while (cursor !== '0');
    return out.sort((a, b) => a.id - b.id);
  }

  async *samples(batch = 256): AsyncIterable<StoredSample[]> {
    const ids = (await this.#client.hkeys(KEY.subjects)).map(Number).sort((a, b) => a - b);
    for (let i = 0; i < ids.length; i += batch) {
      const page = ids.slice(i, i + batch);
      const records = await this.#client.hmget(KEY.samples, ...page.map(String));
      const crops = await this.#client.hmgetBuffer(KEY.crops, ...page.map(String));
      const out: StoredSample[] = [];
      page.forEach((id, k) => {
        const text = records[k];
        if (text == null) return; // removed meanwhile
        const r = parseRecord(text);
        out.push({ ...vectorOf(id, r), crop: crops[k] ?? null, cropRect: r.cropRect ?? null });
      });
      if (out.length) yield out;
    }
  }

  #publish(multi: ReturnType<Redis['multi']>, message: ChangeMessage): void {
    multi.publish(CHANNEL, JSON.stringify(message));
  }

  async #write(samples: NewSample[], replace: boolean): Promise<StoredSample[]> {
    const last = samples.length ? await this.#client.incrby(KEY.nextId, samples.length) : 0;
    const stored = samples.map((s, i) => ({ ...s, id: last - samples.length + 1 + i }));
    const multi = this.#client.multi();
    if (replace) multi.del(KEY.samples, KEY.crops, KEY.subjects);
    for (const s of stored) {
      multi.hset(KEY.samples, String(s.id), JSON.stringify(record(s)));
      multi.hset(KEY.subjects, String(s.id), s.subject);
      if (s.crop) multi.hset(KEY.crops, String(s.id), s.crop);
    }
    if (replace || stored.length > 64) {
      // A bulk change: every server reloads rather than receiving it all in one message.
      this.#publish(multi, { origin: this.origin, op: 'resync' });
    } else {
      const wire = stored.map((s) => ({ id: s.id, ...record(s) }));
      this.#publish(multi, { origin: this.origin, op: 'add', samples: wire });
    }
    const results = await multi.exec();
    const failed = results?.find(([err]) => err);
    if (!results || failed) throw new GalleryStoreError(`gallery write failed in Redis: ${failed?.[0]?.message ?? 'transaction aborted'}`);
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
    let ids: number[];
    if (id !== undefined) {
      ids = (await this.#client.hget(KEY.subjects, String(id))) === subject ? [id] : [];
    } else {
      const all = await this.#client.hgetall(KEY.subjects);
      ids = Object.entries(all).filter(([, s]) => s === subject).map(([k]) => Number(k));
    }
    if (ids.length === 0) return [];
    const keys = ids.map(String);
    const multi = this.#client.multi().hdel(KEY.samples, ...keys).hdel(KEY.crops, ...keys).hdel(KEY.subjects, ...keys);
    this.#publish(multi, { origin: this.origin, op: 'remove', ids });
    const results = await multi.exec();
    if (!results || results.some(([err]) => err)) throw new GalleryStoreError('gallery removal failed in Redis');
    return ids;
  }

  async updateEmbeddings(updates: { id: number; model: string; modelVersion: string; embedding: Float32Array }[]): Promise<void> {
    if (updates.length === 0) return;
    const current = await this.#client.hmget(KEY.samples, ...updates.map((u) => String(u.id)));
    const multi = this.#client.multi();
    updates.forEach((u, i) => {
      const text = current[i];
      if (text == null) return; // removed meanwhile
      const r = parseRecord(text);
      multi.hset(KEY.samples, String(u.id), JSON.stringify({ ...r, model: u.model, modelVersion: u.modelVersion, embedding: embeddingToBytes(u.embedding).toString('base64') }));
    });
    await multi.exec();
  }

  /**
   * Subscribes to the change channel; resolves once subscribed, so a load that follows misses nothing. On every
   * later (re)connection it resubscribes and asks for a full resync, since messages may have been missed.
   */
  async watch(changes: RemoteChanges): Promise<void> {
    this.#subscriber.on('message', (channel: string, text: string) => {
      if (channel !== CHANNEL) return;
      let m: ChangeMessage;
      try {
        m = JSON.parse(text) as ChangeMessage;
      } catch {
        return; // not ours
      }
      if (m.origin === this.origin) return; // applied locally already
      if (m.op === 'add' && Array.isArray(m.samples)) changes.added(m.samples.map((s) => vectorOf(s.id, s)));
      else if (m.op === 'remove' && Array.isArray(m.ids)) changes.removed(m.ids.filter(Number.isSafeInteger));
      else if (m.op === 'resync') changes.resync();
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
  }

  async close(): Promise<void> {
    this.#closed = true;
    this.#subscriber.disconnect();
    await this.#client.quit().catch(() => this.#client.disconnect());
  }
}
