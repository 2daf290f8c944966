// The fleet store when Redis misbehaves (malformed messages, a frozen Redis), with real redis-server processes and real
// RecognitionService instances (real engine):
//  - an answer lost between Redis and a server (a TCP relay in between holds Redis's replies): the enrolment ends
//    in bounded time; when its broadcast came it is acknowledged, otherwise it is a 503 "may or may not be stored",
//    and when Redis did apply it every server, this one included, ends up with it: acknowledged means stored, and
//    the fleet agrees with Redis either way; a removal whose answer is lost is acknowledged with the ids its
//    broadcast carries;
//  - the change channel: no message, however malformed, throws out of the store's handler;
//  - persistence: what CONFIG (or, where CONFIG is refused, INFO) says is reported and warned about.

import net from 'node:net';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadJohns, type LabelledPhoto } from '../testkit/face-verification.js';
import { CHANGE_CHANNEL, malformedChangeMessages } from '../testkit/fuzz/redis-channel.js';
import { startRedis, type RedisServer } from '../testkit/redis-server.js';
import { eventually } from '../testkit/server-process.js';
import { RecognitionService } from '../src/gallery/recognition-service.js';
import { RedisGalleryStore } from '../src/gallery/redis-store.js';
import { GalleryStoreError, type RemoteChanges, type SampleVector } from '../src/gallery/types.js';
import type { Engine } from '../src/index.js';
import { DATA_DIR, openEngine, useTempDirs } from './helpers.js';

const newTmpDir = useTempDirs();
const redises: RedisServer[] = [];
let engine: Engine;
let johns: Map<string, LabelledPhoto[]>;

beforeAll(async () => {
  engine = await openEngine({ workers: 1 });
  johns = new Map();
  for (const p of loadJohns(DATA_DIR)) johns.set(p.subject, [...(johns.get(p.subject) ?? []), p]);
});
afterAll(async () => {
  await engine?.close();
  for (const r of redises) await r.stop();
});

async function redisWith(args: string[]): Promise<RedisServer> {
  const r = await startRedis(newTmpDir('edgecv-redis-'), args);
  redises.push(r);
  return r;
}

/**
 * A TCP relay to Redis that, once armed, starts holding Redis's replies when a client sends `command` (EXEC unless
 * told): on that connection only, or on every connection (then the subscription's broadcasts are held too).
 * release() lets them go.
 */
