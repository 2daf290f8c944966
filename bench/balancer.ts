// Fleet bench: images/s through haproxy (TLS termination, mode http) with 1, 2 and 3 edgecv servers sharing one
// Redis gallery, what the balancer hop adds to a request's latency (p50, p99) against the same server asked
// directly, and one server's resident memory (the pods' memory request). Real processes on loopback:
// redis-server, `edgecv serve` x3 (1 worker each), haproxy.
//   node dist/bench/balancer.js [--quick]        (alone; `node dist/bench/run.js --balancer` is the same)
// On a 2-core machine the servers share the 2 cores: more servers add no cores, so throughput is bounded by the
// machine, not the fleet; the scaling figure says how much the balancer and the extra processes cost, not how a
// fleet of machines scales. docs/fleet.md reports a run.

import fs from 'node:fs';
import https from 'node:https';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadJohns } from '../testkit/face-verification.js';
import { fleetLayout, haproxyConfig, startHaproxy, startMembers, startRedis, steadyLoad, type FleetMember } from '../testkit/fleet.js';
import { startServerProcess, writeResult, type ServerProcess } from '../testkit/server-process.js';
import { table } from '../testkit/table.js';
import { percentile } from '../src/metrics/percentiles.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');

export type BalancerThroughputRow = {
  servers: number;
  clients: number;
  requests: number;
  errors: number;
  'images/s': number;
  'p50 ms': number;
  'p99 ms': number;
};

export type BalancerHopRow = {
  path: string;
  requests: number;
  'p50 ms': number;
  'p99 ms': number;
  'added p50 ms': number;
  'added p99 ms': number;
};

/** Resident memory of one server, as docs/fleet.md sizes a Kubernetes pod with it. */
export type ServerMemoryRow = {
  server: string;
  'RSS after start MiB': number;
  'RSS after every route MiB': number;
  'peak RSS MiB': number;
};

export interface BalancerBench {
  machine: { cpu: string; cores: number; loadavg: number[] };
  memory: ServerMemoryRow[];
  route: string;
  image: string;
  throughput: BalancerThroughputRow[];
  hop: BalancerHopRow[];
}

const round = (x: number) => Math.round(x * 10) / 10;

/**
 * `count` rounds of one request to each of `urls` in turn (one keep-alive connection per url, one request in flight
 * in all: the machine's load drifts alike for every path); each url's latencies, sorted.
 */
async function interleaved(urls: string[], body: Buffer, count: number): Promise<number[][]> {
  const agents = urls.map(() => new https.Agent({ keepAlive: true, maxSockets: 1 }));
  const out = urls.map((): number[] => []);
  try {
    for (let i = 0; i < count; i++) {
      for (const [k, url] of urls.entries()) {
        const t0 = performance.now();
        const status = await new Promise<number>((resolve, reject) => {
          const req = https.request(
            url,
            { method: 'POST', agent: agents[k], rejectUnauthorized: false, headers: { 'content-type': 'image/jpeg' } },
            (res) => {
              res.resume();
              res.on('end', () => resolve(res.statusCode ?? 0));
            },
          );
          req.on('error', reject);
          req.end(body);
        });
        if (status !== 200) throw new Error(`${url}: HTTP ${status}`);
        out[k]!.push(performance.now() - t0);
      }
    }
  } finally {
    for (const a of agents) a.destroy();
  }
  return out.map((l) => l.sort((a, b) => a - b));
}

/** VmRSS and VmHWM of a process, MiB. */
function memoryOf(pid: number): { rss: number; peak: number } {
  const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
  const kib = (key: string) => Number(new RegExp(`^${key}:\\s+(\\d+) kB`, 'm').exec(status)?.[1]);
  return { rss: Math.round(kib('VmRSS') / 1024), peak: Math.round(kib('VmHWM') / 1024) };
}

/**
 * A server as deploy/kubernetes/deployment.yaml runs it (--workers 2, default models): its RSS after start, and
 * after every route five times, two requests at a time (a scene photo and a group photo).
 */
async function benchServerMemory(dir: string): Promise<ServerMemoryRow> {
  const data = (p: string) => fs.readFileSync(path.join(ROOT, 'test', 'data', p));
  const scene = data('darknet/dog.jpg');
  const group = data('dlib/faces/2008_002506.jpg');
  const face = loadJohns(path.join(ROOT, 'test', 'data'))[0]!.bytes;
  const server = await startServerProcess(['--data-dir', path.join(dir, 'memory'), '--workers', '2']);
  try {
    const pid = server.child.pid!;
    await new Promise((r) => setTimeout(r, 1000));
    const started = memoryOf(pid);
    const post = (route: string, body: Buffer) => interleaved([`${server.url}${route}`], body, 1);
    for (let i = 0; i < 5; i++) {
      for (const route of ['detector/detect/', 'object/detect/', 'pose/detect/']) await Promise.all([post(route, scene), post(route, group)]);
      await post('trainer/add/?subject=probe', face);
      await post('recognizer/predict/', face);
    }
    const after = memoryOf(pid);
    return {
      server: '--workers 2, default models',
      'RSS after start MiB': started.rss,
      'RSS after every route MiB': after.rss,
      'peak RSS MiB': after.peak,
    };
  } finally {
    await server.stop('SIGKILL');
  }
}

