// `edgecv console`: the fleet console, its own process. It logs users in from its own data folder (users
// and the JWT key; `edgecv user add --data-dir D` manages them) and answers the metrics query of every
// instance of a region from that region's InfluxDB (docs/fleet-metrics.md).

import path from 'node:path';
import { parseArgs } from 'node:util';
import { AuditLog } from '../audit/audit-log.js';
import { AuthService } from '../auth/auth-service.js';
import { ConfigError, parseDurationMs } from '../config.js';
import { InfluxClient, InfluxUrlError, parseInfluxUrl } from '../metrics/influx-client.js';
import { DEFAULT_DRAIN_TIMEOUT_MS } from '../server/drain.js';
import { startServer } from '../server/server.js';
import { loadTls, TlsError } from '../server/tls.js';
import { createConsoleApp } from './app.js';
import { FleetMetrics } from './fleet-metrics.js';
import { DEFAULT_CONSOLE_PORT } from './usage.js';

interface ConsoleConfig {
  port: number;
  host: string;
  dataDir: string;
  tlsCert?: string;
  tlsKey?: string;
  regions: Map<string, string>;
  influxCredentials?: string;
  influxCa?: string;
  /** On SIGTERM/SIGINT: ms the requests in flight get before every connection and region query is ended. */
  drainTimeoutMs: number;
}

const REGION_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;

export function parseConsoleArgs(args: string[], env: NodeJS.ProcessEnv = process.env): ConsoleConfig {
  let values;
  try {
    ({ values } = parseArgs({
      args,
      options: {
        port: { type: 'string' },
        host: { type: 'string' },
        'data-dir': { type: 'string' },
        'tls-cert': { type: 'string' },
        'tls-key': { type: 'string' },
        region: { type: 'string', multiple: true },
        'influx-credentials': { type: 'string' },
        'influx-ca': { type: 'string' },
        'drain-timeout': { type: 'string' },
      },
      strict: true,
      allowPositionals: false,
    }));
  } catch (e) {
    throw new ConfigError((e as Error).message);
  }
  const portText = values.port ?? env['EDGECV_CONSOLE_PORT'] ?? String(DEFAULT_CONSOLE_PORT);
  if (!/^\d+$/.test(portText) || Number(portText) > 65535) throw new ConfigError(`invalid --port ${JSON.stringify(portText)}: expected 0-65535`);
  const regionWords = values.region ?? (env['EDGECV_CONSOLE_REGIONS'] ?? '').split(',').filter((w) => w.trim() !== '');
  const regions = new Map<string, string>();
  for (const word of regionWords) {
    const eq = word.indexOf('=');
    const name = word.slice(0, eq).trim();
    if (eq <= 0 || !REGION_NAME.test(name))
      throw new ConfigError(`--region takes NAME=URL, e.g. eu=http://127.0.0.1:8086/edgecv (got a bad name in '${word.slice(0, 40)}')`);
    if (regions.has(name)) throw new ConfigError(`region '${name}' given twice`);
    regions.set(name, word.slice(eq + 1).trim());
  }
  if (regions.size === 0) throw new ConfigError('give at least one --region NAME=URL');
  if ((values['tls-cert'] === undefined) !== (values['tls-key'] === undefined)) throw new ConfigError('--tls-cert and --tls-key go together');
  const resolve = (p: string | undefined) => (p === undefined ? undefined : path.resolve(p));
  const drainText = values['drain-timeout'] ?? env['EDGECV_CONSOLE_DRAIN_TIMEOUT'];
  const drainTimeoutMs = drainText === undefined || drainText === '' ? DEFAULT_DRAIN_TIMEOUT_MS : parseDurationMs(drainText, '--drain-timeout');
  return {
    port: Number(portText),
    host: values.host ?? env['EDGECV_CONSOLE_HOST'] ?? '0.0.0.0',
    dataDir: path.resolve(values['data-dir'] ?? env['EDGECV_CONSOLE_DATA_DIR'] ?? 'console-data'),
    tlsCert: resolve(values['tls-cert']),
    tlsKey: resolve(values['tls-key']),
    regions,
    influxCredentials: resolve(values['influx-credentials']),
    influxCa: resolve(values['influx-ca']),
    drainTimeoutMs,
  };
}

/** Runs the console until SIGINT/SIGTERM; resolves with the exit code. */
export async function runConsole(args: string[]): Promise<number> {
  const config = parseConsoleArgs(args);
  const clients = new Map<string, InfluxClient>();
  try {
    for (const [name, url] of config.regions) {
      clients.set(
        name,
        new InfluxClient(parseInfluxUrl(url, { credentials: config.influxCredentials, ca: config.influxCa }), { timeoutMs: 30_000, maxSockets: 16 }),
      );
    }
  } catch (e) {
    if (e instanceof InfluxUrlError) throw new ConfigError(`--region: ${e.message}`);
    throw e;
  }
  let tls;
  try {
    tls = await loadTls(config);
  } catch (e) {
    console.error(`edgecv console: ${e instanceof TlsError ? e.message : (e as Error).message}`);
    return 1;
  }
  const metrics = new FleetMetrics(clients);
  const audit = new AuditLog(config.dataDir);
  const app = createConsoleApp({ auth: new AuthService(config.dataDir), metrics, audit });
  let running;
  try {
    running = await startServer({ app, tls, port: config.port, host: config.host });
  } catch (e) {
    console.error(`edgecv console: cannot listen on ${config.host}:${config.port}: ${(e as Error).message}`);
    metrics.close();
    audit.close();
    return 1;
  }
  const regions = [...clients].map(([name, c]) => `${name} -> ${c.target.redacted}`).join(', ');
  console.log(`edgecv console: listening on ${running.url} (regions: ${regions}; users in ${config.dataDir}; certificate ${tls.certPath})`);
  return new Promise<number>((resolve) => {
    const stop = (signal: NodeJS.Signals) => {
      process.off('SIGINT', stop);
      process.off('SIGTERM', stop);
      console.log(`edgecv console: ${signal}, shutting down (requests in flight get up to ${config.drainTimeoutMs} ms)`);
      // at the drain timeout every connection is closed, then every region query still waiting is ended
      void running.close(config.drainTimeoutMs).then(() => {
        metrics.close();
        audit.close();
        console.log('edgecv console: stopped');
        resolve(0);
      });
    };
    process.on('SIGINT', stop);
    process.on('SIGTERM', stop);
  });
}
