// Removing a sample by id is a compare-and-set against its subject, in both stores (a real SQLite file, a real
// redis-server on loopback): several removes of one id acknowledge it once (the others find nothing, as a
// second remove after the first does); a move racing a remove of the same sample never lets both succeed while
// the sample is gone; a whole-subject remove racing a move away never deletes the sample it no longer owns.

import { afterAll, describe, expect, it } from 'vitest';
import { startRedis, type RedisServer } from '../testkit/redis-server.js';
import { RedisGalleryStore } from '../src/gallery/redis-store.js';
import { SqliteGalleryStore } from '../src/gallery/sqlite-store.js';
import type { GalleryStore, NewSample } from '../src/gallery/types.js';
import { useTempDirs } from './helpers.js';

const newTmpDir = useTempDirs();
const redises: RedisServer[] = [];
const stores: GalleryStore[] = [];
afterAll(async () => {
  for (const s of stores) await s.close();
  for (const r of redises) await r.stop();
});

function sample(subject: string, seed: number): NewSample {
  const embedding = new Float32Array(512);
  embedding[seed % 512] = 1;
  return { subject, createdAt: Date.now(), model: 'm', modelVersion: 'v', embedding, crop: null, cropRect: null };
}

/** Every id the store holds for `subject` (one page: these subjects have a handful of samples). */
async function idsOf(store: GalleryStore, subject: string): Promise<number[]> {
  return (await store.samplesOf(subject, { after: 0, limit: 500 })).samples.map((x) => x.id);
}

async function ticks(n: number): Promise<void> {
  for (let i = 0; i < n; i++) await Promise.resolve();
}

/** Two handles on one store: for Redis, two connections (two servers of a fleet); SQLite has one writer. */
const kinds: [string, () => Promise<[GalleryStore, GalleryStore]>][] = [
  [
    'sqlite',
    async () => {
      const s = SqliteGalleryStore.open(newTmpDir('edgecv-gallery-'));
      return [s, s];
    },
  ],
  [
    'redis',
    async () => {
      const r = await startRedis(newTmpDir('edgecv-redis-'), ['--save', '', '--appendonly', 'no']);
      redises.push(r);
      return [await RedisGalleryStore.open(r.url, () => {}), await RedisGalleryStore.open(r.url, () => {})];
    },
  ],
];

describe.each(kinds)('%s store: remove by id is compare-and-set', (_kind, open) => {
  let store: GalleryStore;
  let other: GalleryStore;
  it('opens', async () => {
    [store, other] = await open();
    stores.push(...new Set([store, other]));
  });

  it('several removes of one id at once: acknowledged once, the others find nothing', async () => {
    for (let round = 0; round < 5; round++) {
      const s = await store.add(sample('alice', round));
      const answers = await Promise.all(Array.from({ length: 6 }, (_, i) => (i % 2 ? other : store).remove('alice', s.id)));
      expect(answers.filter((ids) => ids.length > 0)).toEqual([[s.id]]);
      expect(await store.remove('alice', s.id)).toEqual([]); // later: not found either
    }
  });

  it('a move racing a remove of the same sample: never both, and a moved sample is kept', async () => {
    for (let round = 0; round < 8; round++) {
      const s = await store.add(sample('carol', round));
      // the remove starts a few microtasks after the move, a different number each round, so that some rounds
      // land it between the move's reads and its write
      const [moved, removed] = await Promise.all([store.move(s.id, 'carol', 'dave'), ticks(round).then(() => other.remove('carol', s.id))]);
      expect((moved !== null) !== removed.length > 0).toBe(true); // exactly one succeeded
      const daves = await idsOf(store, 'dave');
      expect(daves.includes(s.id)).toBe(moved !== null);
      expect(await idsOf(store, 'carol')).not.toContain(s.id);
    }
  });

  it('a whole-subject remove racing a move away: the moved sample survives under its new subject', async () => {
    for (let round = 0; round < 6; round++) {
      const ids = [];
      for (let i = 0; i < 3; i++) ids.push((await store.add(sample('erin', round * 3 + i))).id);
      const [moved, removed] = await Promise.all([store.move(ids[1]!, 'erin', 'frank'), other.remove('erin')]);
      if (moved) {
        expect(removed).not.toContain(ids[1]);
        expect(await idsOf(store, 'frank')).toContain(ids[1]);
      } else {
        expect(removed).toContain(ids[1]);
      }
      expect(await idsOf(store, 'erin')).toEqual([]);
      await store.remove('frank');
    }
  });
});