export async function benchBalancer(quick: boolean): Promise<BalancerBench> {
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'edgecv-bench-balancer-'));
  const names = ['s0', 's1', 's2'];
  const route = '/detector/detect/';
  const photo = loadJohns(path.join(ROOT, 'test', 'data'))[0]!;
  const redis = await startRedis(tmp);
  const servers: ServerProcess[] = [];
  const stopAll: (() => Promise<unknown>)[] = [];
  try {
    const layout = await fleetLayout(names, tmp, 1000);
    const argsOf = (m: FleetMember) => ['--data-dir', path.join(tmp, m.name), '--workers', '1', '--gallery', redis.url, '--http-routes', 'all'];
    servers.push(...(await startMembers(layout.members, argsOf, true)));
    const throughput: BalancerThroughputRow[] = [];
    const hop: BalancerHopRow[] = [];
    for (const count of [1, 2, 3]) {
      // a balancer over the first `count` servers
      const sub = { ...layout, members: layout.members.slice(0, count), statsSocket: path.join(tmp, `haproxy-${count}.sock`) };
      const cfg = path.join(tmp, `haproxy-${count}.cfg`);
      fs.writeFileSync(cfg, haproxyConfig(sub));
      const haproxy = await startHaproxy(cfg, sub.statsSocket);
      stopAll.push(() => haproxy.stop());
      try {
        await haproxy.allUp(names.slice(0, count));
        const url = `https://127.0.0.1:${layout.terminationPort}${route}`;
        await interleaved([url], photo.bytes, 5); // warm: connections, TLS sessions, the first inference of each server
        const clients = 2 * count;
        const requests = quick ? 60 * count : 200 * count;
        const t0 = performance.now();
        const r = await steadyLoad({ url, body: photo.bytes, clients, maxRequests: requests, maxMs: 300_000 }).finished();
        const seconds = (performance.now() - t0) / 1000;
        const lat = [...r.latenciesMs].sort((a, b) => a - b);
        throughput.push({
          servers: count,
          clients,
          requests: r.sent,
          errors: r.errors.length,
          'images/s': round(r.latenciesMs.length / seconds),
          'p50 ms': round(percentile(lat, 50)),
          'p99 ms': round(percentile(lat, 99)),
        });
        if (count === 1) {
          // the hop: one request at a time, so the server's own time is the same on every path
          const n = quick ? 60 : 300;
          const paths: [string, string][] = [
            ['direct to the server (HTTPS)', `${servers[0]!.url}${route.slice(1)}`],
            ['haproxy TLS passthrough (mode tcp)', `https://127.0.0.1:${layout.passthroughPort}${route}`],
            ['haproxy TLS termination (mode http)', url],
          ];
          const latencies = await interleaved(
            paths.map(([, u]) => u),
            photo.bytes,
            n,
          );
          const direct = latencies[0]!;
          for (const [k, [name]] of paths.entries()) {
            const l = latencies[k]!;
            hop.push({
              path: name,
              requests: n,
              'p50 ms': round(percentile(l, 50)),
              'p99 ms': round(percentile(l, 99)),
              'added p50 ms': round(percentile(l, 50) - percentile(direct, 50)),
              'added p99 ms': round(percentile(l, 99) - percentile(direct, 99)),
            });
          }
        }
      } finally {
        await haproxy.stop();
      }
    }
    await Promise.all(servers.map((s) => s.stop('SIGKILL')));
    const memory = [await benchServerMemory(tmp)];
    return {
      machine: { cpu: os.cpus()[0]?.model ?? 'unknown', cores: os.cpus().length, loadavg: os.loadavg().map(round) },
      memory,
      route,
      image: `${path.relative(ROOT, photo.file)} (${photo.bytes.length} bytes, 150x150)`,
      throughput,
      hop,
    };
  } finally {
    await Promise.all(servers.map((s) => s.stop('SIGKILL')));
    await redis.stop();
    fs.rmSync(tmp, { recursive: true, force: true });
  }
}

export function printBalancer(b: BalancerBench): void {
  table(
    `Through haproxy (TLS termination, mode http) to 1, 2, 3 servers of 1 worker each, POST ${b.route} of ${b.image}; ${b.machine.cores} cores shared by every server (load average before: ${b.machine.loadavg.join(', ')})`,
    b.throughput,
  );
  table('The balancer hop: one request at a time to one server, directly and through haproxy', b.hop);
  table('Memory of one server (deploy/kubernetes sizes its pods from this; docs/fleet.md)', b.memory);
}

if (process.argv[1] && fileURLToPath(import.meta.url) === path.resolve(process.argv[1])) {
  const quick = process.argv.includes('--quick');
  benchBalancer(quick)
    .then((b) => {
      printBalancer(b);
      writeResult('balancer', b);
    })
    .catch((e: unknown) => {
      console.error(e);
      process.exit(1);
    });
}
