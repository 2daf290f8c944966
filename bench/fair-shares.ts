// `node dist/bench/run.js --fair-shares [--workers 2] [--heavy 8] [--seconds 20] [--cli <dist/src/cli.js>]` (or
// `node dist/bench/fair-shares.js ...`): one client
// floods a real `edgecv serve` with 4000x3000 photos on --heavy connections while another, from another loopback
// address (127.0.0.2), sends 640x480 photos one at a time; both to POST /v1/vision/face/. Prints the light
// client's latency quiet and during the flood, and the heavy client's throughput (issue 48, item 6: fair shares
// of the workers, src/server/fair-scheduler.ts). --cli runs another build (e.g. one from before the scheduler).
// Loopback only; every phase bounded in time and count.

import fs from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { median, percentile } from '../src/metrics/percentiles.js';
import { REPO_ROOT, startServerProcess } from '../testkit/server-process.js';
import { fittedJpeg, VGA_FACE_PHOTO, vgaJpeg } from '../testkit/vga-photos.js';
import { table } from '../testkit/table.js';
import { runAsProgram } from './entry.js';

/** Most requests one phase sends from one loop. */
const MAX_REQUESTS = 5000;

function post(url: string, agent: https.Agent, body: Buffer): Promise<{ ms: number; status: number }> {
  const t0 = performance.now();
  return new Promise((resolve, reject) => {
    const req = https.request(
      url,
      {
        method: 'POST',
        agent,
        rejectUnauthorized: false,
        timeout: 120_000,
        headers: { 'content-type': 'image/jpeg', 'content-length': body.length },
      },
      (res: http.IncomingMessage) => {
        res.resume();
        res.on('end', () => resolve({ ms: performance.now() - t0, status: res.statusCode ?? 0 }));
      },
    );
    req.on('timeout', () => req.destroy(new Error('no answer in 120 s')));
    req.on('error', reject);
    req.end(body);
  });
}

/** `connections` loops sending `body` one at a time until `stop()` (or MAX_REQUESTS each). */
function loop(url: string, agent: https.Agent, body: Buffer, connections: number) {
  const times: number[] = [];
  const statuses = new Map<number, number>();
  let stopped = false;
  const loops = Array.from({ length: connections }, async () => {
    for (let i = 0; i < MAX_REQUESTS && !stopped; i++) {
      const r = await post(url, agent, body);
      statuses.set(r.status, (statuses.get(r.status) ?? 0) + 1);
      if (r.status === 200) times.push(r.ms);
    }
  });
  return {
    stop: async () => {
      stopped = true;
      await Promise.all(loops);
      return { times: times.sort((a, b) => a - b), statuses: Object.fromEntries(statuses) };
    },
  };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The bench: `argv` holds its flags. */
export async function fairShares(argv: string[]): Promise<void> {
  const { values } = parseArgs({
    args: argv,
    options: {
      workers: { type: 'string', default: '2' },
      heavy: { type: 'string', default: '8' },
      seconds: { type: 'string', default: '20' },
      cli: { type: 'string' },
    },
  });
  const seconds = Math.min(120, Number(values.seconds));
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'edgecv-fair-shares-'));
  const server = await startServerProcess(['--workers', values.workers!, '--data-dir', dataDir], 120_000, [], values.cli ?? undefined);
  try {
    const url = `${server.url}v1/vision/face/`;
    const big = fittedJpeg(REPO_ROOT, VGA_FACE_PHOTO, 4000, 3000);
    const small = vgaJpeg(REPO_ROOT, VGA_FACE_PHOTO);
    // two addresses: the light client's connections leave from 127.0.0.2
    const heavyAgent = new https.Agent({ keepAlive: true, maxSockets: Number(values.heavy) });
    const lightAgent = new https.Agent({ keepAlive: true, maxSockets: 1, localAddress: '127.0.0.2' });
    for (let i = 0; i < 5; i++) await post(url, lightAgent, small);
    await post(url, heavyAgent, big);
    const quietRun = loop(url, lightAgent, small, 1);
    await sleep((seconds * 1000) / 2);
    const quiet = await quietRun.stop();
    const heavyRun = loop(url, heavyAgent, big, Number(values.heavy));
    await sleep(3000); // the flood's queue fills
    const lightRun = loop(url, lightAgent, small, 1);
    await sleep(seconds * 1000);
    const light = await lightRun.stop();
    const heavy = await heavyRun.stop();
    heavyAgent.destroy();
    lightAgent.destroy();
    const row = (phase: string, t: number[], statuses: object) => ({
      phase,
      'light n': t.length,
      'light p50 ms': median(t).toFixed(0),
      'light p99 ms': percentile(t, 99).toFixed(0),
      statuses: JSON.stringify(statuses),
    });
    table(
      `640x480 client beside ${values.heavy} connections of 4000x3000 photos, --workers ${values.workers}, ${seconds} s${values.cli ? ` (${values.cli})` : ''}`,
      [
        row('quiet', quiet.times, quiet.statuses),
        row('flood', light.times, light.statuses),
        {
          phase: 'heavy client',
          'light n': heavy.times.length,
          'light p50 ms': median(heavy.times).toFixed(0),
          'light p99 ms': percentile(heavy.times, 99).toFixed(0),
          statuses: JSON.stringify(heavy.statuses),
        },
      ],
    );
    console.log(
      `light p99 during the flood / quiet p99: ${(percentile(light.times, 99) / percentile(quiet.times, 99)).toFixed(1)}x; heavy images/s: ${(heavy.times.length / (seconds + 3)).toFixed(2)}`,
    );
  } finally {
    await server.stop();
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}

await runAsProgram(import.meta.url, fairShares);
