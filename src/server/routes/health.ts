// GET /health/live and /health/ready: what a load balancer or Kubernetes asks. Liveness: the process answers
// (restart it if not). Readiness: it can serve now (send it traffic if so): the models are loaded, the gallery is
// loaded and not being rebuilt (a rebuild or Redis resync makes recognition answer 503), the server is not draining,
// and the engine queue has room. Both answer JSON; readiness 200 or 503. /test/ keeps its old meaning.

import { Hono } from 'hono';
import type { Engine } from '../../engine/engine.js';
import type { RecognitionService } from '../../gallery/recognition-service.js';
import type { DrainState } from '../drain.js';

export type GalleryReadiness = 'absent' | 'loading' | 'updating' | 'failed' | 'ready';

export interface HealthDeps {
  engine: Partial<Pick<Engine, 'stats' | 'models'>>;
  recognition?: Pick<RecognitionService, 'ready' | 'updating'>;
  drain?: DrainState;
}

export interface Readiness {
  ready: boolean;
  draining: boolean;
  models: boolean;
  gallery: GalleryReadiness;
  queue: { queued: number; limit: number; saturated: boolean } | null;
}

/** Tracks the gallery's first load, and says what readiness is now. */
export function readinessProbe(deps: HealthDeps): () => Readiness {
  let load: 'loading' | 'loaded' | 'failed' = 'loading';
  deps.recognition?.ready.then(
    () => (load = 'loaded'),
    () => (load = 'failed'),
  );
  return () => {
    const { recognition, drain, engine } = deps;
    let gallery: GalleryReadiness = 'absent';
    if (recognition) gallery = load === 'failed' ? 'failed' : load === 'loading' ? 'loading' : recognition.updating ? 'updating' : 'ready';
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
