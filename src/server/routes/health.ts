// GET /health/live and /health/ready: what a load balancer or Kubernetes asks. Liveness: the process answers
// (restart it if not). Readiness: it can serve now (send it traffic if so): the models are loaded, the gallery is
// loaded and not being rebuilt (a rebuild or Redis resync makes recognition answer 503), the server is not draining,
// and the engine queue has room. Both answer JSON; readiness 200 or 503. /test/ keeps its old meaning.

import { Hono } from 'hono';
import type { Engine } from '../../engine/engine.js';
import type { GalleryState, RecognitionService } from '../../gallery/recognition-service.js';
import type { DrainState } from '../drain.js';

/** The gallery's GalleryState, 'failed' when its first load failed, 'absent' without recognition. */
export type GalleryReadiness = GalleryState | 'absent' | 'failed';

export interface HealthDeps {
  engine: Partial<Pick<Engine, 'stats' | 'models'>>;
  recognition?: Pick<RecognitionService, 'ready' | 'state'>;
  drain?: DrainState;
}

export interface Readiness {
  ready: boolean;
  draining: boolean;
  models: boolean;
  gallery: GalleryReadiness;
  queue: { queued: number; limit: number; saturated: boolean } | null;
}

/** Says what readiness is now (and remembers whether the gallery's first load failed). */
export function readinessProbe(deps: HealthDeps): () => Readiness {
  let loadFailed = false;
  deps.recognition?.ready.catch(() => (loadFailed = true));
  return () => {
    const { recognition, drain, engine } = deps;
    let gallery: GalleryReadiness = 'absent';
    // 'syncing': a rebuild or a Redis resync is under way and recognition answers 503
    if (recognition) gallery = loadFailed ? 'failed' : recognition.state;
    const stats = engine.stats?.();
    // saturated: the next image would be refused (503) by the engine queue
    const queue = stats ? { queued: stats.queued, limit: stats.queueLimit, saturated: stats.queued >= stats.queueLimit } : null;
    const models = engine.models === undefined || Object.values(engine.models).some((name) => name !== null);
    const draining = drain?.draining ?? false;
    const ready = models && !draining && (gallery === 'absent' || gallery === 'ready') && !(queue?.saturated ?? false);
    return { ready, draining, models, gallery, queue };
  };
}

/** Mounted at /health. */
export function healthRoutes(deps: HealthDeps): Hono {
  const readiness = readinessProbe(deps);
  const started = Date.now();
  return new Hono()
    .get('/live', (c) => c.json({ live: true, pid: process.pid, uptimeS: Math.round((Date.now() - started) / 1000) }))
    .get('/ready', (c) => {
      const r = readiness();
      c.header('Cache-Control', 'no-store');
      return c.json(r, r.ready ? 200 : 503);
    });
}
