// A fleet on loopback for the balancer test and bench: a real redis-server, real `edgecv serve` processes, and
// Debian's haproxy in front of them with TLS passthrough (mode tcp) and TLS termination (mode http), health checks
// on /health/ready. Everything binds 127.0.0.1; every wait is bounded.

import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import https from 'node:https';
import net from 'node:net';
import path from 'node:path';
import { generateSelfSigned } from '../src/server/tls.js';
import { startRedis as startRedisServer, type RedisServer } from './redis-server.js';
import { freePort, startServerProcess, type ServerProcess } from './server-process.js';

export type { RedisServer };

/** redis-server without persistence on 127.0.0.1, its files in `dir`. */
export function startRedis(dir: string): Promise<RedisServer> {
  return startRedisServer(dir, ['--save', '', '--appendonly', 'no']);
}

/** A self-signed certificate and its key in one PEM file, as haproxy's `crt` wants them (TLS termination). */
export async function terminationPem(dir: string): Promise<string> {
  const { cert, key } = await generateSelfSigned();
  const pem = path.join(dir, 'lb.pem');
  fs.writeFileSync(pem, `${cert.trim()}\n${key.trim()}\n`, { mode: 0o600 });
  return pem;
}

export interface FleetMember {
  name: string;
  /** The server's own HTTPS port (its own certificate: passthrough). */
  httpsPort: number;
  /** Its loopback plain-HTTP listener (--http-port): haproxy speaks to it after terminating TLS. */
  httpPort: number;
}

export interface BalancerLayout {
  members: FleetMember[];
  /** Frontend passing TLS through to the servers (mode tcp). */
  passthroughPort: number;
  /** Frontend terminating TLS with `pem` (mode http), plain HTTP to the servers. */
  terminationPort: number;
  pem: string;
  statsSocket: string;
  /** Health check interval; a server is down after one failed check, up after one good one. */
  checkInterMs: number;
}

export const PASSTHROUGH_BACKEND = 'edgecv_tls';
export const TERMINATION_BACKEND = 'edgecv_plain';

/**
 * The test's haproxy.cfg (deploy/haproxy.cfg is the production one, same ideas). Zero-loss pieces: health checks on
 * /health/ready, which fails from the first moment of a drain; `retries` + `option redispatch` so that a connection
 * refused by a stopped server is tried on another; in mode http also `retry-on conn-failure empty-response` (a
 * request whose server died before answering is sent again; the request is buffered for that).
 */
export function haproxyConfig(l: BalancerLayout): string {
  const check = `check inter ${l.checkInterMs} fall 1 rise 1`;
  const readyCheck = [
    '  option httpchk',
    '  http-check send meth GET uri /health/ready ver HTTP/1.1 hdr Host edgecv',
    '  http-check expect status 200',
  ];
  return [
    'global',
    `  stats socket ${l.statsSocket} mode 600 level admin`,
    '  maxconn 512',
    '  tune.bufsize 65536', // a whole test photo fits: L7 retries need the request buffered
    '  tune.ssl.default-dh-param 2048',
    'defaults',
    '  timeout connect 2s',
    '  timeout client 60s',
    '  timeout server 60s',
    '  timeout check 2s',
    '  retries 3',
    '  option redispatch 1',
    `frontend tls_passthrough`,
    '  mode tcp',
    `  bind 127.0.0.1:${l.passthroughPort}`,
    `  default_backend ${PASSTHROUGH_BACKEND}`,
    `backend ${PASSTHROUGH_BACKEND}`,
    '  mode tcp',
    '  balance roundrobin',
    ...readyCheck,
    ...l.members.map((m) => `  server ${m.name} 127.0.0.1:${m.httpsPort} ${check} check-ssl verify none`),
    `frontend tls_termination`,
    '  mode http',
    `  bind 127.0.0.1:${l.terminationPort} ssl crt ${l.pem}`,
    '  option http-buffer-request',
    `  default_backend ${TERMINATION_BACKEND}`,
    `backend ${TERMINATION_BACKEND}`,
    '  mode http',
    '  balance roundrobin',
    '  retry-on conn-failure empty-response junk-response',
    '  option forwardfor',
    ...readyCheck,
    ...l.members.map((m) => `  server ${m.name} 127.0.0.1:${m.httpPort} ${check}`),
    '',
  ].join('\n');
}

