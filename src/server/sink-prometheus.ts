// The metrics sink's state in GET /metrics: how far behind InfluxDB is, what waits, how often sends failed.

import client from 'prom-client';
import type { SinkStatus } from '../metrics/influx-sink.js';
import { registry } from './prometheus.js';

const sinks = new Set<{ status(): SinkStatus }>();

function each(set: (status: SinkStatus) => void): void {
  for (const sink of sinks) set(sink.status());
}

/** A gauge of each sink's status, labelled with its URL. */
function sinkGauge(name: string, help: string, value: (s: SinkStatus) => number): void {
  new client.Gauge({
    name,
    help,
    labelNames: ['url'] as const,
    registers: [registry],
    collect() {
      this.reset();
      each((s) => this.set({ url: s.url }, value(s)));
    },
  });
}

/** A counter of each sink's status (a running total the sink keeps), labelled with its URL. */
function sinkCounter(name: string, help: string, value: (s: SinkStatus) => number): void {
  new client.Counter({
    name,
    help,
    labelNames: ['url'] as const,
    registers: [registry],
    collect() {
      this.reset();
      each((s) => this.inc({ url: s.url }, value(s)));
    },
  });
}

sinkGauge(
  'edgecv_metrics_sink_lag_seconds',
  'Age of the oldest metrics sample InfluxDB has not acknowledged yet (0: caught up)',
  (s) => s.lagSeconds,
);
sinkGauge('edgecv_metrics_sink_backlog_samples', 'Metrics samples stored locally and not yet acknowledged by InfluxDB', (s) => s.backlogSamples);
sinkCounter(
  'edgecv_metrics_sink_errors_total',
  'Failed sends (and checks) of metrics samples to InfluxDB; each is retried with backoff',
  (s) => s.errors,
);
sinkCounter('edgecv_metrics_sink_points_total', 'Points (rows of the five series) InfluxDB acknowledged', (s) => s.pointsWritten);
sinkCounter(
  'edgecv_metrics_sink_refused_points_total',
  'Points InfluxDB refused for good (400 partial write, e.g. beyond its retention policy): counted, not sent again',
  (s) => s.pointsRefused,
);

/** Reports `sink` in the sink metrics from now on. */
export function watchSink(sink: { status(): SinkStatus }): void {
  sinks.add(sink);
}

export function unwatchSink(sink: { status(): SinkStatus }): void {
  sinks.delete(sink);
}
