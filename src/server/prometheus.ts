// Prometheus export (prom-client): one registry for the process, served at GET /metrics.
//   - default process metrics (CPU, memory, event loop, GC, handles)
//   - edgecv_http_requests_total / edgecv_http_request_duration_seconds per method, route, status (a WebSocket
//     frame counts as a POST of its REST route); edgecv_websocket_connections: open WebSockets;
//     edgecv_websocket_refused_total / edgecv_websocket_cut_total: upgrades refused and sockets closed by a limit
//   - edgecv_inference_stage_seconds per model, backend, stage: every route that runs a model calls
//     observeInference() with the timings the engine returned
//   - engine worker pool: queue depth, running jobs, completed/failed/rejected jobs, inferences lent idle cores

import client from 'prom-client';
import type { BackendInfo, EngineStats, NetKey } from '../engine/types.js';

export const registry = new client.Registry();
client.collectDefaultMetrics({ register: registry });

const httpRequests = new client.Counter({
  name: 'edgecv_http_requests_total',
  help: 'HTTP requests answered, by method, route and status',
  labelNames: ['method', 'route', 'status'] as const,
  registers: [registry],
});

const httpDuration = new client.Histogram({
  name: 'edgecv_http_request_duration_seconds',
  help: 'Time from a request reaching the app to its response, by method, route and status',
  labelNames: ['method', 'route', 'status'] as const,
  buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
  registers: [registry],
});

const inferenceStage = new client.Histogram({
  name: 'edgecv_inference_stage_seconds',
  help: 'Time an inference spent in each stage (queue wait, decode, preprocess, inference, postprocess), by model and backend',
  labelNames: ['model', 'backend', 'stage'] as const,
  buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
  registers: [registry],
});

const webSocketConnections = new client.Gauge({
  name: 'edgecv_websocket_connections',
  help: 'Open WebSocket connections (each frame they carry is also counted as a request of its REST route)',
  registers: [registry],
});

/** +1 when a WebSocket opens, -1 when it closes. */
export function observeWebSocketConnection(delta: 1 | -1): void {
  webSocketConnections.inc(delta);
}

const webSocketRefused = new client.Counter({
  name: 'edgecv_websocket_refused_total',
  help: 'WebSocket upgrades refused by a limit: origin (foreign page, 403), address (per-address cap, 429), all (cap in all, 503)',
  labelNames: ['reason'] as const,
  registers: [registry],
});

const webSocketCut = new client.Counter({
  name: 'edgecv_websocket_cut_total',
  help: 'WebSockets the server closed: idle (no complete frame within --ws-idle-timeout), unread (answers not read)',
  labelNames: ['reason'] as const,
  registers: [registry],
});

export function observeWebSocketRefused(reason: 'origin' | 'address' | 'all'): void {
  webSocketRefused.inc({ reason });
}

export function observeWebSocketCut(reason: 'idle' | 'unread'): void {
  webSocketCut.inc({ reason });
}

export function observeHttpRequest(method: string, route: string, status: number, seconds: number): void {
  const labels = { method, route, status: String(status) };
  httpRequests.inc(labels);
  httpDuration.observe(labels, seconds);
}

/**
 * Records one inference's stage timings. `timings` is what the engine returns with a result: every finite
 * `<stage>Ms` field becomes a `stage="<stage>"` observation (queueMs -> queue, inferenceMs -> inference...),
 * so new models with other stages need no change here.
 *   observeInference(engine.models.faceDetector, engine.backend().backend, result.timings)
 */
export function observeInference(model: string, backend: string, timings: object): void {
  for (const [key, value] of Object.entries(timings)) {
    if (!key.endsWith('Ms') || typeof value !== 'number' || !Number.isFinite(value) || value < 0) continue;
    inferenceStage.observe({ model, backend, stage: key.slice(0, -2) }, value / 1000);
  }
}

/** Engines whose worker pools are reported; an engine that fails to answer (closed) is dropped. */
type WatchedEngine = { stats(): EngineStats; backend?(): Pick<BackendInfo, 'backend' | 'devices' | 'gpuLost' | 'gpuChecks'> };
const engines = new Set<WatchedEngine>();

function engineTotals(): EngineStats[] {
  const out: EngineStats[] = [];
  for (const e of engines) {
    try {
      out.push(e.stats());
    } catch {
      engines.delete(e);
    }
  }
  return out;
}

const sum = (pick: (s: EngineStats) => number) => engineTotals().reduce((n, s) => n + pick(s), 0);