export interface Haproxy {
  child: ChildProcess;
  output(): string;
  /** `show stat`: one row per frontend, backend and server. */
  stat(): Promise<{ backend: string; server: string; status: string }[]>;
  /** Resolves when every server of both backends is UP (or rejects after timeoutMs). */
  allUp(names: string[], timeoutMs?: number): Promise<void>;
  stop(): Promise<void>;
}

function socketCommand(socket: string, command: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const c = net.createConnection(socket);
    let out = '';
    c.setTimeout(2000, () => c.destroy(new Error(`haproxy socket: no answer to ${command}`)));
    c.on('connect', () => c.write(`${command}\n`));
    c.on('data', (d) => (out += d));
    c.on('end', () => resolve(out));
    c.on('error', reject);
  });
}

export async function startHaproxy(configFile: string, statsSocket: string): Promise<Haproxy> {
  const check = spawnSync('haproxy', ['-c', '-f', configFile], { encoding: 'utf8' });
  if (check.status !== 0)
    throw new Error(`haproxy -c rejects ${configFile} (installed? node scripts/setup/setup.mjs --test):\n${check.stdout}${check.stderr}`);
  const child = spawn('haproxy', ['-db', '-f', configFile], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout!.on('data', (d) => (out += d));
  child.stderr!.on('data', (d) => (out += d));
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  const stat = async () => {
    const csv = await socketCommand(statsSocket, 'show stat');
    return csv
      .split('\n')
      .filter((line) => line && !line.startsWith('#'))
      .map((line) => line.split(','))
      .map((f) => ({ backend: f[0]!, server: f[1]!, status: f[17]! }));
  };
  const h: Haproxy = {
    child,
    output: () => out,
    stat,
    allUp: async (names, timeoutMs = 60_000) => {
      const end = Date.now() + timeoutMs;
      for (;;) {
        const rows = await stat().catch(() => []);
        const up = (backend: string) => names.every((n) => rows.some((r) => r.backend === backend && r.server === n && r.status === 'UP'));
        if (up(PASSTHROUGH_BACKEND) && up(TERMINATION_BACKEND)) return;
        if (Date.now() > end) throw new Error(`haproxy: not all of ${names.join(', ')} UP within ${timeoutMs} ms: ${JSON.stringify(rows)}\n${out}`);
        if (child.exitCode !== null) throw new Error(`haproxy exited ${child.exitCode}:\n${out}`);
        await new Promise((r) => setTimeout(r, 50));
      }
    },
    stop: async () => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      await exited;
    },
  };
  // the stats socket exists once haproxy has parsed its configuration and bound
  const end = Date.now() + 10_000;
  while (
    !(await stat().then(
      () => true,
      () => false,
    ))
  ) {
    if (Date.now() > end || child.exitCode !== null) throw new Error(`haproxy did not start:\n${out}`);
    await new Promise((r) => setTimeout(r, 50));
  }
  return h;
}

/**
 * A port that was free a moment ago, below the kernel's ephemeral range (32768 up on Debian): the fleet's ports are
 * fixed in haproxy's configuration and reused across restarts, and the outgoing connections of everything else
 * running on the machine take their local ports from that range.
 */
export async function fleetPort(): Promise<number> {
  for (let i = 0; i < 50; i++) {
    const port = 20_000 + Math.floor(Math.random() * 12_000);
    const free = await new Promise<boolean>((resolve) => {
      const s = net.createServer();
      s.once('error', () => resolve(false));
      s.listen(port, '127.0.0.1', () => s.close(() => resolve(true)));
    });
    if (free) return port;
  }
  return freePort();
}

/**
 * Starts an `edgecv serve` for each member, in parallel (model loading is the slow part). `retryPorts`: a member
 * whose port was taken meanwhile gets new ports and starts again (only before haproxy's configuration is written).
 */
