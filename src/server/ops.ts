// What the operator-facing routes (login, metrics query, audit) need; serve.ts builds it from the data folder.

import type { Server } from 'node:net';
import { AuditLog } from '../audit/audit-log.js';
import { AuthService } from '../auth/auth-service.js';
import type { ServerConfig } from '../config.js';
import { DEFAULT_METRICS_INTERVAL_MS, MetricsCollector } from '../metrics/collector.js';
import { parseInfluxUrl } from '../metrics/influx-client.js';
import { InfluxSink, SINK_BACKOFF_MAX_MS, type SinkStatus } from '../metrics/influx-sink.js';
import { resolveIdentity, type InstanceIdentity } from '../metrics/identity.js';
import type { MetricsAppQuery } from '../metrics/query.js';
import { MetricsQueryRunner } from '../metrics/query-runner.js';
import { MetricsStore } from '../metrics/store.js';
import { TrafficMeter } from '../metrics/traffic.js';
import { unwatchSink, watchSink } from './sink-prometheus.js';

export interface OpsDeps {
  identity: InstanceIdentity;
  /** Answers metrics queries as JSON text (MetricsQueryRunner: off the event loop). */
  metrics: { answer(query: MetricsAppQuery): Promise<string> };
  auth: AuthService;
  audit?: AuditLog;
  /** The InfluxDB sink (--metrics-sink), when there is one: its lag, backlog and errors. */
  sink?: { status(): SinkStatus };
}

/** The operator services of a running server, opened from its data folder. */
export interface OpsRuntime {
  ops: OpsDeps;
  /** Starts counting the listening servers' traffic and sampling the metrics. */
  start(...servers: Server[]): void;
  /**
   * Stops sampling, closes the store and flushes the audit trail. A sink send in progress gets up to
   * `sinkWaitMs` (what is left of the drain), then is ended.
   */
  close(sinkWaitMs?: number): Promise<void>;
}

export function openOps(config: ServerConfig): OpsRuntime {
  const identity = resolveIdentity(config);
  const store = MetricsStore.open(config.dataDir);
  const queries = new MetricsQueryRunner(store, identity);
  const traffic = new TrafficMeter();
  const sink = config.metricsSink
    ? new InfluxSink({
        store,
        target: parseInfluxUrl(config.metricsSink, { credentials: config.metricsSinkCredentials, ca: config.metricsSinkCa }),
        // a retry waits at most 3 sample intervals (and 30 s): an outage's end is noticed within a few samples
        backoffMaxMs: Math.min(SINK_BACKOFF_MAX_MS, 3 * (config.metricsInterval ?? DEFAULT_METRICS_INTERVAL_MS)),
      })
    : undefined;
  const collector = new MetricsCollector({
    store,
    identity,
    traffic,
    dataDir: config.dataDir,
    intervalMs: config.metricsInterval,
    retentionMs: config.metricsRetention,
    onSample: () => sink?.kick(),
  });
  const ops: OpsDeps = {
    identity,
    metrics: queries,
    auth: new AuthService(config.dataDir, { tokenTtlMs: config.tokenTtl }),
    audit: new AuditLog(config.dataDir),
    ...(sink ? { sink } : {}),
  };
  let sampling = false;
  return {
    ops,
    start(...servers) {
      for (const server of servers) traffic.attach(server);
      collector.start();
      sampling = true;
      if (sink) {
        watchSink(sink);
        sink.start();
      }
    },
    async close(sinkWaitMs?: number) {
      // One last sample, so that a restart loses none of the time since the previous one (a stopped collector stores nothing).
      if (sampling) await collector.sample().catch((e: unknown) => console.error(`[edgecv] last metrics sample failed: ${(e as Error).message}`));
      await collector.stop();
      if (sink) {
        unwatchSink(sink);
        await sink.stop(sinkWaitMs); // what it has not sent yet goes at the next start, from the store
      }
      await queries.close();
      store.close();
      ops.audit?.close();
    },
  };
}
