// The engine as the server uses it: every image job goes through the fair scheduler (fair-scheduler.ts) as the
// job of the client whose request made it (client-identity.ts), its cost the image's pixel count read from its
// header; the queue depth it reports counts the jobs waiting there too (readiness, /metrics).

import type { Engine } from '../engine/engine.js';
import { tryReadImageHeader } from '../engine/image-header.js';
import { currentClient } from './client-identity.js';
import { FairScheduler } from './fair-scheduler.js';

/** The engine's image methods: each takes the image first. */
const IMAGE_METHODS = new Set<PropertyKey>(['detectFaces', 'detectPoses', 'detectObjects', 'embedFace', 'recognizeFace']);

/** An image's cost: its pixels, 1 when its header cannot be read (the engine refuses it at once). */
export function imageCost(image: unknown): number {
  if (!(image instanceof Uint8Array)) return 1;
  const header = tryReadImageHeader(image);
  return header ? header.width * header.height : 1;
}

/** `engine` with fair shares of its workers between clients; the scheduler is `engine.stats()`'s workers wide. */
export function withFairShares(engine: Engine, scheduler?: FairScheduler): Engine {
  const { workers, queueLimit } = engine.stats();
  const fair = scheduler ?? new FairScheduler({ slots: workers, queueLimit });
  return new Proxy(engine, {
    get(target, prop) {
      if (prop === 'stats') {
        return () => {
          const s = target.stats();
          return { ...s, queued: s.queued + fair.waiting };
        };
      }
      const value: unknown = Reflect.get(target, prop, target);
      if (typeof value !== 'function') return value;
      const method = (value as (...args: unknown[]) => unknown).bind(target);
      if (!IMAGE_METHODS.has(prop)) return method;
      return (image: unknown, ...rest: unknown[]) => fair.run(currentClient(), imageCost(image), () => method(image, ...rest) as Promise<unknown>);
    },
  });
}