export function startMembers(members: FleetMember[], argsOf: (m: FleetMember) => string[], retryPorts = false): Promise<ServerProcess[]> {
  const start = async (m: FleetMember): Promise<ServerProcess> => {
    for (let attempt = 0; ; attempt++) {
      try {
        // haproxy's health check names the service edgecv (as deploy/haproxy.cfg does), a name the members allow as
        // deploy/compose.yaml's EDGECV_ALLOWED_HOSTS does
        return await startServerProcess([
          '--port',
          String(m.httpsPort),
          '--http-port',
          String(m.httpPort),
          '--allowed-hosts',
          'edgecv',
          ...argsOf(m),
        ]);
      } catch (e) {
        if (!retryPorts || attempt >= 3 || !/EADDRINUSE/.test((e as Error).message)) throw e;
        m.httpsPort = await fleetPort();
        m.httpPort = await fleetPort();
      }
    }
  };
  return Promise.all(members.map(start));
}

export async function fleetLayout(names: string[], dir: string, checkInterMs: number): Promise<BalancerLayout> {
  const members: FleetMember[] = [];
  for (const name of names) members.push({ name, httpsPort: await fleetPort(), httpPort: await fleetPort() });
  return {
    members,
    passthroughPort: await fleetPort(),
    terminationPort: await fleetPort(),
    pem: await terminationPem(dir),
    statsSocket: path.join(dir, 'haproxy.sock'),
    checkInterMs,
  };
}

// ------------------------------------------------------------------ steady load

export interface LoadResult {
  /** status code -> count; 0 counts transport errors (reset, refused). */
  statuses: Record<number, number>;
  errors: string[];
  latenciesMs: number[];
  sent: number;
}

export interface RunningLoad {
  /** Stops sending (requests in flight finish) and resolves with what came back. */
  stop(): Promise<LoadResult>;
  /** Requests answered so far. */
  done(): number;
  /** Resolves when the load has sent its `maxRequests` (or run `maxMs`) and every answer is in. */
  finished(): Promise<LoadResult>;
}

/**
 * `clients` loops, each with one keep-alive connection (maxSockets 1: a connection is reused only after its answer),
 * sending POST `body` to `url` one request at a time (`pauseMs` apart), until stop(), `maxRequests` in all or `maxMs`.
 */
export function steadyLoad(opts: {
  url: string;
  body: Buffer;
  clients: number;
  maxRequests: number;
  maxMs: number;
  pauseMs?: number;
  contentType?: string;
}): RunningLoad {
  const result: LoadResult = { statuses: {}, errors: [], latenciesMs: [], sent: 0 };
  let stopped = false;
  const end = Date.now() + opts.maxMs;
  const one = (agent: https.Agent) =>
    new Promise<void>((resolve) => {
      const t0 = performance.now();
      const req = https.request(
        opts.url,
        { method: 'POST', agent, rejectUnauthorized: false, headers: { 'content-type': opts.contentType ?? 'image/jpeg' } },
        (res) => {
          res.resume();
          res.on('end', () => {
            const status = res.statusCode ?? 0;
            result.statuses[status] = (result.statuses[status] ?? 0) + 1;
            if (status < 200 || status > 299) result.errors.push(`HTTP ${status}`);
            result.latenciesMs.push(performance.now() - t0);
            resolve();
          });
          res.on('error', (e) => {
            result.statuses[0] = (result.statuses[0] ?? 0) + 1;
            result.errors.push(e.message);
            resolve();
          });
        },
      );
      req.on('error', (e) => {
        result.statuses[0] = (result.statuses[0] ?? 0) + 1;
        result.errors.push(e.message);
        resolve();
      });
      req.end(opts.body);
    });
  const loops = Array.from({ length: opts.clients }, async () => {
    const agent = new https.Agent({ keepAlive: true, maxSockets: 1 });
    while (!stopped && result.sent < opts.maxRequests && Date.now() < end) {
      result.sent++;
      await one(agent);
      if (opts.pauseMs) await new Promise((r) => setTimeout(r, opts.pauseMs));
    }
    agent.destroy();
  });
  const all = Promise.all(loops);
  return {
    done: () => result.latenciesMs.length + (result.statuses[0] ?? 0),
    finished: async () => {
      await all;
      return result;
    },
    stop: async () => {
      stopped = true;
      await all;
      return result;
    },
  };
}