async function replyHoldingRelay(
  port: number,
): Promise<{ url: string; arm(scope: 'sender' | 'all', command?: string): void; heldBytes(): number; release(): void; close(): void }> {
  const relays: { held: Buffer[]; holding: boolean; client: net.Socket }[] = [];
  let armed: { scope: 'sender' | 'all'; command: string } | null = null;
  const server = net.createServer((client) => {
    const upstream = net.connect(port, '127.0.0.1');
    const relay = { held: [] as Buffer[], holding: false, client };
    relays.push(relay);
    client.on('data', (d: Buffer) => {
      if (armed && d.toString('latin1').toUpperCase().includes(`\r\n${armed.command}\r\n`)) {
        for (const r of armed.scope === 'all' ? relays : [relay]) r.holding = true;
        armed = null;
      }
      upstream.write(d);
    });
    upstream.on('data', (d: Buffer) => (relay.holding ? relay.held.push(d) : client.write(d)));
    const end = () => {
      client.destroy();
      upstream.destroy();
    };
    client.on('error', end).on('close', end);
    upstream.on('error', end).on('close', end);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `redis://127.0.0.1:${(server.address() as net.AddressInfo).port}/0`,
    arm: (scope, command = 'EXEC') => (armed = { scope, command }),
    heldBytes: () => relays.reduce((n, r) => n + r.held.reduce((m, d) => m + d.length, 0), 0),
    release: () => {
      for (const r of relays) {
        r.holding = false;
        for (const d of r.held.splice(0)) r.client.write(d);
      }
    },
    close: () => {
      server.close();
      for (const r of relays) r.client.destroy();
    },
  };
}

const counts = (service: RecognitionService) => Object.fromEntries(service.subjects().map((s) => [s.subject, s.samples]));

describe('an answer lost between Redis and a server', () => {
  it('acknowledges a write whose broadcast came, reports one whose broadcast did not come as in doubt, and the fleet agrees with Redis either way', async () => {
    const redis = await redisWith(['--save', '', '--appendonly', 'yes']);
    const relay = await replyHoldingRelay(redis.port);
    const log: string[] = [];
    const a = await RecognitionService.open(engine, await RedisGalleryStore.open(relay.url, (m) => log.push(m)), { log: (m) => log.push(m) });
    const b = await RecognitionService.open(engine, await RedisGalleryStore.open(redis.url, () => {}), { log: () => {} });
    try {
      await Promise.all([a.ready, b.ready]);
      const [first, second] = [...johns.keys()];
      const photos = johns.get(first!)!;

      // 1. Only the EXEC's answer is held: its broadcast reaches a's subscription, which proves it was applied.
      relay.arm('sender');
      const t0 = performance.now();
      const acked = await a.enrol(first, photos[0]!.bytes);
      const ackMs = performance.now() - t0;
      expect(relay.heldBytes()).toBeGreaterThan(0); // the EXEC's answer never came: the broadcast acknowledged it
      relay.release();
      expect(ackMs).toBeLessThan(5000);
      expect(redis.cli('HGET', 'edgecv:gallery:subjects', String(acked.id))).toBe(first);

      // 2. Every answer is held, the broadcast too: in doubt, within bounded time.
      relay.arm('all');
      const t1 = performance.now();
      const doubt = await a.enrol(second, johns.get(second!)![0]!.bytes).then(
        () => null,
        (e: unknown) => e,
      );
      const doubtMs = performance.now() - t1;
      expect(doubt).toBeInstanceOf(GalleryStoreError);
      expect((doubt as GalleryStoreError).inDoubt).toBe(true);
      expect(doubtMs).toBeLessThan(5000);
      expect(counts(a)[second!]).toBeUndefined();
      // Redis did apply it: once the answers flow again, a follows its own broadcast, as b does.
      expect(redis.cli('HVALS', 'edgecv:gallery:subjects').split('\n')).toContain(second);
      relay.release();
      expect(await eventually(async () => counts(a)[second!] === 1 && counts(b)[second!] === 1)).toBe(true);
      expect(counts(a)).toEqual(counts(b));
      expect(counts(a)).toEqual({ [first!]: 1, [second!]: 1 });

      // 3. A removal (a compare-and-set script) whose answer is held but whose broadcast came: acknowledged with
      // the ids the script removed, which the broadcast carries.
      relay.arm('sender');
      const removed = await a.remove(first!);
      expect(relay.heldBytes()).toBeGreaterThan(0);
      relay.release();
      expect(removed).toEqual([acked.id]);
      expect(await eventually(async () => counts(a)[first!] === undefined && counts(b)[first!] === undefined)).toBe(true);
      // and persistence was reported as AOF, with no warning
      expect(a.status().store).toEqual({ kind: 'redis', persistence: 'aof', warning: null });
      expect(log.join('\n')).not.toMatch(/WARNING/);
    } finally {
      relay.release();
      await Promise.all([a.close(), b.close()]);
      relay.close();
    }
  });
});

describe('a resync whose read of Redis gets no answer', () => {
  it('answers predictions from the whole gallery meanwhile, applies a change that comes, and keeps it after', async () => {
    const redis = await redisWith(['--save', '', '--appendonly', 'no']);
    const relay = await replyHoldingRelay(redis.port);
    const log: string[] = [];
    const a = await RecognitionService.open(engine, await RedisGalleryStore.open(relay.url, () => {}), { log: (m) => log.push(m) });
    const b = await RecognitionService.open(engine, await RedisGalleryStore.open(redis.url, () => {}), { log: () => {} });
    const publisher = new Redis(redis.url);
    try {
      await Promise.all([a.ready, b.ready]);
      const [first, second] = [...johns.keys()] as [string, string];
      await b.enrol(first, johns.get(first)![0]!.bytes);
      expect(await eventually(async () => counts(a)[first] === 1)).toBe(true);
      // Another server asks for a resync; a's read of the whole store (HSCAN) gets no answer until released.
      relay.arm('sender', 'HSCAN');
      await publisher.publish(CHANGE_CHANNEL, JSON.stringify({ origin: 'another-server', write: null, op: 'resync' }));
      expect(await eventually(async () => relay.heldBytes() > 0)).toBe(true);
      const meanwhile = await a.predict(johns.get(first)![8]!.bytes);
      expect(a.state).toBe('ready');
      expect(meanwhile).toMatchObject({ subject: first });
      await b.enrol(second, johns.get(second)![0]!.bytes);
      expect(await eventually(async () => counts(a)[second] === 1)).toBe(true);
      relay.release();
      expect(await eventually(async () => log.some((m) => /^gallery resync: /.test(m)))).toBe(true);
      // A read whose snapshot predates b's second enrolment gets the change again after its swap (how the update
      // window orders them: test/update-window.test.ts).
      expect(counts(a)).toEqual({ [first]: 1, [second]: 1 });
      expect(await a.predict(johns.get(second)![8]!.bytes)).toMatchObject({ subject: second });
    } finally {
      relay.release();
      publisher.disconnect();
      await Promise.all([a.close(), b.close()]);
      relay.close();
    }
  });
});

describe('the change channel', () => {
  it('never lets a malformed message throw out of the handler: each is skipped, and a resync follows (at most one per interval)', async () => {
    const redis = await redisWith(['--save', '', '--appendonly', 'no']);
    const store = await RedisGalleryStore.open(redis.url, () => {});
    const seen = { added: [] as SampleVector[], removed: [] as number[][], resyncs: 0 };
    const changes: RemoteChanges = { added: (s) => seen.added.push(...s), removed: (ids) => seen.removed.push(ids), resync: () => seen.resyncs++ };
    await store.watch(changes);
    const { model, version, dim } = engine.faceEmbedder()!;
    const messages = malformedChangeMessages({ model, version, dim });
    const publisher = new Redis(redis.url);
    try {
      for (const [, text] of messages) await publisher.publish(CHANGE_CHANNEL, text);
      await publisher.publish(CHANGE_CHANNEL, JSON.stringify({ origin: 'end', op: 'remove', ids: [1] })); // a marker
      expect(await eventually(async () => seen.removed.some((ids) => ids[0] === 1))).toBe(true);
      // Well-formed ones pass: four adds whose vectors the service quarantines (NaN, Infinity, zero, short), one of
      // another model (re-embedded or left out by the service), one removal of unknown ids, one resync. Every other
      // one was skipped.
      const far = 900_000_000;
      expect(seen.added.map((v) => v.id)).toEqual([far + 2, far + 3, far + 4, far + 5, far + 6]);
      expect(seen.removed).toEqual([[far + 7, far + 8], [1]]);
      expect(store.skippedMessages).toBe(messages.length - 7);
      // The first skipped one resynced at once; the rest wait for the interval (one more, later), besides the
      // well-formed 'resync': a stream of bad messages does not keep the gallery rebuilding.
      expect(seen.resyncs).toBeGreaterThanOrEqual(2);
      expect(seen.resyncs).toBeLessThanOrEqual(3);
    } finally {
      publisher.disconnect();
      await store.close();
    }
  });
});

describe('persistence of the fleet store', () => {
  it('reports what CONFIG says, falls back to INFO where CONFIG is refused, and warns when acknowledged samples would be lost', async () => {
    const cases: [string[], string, RegExp | null][] = [
      [['--save', '', '--appendonly', 'no'], 'none', /does not persist/],
      [['--save', '3600 1', '--appendonly', 'no'], 'rdb', /RDB snapshots only/],
      [['--save', '3600 1', '--appendonly', 'yes'], 'aof+rdb', null],
      [['--save', '', '--appendonly', 'yes', '--rename-command', 'CONFIG', ''], 'aof', null],
      [['--save', '', '--appendonly', 'no', '--rename-command', 'CONFIG', ''], 'unknown', /cannot tell whether/],
    ];
    for (const [args, persistence, warning] of cases) {
      const redis = await redisWith(args);
      const log: string[] = [];
      const store = await RedisGalleryStore.open(redis.url, (m) => log.push(m));
      try {
        const d = store.durability();
        expect(d.persistence, args.join(' ')).toBe(persistence);
        if (warning) {
          expect(d.warning).toMatch(warning);
          expect(log.join('\n')).toMatch(/^WARNING: /);
        } else {
          expect(d.warning).toBeNull();
          expect(log).toEqual([]);
        }
      } finally {
        await store.close();
      }
    }
  });
});
