// Publishes seeded malformed messages on the fleet's change channel of a real redis-server (redis-channel.ts), for
// `npm run fuzz` (bench/fuzz/fuzz.ts) and test/gallery-fleet.test.ts. The callers check that every subscribed
// server survived, went back to 'ready' and still agrees with Redis.

import { Redis } from 'ioredis';
import { Rng } from './cases.js';
import { CHANGE_CHANNEL, randomChangeMessage, type ChannelEmbedder } from './redis-channel.js';

export interface ChannelFuzzReport {
  published: number;
  /** Messages by kind (the label without its mutation). */
  byKind: Record<string, number>;
  wallMs: number;
}

export async function runChannelFuzz(opts: {
  redisUrl: string;
  seed: number;
  messages: number;
  embedder: ChannelEmbedder;
}): Promise<ChannelFuzzReport> {
  const publisher = new Redis(opts.redisUrl, { maxRetriesPerRequest: 1 });
  const rng = new Rng(opts.seed);
  const byKind: Record<string, number> = {};
  const t0 = performance.now();
  try {
    for (let i = 0; i < opts.messages; i++) {
      const [label, text] = randomChangeMessage(rng, opts.embedder);
      const kind = label.split(',')[0]!;
      byKind[kind] = (byKind[kind] ?? 0) + 1;
      await publisher.publish(CHANGE_CHANNEL, text);
    }
  } finally {
    publisher.disconnect();
  }
  return { published: opts.messages, byKind, wallMs: performance.now() - t0 };
}
