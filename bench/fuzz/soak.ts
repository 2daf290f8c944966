// `npm run soak -- --duration 600 --concurrency 4`: steady load on a real `edgecv serve` (127.0.0.1, temporary
// data folder) for a chosen time: detection, objects, pose and recognition requests in turn, the server's RSS
// sampled every second from /proc. Beside it, --ws-clients (default 2) WebSocket clients send the same photos
// to the /ws/* routes, reconnecting every 25 frames, and --ws-idle-clients (default 4) sockets idle until the
// server closes them (--ws-idle-timeout 10s here) and come back (bench/fuzz/websocket-load.ts). Reports requests,
// errors, latency and RSS growth (mean of the last tenth against the mean of the first tenth after warm-up),
// writes bench/results/soak.json. Exit code 1 on errors or when the server died.

import fs from 'node:fs';
import path from 'node:path';
import autocannon from 'autocannon';
import { loadJohns } from '../../testkit/face-verification.js';
import { loadRow } from '../load-row.js';
import { REPO_ROOT, withTempServer, writeResult } from '../../testkit/server-process.js';
import { numericFlags } from './cli-args.js';
import { webSocketLoad } from './websocket-load.js';
import { sendRaw } from '../../testkit/fuzz/raw-client.js';
import { sampleRss } from '../../testkit/fuzz/rss.js';

const ADMIN_KEY = 'soak-admin-key-0123456789';
const MB = 1024 * 1024;

function mean(xs: number[]): number {
  return xs.reduce((a, b) => a + b, 0) / Math.max(1, xs.length);
}

async function main(): Promise<number> {
  // duration and warmup in seconds
  const flags = numericFlags({ duration: 60, concurrency: 4, warmup: 10, workers: 2, 'ws-clients': 2, 'ws-idle-clients': 4 });
  const serverArgs = ['--workers', String(flags.workers), '--admin-key', ADMIN_KEY, '--ws-idle-timeout', '10s'];
  return withTempServer('edgecv-soak-', serverArgs, async (server) => {
    const url = new URL(server.url);
    const john = loadJohns(path.join(REPO_ROOT, 'test', 'data'))[0]!.bytes;
    const photo = fs.readFileSync(path.join(REPO_ROOT, 'test', 'data', 'dlib', 'faces', '2008_002506.jpg'));
    // Recognition needs a gallery: enrol one face first.
    const enrol = Buffer.concat([
      Buffer.from(
        `POST /trainer/add/?subject=soak HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\nAuthorization: Bearer ${ADMIN_KEY}\r\nContent-Type: image/jpeg\r\nContent-Length: ${john.length}\r\n\r\n`,
      ),
      john,
    ]);
    const enrolled = await sendRaw(url.hostname, Number(url.port), enrol, 60_000);
    if (enrolled.status !== 200) throw new Error(`enrolment failed: ${enrolled.status} ${enrolled.body.toString()}`);

    const rss = sampleRss(server.child.pid!, 1000);
    const t0 = Date.now();
    const post = (p: string, body: Buffer) => ({ method: 'POST' as const, path: p, headers: { 'content-type': 'image/jpeg' }, body });
    console.log(`soak: ${flags.duration} s at concurrency ${flags.concurrency} on ${server.url} (pid ${server.child.pid})`);
    const sockets = webSocketLoad({
      url: server.url,
      photos: { general: photo, face: john },
      clients: flags['ws-clients'],
      idleClients: flags['ws-idle-clients'],
      durationMs: flags.duration * 1000,
    });
    const result = await autocannon({
      url: server.url,
      connections: flags.concurrency,
      duration: flags.duration,
      requests: [post('/detector/detect/', photo), post('/object/detect/', photo), post('/pose/detect/', photo), post('/recognizer/predict/', john)],
    });
    const ws = await sockets;
    rss.stop();
    const alive = server.child.exitCode === null;
    const warm = rss.samples().filter(([ms]) => ms >= Math.min(flags.warmup * 1000, (flags.duration * 1000) / 2));
    const tenth = Math.max(1, Math.floor(warm.length / 10));
    const first = mean(warm.slice(0, tenth).map(([, b]) => b));
    const last = mean(warm.slice(-tenth).map(([, b]) => b));
    const row = loadRow(result);
    const report = {
      durationS: (Date.now() - t0) / 1000,
      concurrency: flags.concurrency,
      ...row,
      'p99.9 ms': result.latency.p99_9 ?? null,
      'max ms': result.latency.max,
      rssFirstMb: first / MB,
      rssLastMb: last / MB,
      rssPeakMb: rss.peak() / MB,
      rssGrowthPct: ((last - first) / first) * 100,
      wsFrames: ws.frames,
      wsStatuses: JSON.stringify(ws.statuses),
      wsSocketsOpened: ws.socketsOpened,
      wsIdleClosed: ws.idleClosed,
      wsErrors: ws.errors,
      alive,
    };
    console.table(report);
    for (const e of ws.errorSamples) console.log(`websocket: ${e}`);
    writeResult('soak', { ...report, rssSamples: rss.samples(), when: new Date().toISOString() });
    return alive && row.errors === 0 && ws.errors === 0 ? 0 : 1;
  });
}

process.exitCode = await main();
