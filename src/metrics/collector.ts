// Samples the process and the server's sockets every interval into the metrics store, and drops rows
// older than the retention.

import { folderBytes } from './disk-usage.js';
import type { InstanceIdentity } from './identity.js';
import { latencyPercentiles } from './percentiles.js';
import type { MetricsSample, MetricsStore } from './store.js';
import { msToNs, nowNs } from './time.js';
import type { TrafficMeter } from './traffic.js';

export const DEFAULT_METRICS_INTERVAL_MS = 10_000;
export const DEFAULT_METRICS_RETENTION_MS = 48 * 3600 * 1000;

export interface CollectorOptions {
  store: MetricsStore;
  identity: InstanceIdentity;
  traffic: TrafficMeter;
  /** The folder whose size is the `disk` series. */
  dataDir: string;
  intervalMs?: number;
  retentionMs?: number;
  /** Called after each stored sample (the InfluxDB sink sends it). */
  onSample?: () => void;
}

export class MetricsCollector {
  readonly intervalMs: number;
  readonly retentionMs: number;
  readonly #opts: CollectorOptions;
  readonly #instance: number;
  #cpu = process.cpuUsage();
  #wallNs = process.hrtime.bigint();
  #timer: NodeJS.Timeout | undefined;
  #running: Promise<void> | undefined;
  #stopped = false;
  #lastError = '';

  constructor(opts: CollectorOptions) {
    this.#opts = opts;
    this.intervalMs = opts.intervalMs ?? DEFAULT_METRICS_INTERVAL_MS;
    this.retentionMs = opts.retentionMs ?? DEFAULT_METRICS_RETENTION_MS;
    this.#instance = opts.store.instanceId(opts.identity);
  }

  /** Samples every interval from now on. The first sample comes one interval after start. */
  start(): void {
    if (this.#timer || this.#stopped) return;
    this.#cpu = process.cpuUsage();
    this.#wallNs = process.hrtime.bigint();
    this.#timer = setInterval(() => {
      if (this.#running) return; // the previous sample is still walking the disk: skip this tick
      this.#running = this.sample()
        .then(() => undefined)
        .catch((e: unknown) => this.#report(e))
        .finally(() => (this.#running = undefined));
    }, this.intervalMs);
    this.#timer.unref();
  }

  /** Takes one sample now, stores it and prunes old rows. */
  async sample(): Promise<MetricsSample> {
    const disk = await folderBytes(this.#opts.dataDir);
    const cpuNow = process.cpuUsage();
    const wallNow = process.hrtime.bigint();
    const cpuUs = cpuNow.user - this.#cpu.user + (cpuNow.system - this.#cpu.system);
    const wallUs = Number(wallNow - this.#wallNs) / 1000;
    this.#cpu = cpuNow;
    this.#wallNs = wallNow;
    const traffic = this.#opts.traffic.snapshot();
    const time = nowNs();
    const sample: MetricsSample = {
      time,
      // percent of one core, as top shows it: a process busy on two cores reads 200
      cpu: wallUs > 0 ? (100 * cpuUs) / wallUs : 0,
      mem: process.memoryUsage.rss(),
      disk,
      sendBytes: traffic.sendBytes,
      recvBytes: traffic.recvBytes,
      connections: traffic.ports.map((p) => ({
        port: p.port,
        active: p.active,
        handled: p.handled,
        accepts: p.accepts,
        bytesSent: p.bytesSent,
        bytesRecvd: p.bytesRecvd,
        latencyPercentiles: latencyPercentiles(p.latenciesMs),
      })),
    };
    if (this.#stopped) return sample;
    this.#opts.store.insert(this.#instance, sample);
    this.#opts.store.prune(time - msToNs(this.retentionMs));
    this.#opts.onSample?.();
    return sample;
  }

  /** Stops sampling and waits for a sample in progress. The store stays open (its owner closes it). */
  async stop(): Promise<void> {
    this.#stopped = true;
    clearInterval(this.#timer);
    this.#timer = undefined;
    await this.#running;
  }

  #report(e: unknown): void {
    const message = e instanceof Error ? e.message : String(e);
    if (message !== this.#lastError) console.error(`[edgecv] metrics sample failed: ${message}`);
    this.#lastError = message;
  }
}
