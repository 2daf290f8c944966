// A real InfluxDB 1.x (`influxd`, installed by `node scripts/setup/setup.mjs --test`) for the fleet metrics tests
// and bench: its own temporary config, meta/data/wal folders and free loopback ports (HTTP and the RPC
// bind-address), reporting disabled. It can be stopped and started again on the same data.

import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { freePort } from './server-process.js';

export const INFLUXD = process.env['EDGECV_INFLUXD'] ?? '/usr/bin/influxd';

export interface Influxd {
  /** http://127.0.0.1:<port> */
  origin: string;
  /** The child process now running (changes after restart). */
  readonly pid: number;
  output(): string;
  /** SIGTERM and wait for the exit; the data stays. */
  stop(): Promise<void>;
  /** Starts it again on the same ports and data; resolves once /ping answers. */
  start(): Promise<void>;
}

export interface InfluxdOptions {
  /** auth-enabled: the first user must be created as admin (CREATE USER ... WITH ALL PRIVILEGES). */
  auth?: boolean;
  /** Serve HTTPS with this certificate and key (PEM files). */
  tls?: { certFile: string; keyFile: string };
}

function config(dir: string, httpPort: number, rpcPort: number, opts: InfluxdOptions): string {
  return `reporting-disabled = true
bind-address = "127.0.0.1:${rpcPort}"
[meta]
  dir = "${dir}/meta"
[data]
  dir = "${dir}/data"
  wal-dir = "${dir}/wal"
  query-log-enabled = false
  wal-fsync-delay = "0s"
[coordinator]
  log-queries-after = "0s"
[retention]
  enabled = false
[monitor]
  store-enabled = false
[http]
  enabled = true
  bind-address = "127.0.0.1:${httpPort}"
  log-enabled = false
  flux-enabled = false
  auth-enabled = ${opts.auth === true}
  https-enabled = ${opts.tls !== undefined}
  https-certificate = "${opts.tls?.certFile ?? ''}"
  https-private-key = "${opts.tls?.keyFile ?? ''}"
[subscriber]
  enabled = false
[continuous_queries]
  enabled = false
`;
}

async function ping(port: number): Promise<boolean> {
  // a TCP connect: the HTTP(S) listener is up (a TLS /ping would need the test CA here)
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

/** Starts influxd in `dir` (created), waits until it answers /ping (bounded). */
export async function startInfluxd(dir: string, opts: InfluxdOptions = {}, timeoutMs = 30_000): Promise<Influxd> {
  if (!fs.existsSync(INFLUXD)) throw new Error(`${INFLUXD} is missing: run \`node scripts/setup/setup.mjs --test\` (it installs influxdb)`);
  fs.mkdirSync(dir, { recursive: true });
  const [httpPort, rpcPort] = [await freePort(), await freePort()];
  const confFile = path.join(dir, 'influxdb.conf');
  fs.writeFileSync(confFile, config(dir, httpPort, rpcPort, opts));
  const origin = `${opts.tls ? 'https' : 'http'}://127.0.0.1:${httpPort}`;
  let child: ChildProcess | undefined;
  let out = '';

  const start = async () => {
    const c = spawn(INFLUXD, ['run', '-config', confFile], {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, INFLUXDB_DATA_QUERY_LOG_ENABLED: 'false' },
    });
    child = c;
    c.stdout!.on('data', (d) => (out = (out + d).slice(-20_000)));
    c.stderr!.on('data', (d) => (out = (out + d).slice(-20_000)));
    const deadline = Date.now() + timeoutMs;
    while (!(await ping(httpPort))) {
      if (c.exitCode !== null) throw new Error(`influxd exited ${c.exitCode}:\n${out}`);
      if (Date.now() > deadline) throw new Error(`influxd did not answer /ping within ${timeoutMs} ms:\n${out}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  };
  const stop = () =>
    new Promise<void>((resolve) => {
      const c = child;
      if (!c || c.exitCode !== null || c.signalCode !== null) return resolve();
      const timer = setTimeout(() => c.kill('SIGKILL'), 15_000);
      c.once('exit', () => {
        clearTimeout(timer);
        resolve();
      });
      c.kill('SIGTERM');
    });

  await start();
  return {
    origin,
    get pid() {
      return child?.pid ?? 0;
    },
    output: () => out,
    stop,
    start,
  };
}

/** Runs InfluxQL against `origin` (GET /query), returning the parsed JSON. */
export async function influxQuery(
  origin: string,
  db: string,
  q: string,
): Promise<{ results: { series?: { name: string; tags?: Record<string, string>; columns: string[]; values: unknown[][] }[]; error?: string }[] }> {
  const res = await fetch(`${origin}/query?${new URLSearchParams({ db, q })}`);
  const body = (await res.json()) as {
    results: { series?: { name: string; tags?: Record<string, string>; columns: string[]; values: unknown[][] }[]; error?: string }[];
  };
  if (res.status !== 200) throw new Error(`influx query ${res.status}: ${JSON.stringify(body)}`);
  return body;
}
