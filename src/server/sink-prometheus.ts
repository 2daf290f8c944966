// The metrics sink's state in GET /metrics: how far behind InfluxDB is, what waits, how often sends failed.

import client from 'prom-client';
import type { SinkStatus } from '../metrics/influx-sink.js';
import { registry } from './prometheus.js';

const sinks = new Set<{ status(): SinkStatus }>();

function each(set: (status: SinkStatus) => void): void {
  for (const sink of sinks) set(sink.status());
}

new client.Gauge({
  name: 'edgecv_metrics_sink_lag_seconds',
  help: 'Age of the oldest metrics sample InfluxDB has not acknowledged yet (0: caught up)',
  labelNames: ['url'] as const,
  registers: [registry],
  collect() {
    this.reset();
    each((s) => this.set({ url: s.url }, s.lagSeconds));
  },
});

new client.Gauge({
  name: 'edgecv_metrics_sink_backlog_samples',
  help: 'Metrics samples stored locally and not yet acknowledged by InfluxDB',
  labelNames: ['url'] as const,
  registers: [registry],
  collect() {
    this.reset();
    each((s) => this.set({ url: s.url }, s.backlogSamples));
  },
});

new client.Counter({
  name: 'edgecv_metrics_sink_errors_total',
  help: 'Failed sends (and checks) of metrics samples to InfluxDB; each is retried with backoff',
  labelNames: ['url'] as const,
  registers: [registry],
  collect() {
    this.reset();
    each((s) => this.inc({ url: s.url }, s.errors));
  },
});

new client.Counter({
  name: 'edgecv_metrics_sink_points_total',
  help: 'Points (rows of the five series) InfluxDB acknowledged',
  labelNames: ['url'] as const,
  registers: [registry],
  collect() {
    this.reset();
    each((s) => this.inc({ url: s.url }, s.pointsWritten));
  },
});

new client.Counter({
  name: 'edgecv_metrics_sink_refused_points_total',
  help: 'Points InfluxDB refused for good (400 partial write, e.g. beyond its retention policy): counted, not sent again',
  labelNames: ['url'] as const,
  registers: [registry],
  collect() {
    this.reset();
    each((s) => this.inc({ url: s.url }, s.pointsRefused));
  },
});

/** Reports `sink` in the sink metrics from now on. */
export function watchSink(sink: { status(): SinkStatus }): void {
  sinks.add(sink);
}

export function unwatchSink(sink: { status(): SinkStatus }): void {
  sinks.delete(sink);
}