new client.Gauge({
  name: 'edgecv_engine_queue_depth',
  help: 'Inference jobs waiting for a worker',
  registers: [registry],
  collect() {
    this.set(sum((s) => s.queued));
  },
});

new client.Gauge({
  name: 'edgecv_engine_running_jobs',
  help: 'Inference jobs executing now',
  registers: [registry],
  collect() {
    this.set(sum((s) => s.running));
  },
});

for (const [field, name, help] of [
  ['completed', 'edgecv_engine_jobs_completed_total', 'Inference jobs finished successfully'],
  ['failed', 'edgecv_engine_jobs_failed_total', 'Inference jobs finished with an error (e.g. an undecodable image)'],
  ['rejected', 'edgecv_engine_jobs_rejected_total', 'Inference calls refused because the queue was full or the engine closed'],
  ['lentRuns', 'edgecv_engine_lent_runs_total', 'Inferences run on every core because their job was alone in the engine (--idle-cores lend)'],
  ['coldRuns', 'edgecv_engine_cold_runs_total', 'Inferences at an input shape their session had not been warmed at (slower than later runs)'],
  ['gpuRuns', 'edgecv_engine_gpu_runs_total', 'Forward passes of GPU nets that ran on the GPU'],
  ['gpuFallbackRuns', 'edgecv_engine_gpu_fallback_runs_total', 'Forward passes of GPU nets that ran on the CPU because the GPU had failed them'],
] as const) {
  new client.Counter({
    name,
    help,
    registers: [registry],
    collect() {
      // the engine keeps the running total; mirror it
      this.reset();
      this.inc(sum((s) => s[field]));
    },
  });
}

new client.Gauge({
  name: 'edgecv_net_device',
  help: "1 for each net on the device it runs on now (gpu, cpu or cuda), with the reason (backend gpu or auto: the GPU check's verdict, or gpu-failed)",
  labelNames: ['net', 'device', 'reason'] as const,
  registers: [registry],
  collect() {
    this.reset();
    for (const e of engines) {
      const info = e.backend?.();
      for (const [net, device] of Object.entries(info?.devices ?? {})) {
        const reason = info?.gpuLost[net] ? 'gpu-failed' : (info?.gpuChecks?.[net as NetKey]?.code ?? 'backend');
        this.set({ net, device, reason }, 1);
      }
    }
  },
});

/** Reports `engine`'s worker pool (and where its nets run) in the engine metrics from now on. */
export function watchEngine(engine: WatchedEngine): void {
  engines.add(engine);
}

export function unwatchEngine(engine: WatchedEngine): void {
  engines.delete(engine);
}

/** What the gallery gauges read: the recognition service's sample count, subjects and rebuild state. */
export interface GallerySource {
  readonly size: number;
  readonly updating: boolean;
  /** Stored rows left out of the index (RecognitionService.quarantined). */
  readonly quarantined?: number;
  subjects(): readonly unknown[];
}

const galleries = new Set<GallerySource>();

const sumGalleries = (pick: (g: GallerySource) => number) => [...galleries].reduce((n, g) => n + pick(g), 0);

new client.Gauge({
  name: 'edgecv_gallery_samples',
  help: 'Enrolled face samples (embeddings) in the recognition gallery',
  registers: [registry],
  collect() {
    this.set(sumGalleries((g) => g.size));
  },
});

new client.Gauge({
  name: 'edgecv_gallery_subjects',
  help: 'Enrolled subjects in the recognition gallery',
  registers: [registry],
  collect() {
    this.set(sumGalleries((g) => g.subjects().length));
  },
});

new client.Gauge({
  name: 'edgecv_gallery_updating',
  help: '1 while the gallery is being rebuilt (bulk import, re-embedding, resync): predictions answer 503',
  registers: [registry],
  collect() {
    this.set(sumGalleries((g) => (g.updating ? 1 : 0)));
  },
});

new client.Gauge({
  name: 'edgecv_gallery_quarantined',
  help: 'Stored gallery rows left out of the index (unreadable, or an embedding that cannot be searched); see the log',
  registers: [registry],
  collect() {
    this.set(sumGalleries((g) => g.quarantined ?? 0));
  },
});

/** Reports `gallery` in the gallery metrics from now on. */
export function watchGallery(gallery: GallerySource): void {
  galleries.add(gallery);
}

export function unwatchGallery(gallery: GallerySource): void {
  galleries.delete(gallery);
}
