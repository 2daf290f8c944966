// `node dist/bench/run.js --route-ab --base <other checkout>/dist/src/cli.js [--rounds 6] [--per-round 15]`: the
// ordinary routes' latency on two builds in the same run, on the same CPU: both servers (--workers 1) run side by side and
// are asked in alternating rounds (A then B, then B then A), one request at a time, keep-alive HTTPS on loopback,
// 640x480 photos. Prints each route's p50 and p99 per build and the p50 difference. For a change that should cost
// nothing on these routes (issue 48: the fair scheduler, the library's paging, the detector's second look). The other
// checkout's server runs its own addon when it has its own build.

import fs from 'node:fs';
import https from 'node:https';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { median, percentile } from '../src/metrics/percentiles.js';
import { REPO_ROOT, startServerProcess, type ServerProcess } from '../testkit/server-process.js';
import { post, type PostRequest } from '../testkit/timed-post.js';
import { VGA_FACE_PHOTO, VGA_SCENE_PHOTO, vgaJpeg } from '../testkit/vga-photos.js';
import { table } from '../testkit/table.js';
import { runAsProgram } from './entry.js';

export async function routeAb(argv: string[]): Promise<void> {
  const { values } = parseArgs({
    args: argv,
    options: { base: { type: 'string' }, rounds: { type: 'string', default: '6' }, 'per-round': { type: 'string', default: '15' } },
  });
  if (!values.base) throw new Error('--base <other checkout>/dist/src/cli.js is required');
  const rounds = Math.min(50, Number(values.rounds));
  const perRound = Math.min(200, Number(values['per-round']));
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'edgecv-route-ab-'));
  const face = vgaJpeg(REPO_ROOT, VGA_FACE_PHOTO);
  const scene = vgaJpeg(REPO_ROOT, VGA_SCENE_PHOTO);
  const jpeg = (p: string, body: Buffer): PostRequest => ({ path: p, body, contentType: 'image/jpeg' });
  const cases: [string, PostRequest][] = [
    ['POST /detector/detect/', jpeg('/detector/detect/', face)],
    ['POST /recognizer/predict/', jpeg('/recognizer/predict/', face)],
    ['POST /v1/vision/detection', jpeg('/v1/vision/detection', scene)],
    ['POST /pose/detect/', jpeg('/pose/detect/', scene)],
  ];
  const builds: { name: string; server: ServerProcess; agent: https.Agent; times: number[][] }[] = [];
  try {
    for (const [name, cli] of [
      ['base', values.base],
      ['this', path.join(REPO_ROOT, 'dist/src/cli.js')],
    ] as const) {
      const server = await startServerProcess(['--workers', '1', '--data-dir', path.join(tmp, name)], 120_000, [], cli);
      const agent = new https.Agent({ keepAlive: true, maxSockets: 1 });
      builds.push({ name, server, agent, times: cases.map(() => []) });
    }
    // Both started first: a server closes a keep-alive socket idle past its own timeout (5 s in older builds) while
    // the other starts.
    for (const { server, agent } of builds) {
      await post(server.url, agent, jpeg('/trainer/add/?subject=astronaut', face));
      for (const [, r] of cases) for (let i = 0; i < 5; i++) await post(server.url, agent, r);
    }
    for (let round = 0; round < rounds; round++) {
      const order = round % 2 === 0 ? builds : [...builds].reverse();
      for (const b of order) {
        for (const [k, [, r]] of cases.entries()) for (let i = 0; i < perRound; i++) b.times[k]!.push((await post(b.server.url, b.agent, r)).ms);
      }
    }
    const [base, self] = builds as [(typeof builds)[0], (typeof builds)[0]];
    table(
      `route latency, base (${values.base}) against this build, ${rounds} alternating rounds of ${perRound}, --workers 1`,
      cases.map(([name], k) => {
        const a = [...base.times[k]!].sort((x, y) => x - y);
        const b = [...self.times[k]!].sort((x, y) => x - y);
        return {
          route: name,
          n: a.length,
          'base p50 ms': median(a).toFixed(1),
          'this p50 ms': median(b).toFixed(1),
          'p50 diff ms': (median(b) - median(a)).toFixed(1),
          'base p99 ms': percentile(a, 99).toFixed(1),
          'this p99 ms': percentile(b, 99).toFixed(1),
        };
      }),
    );
    console.log(
      `load average ${os
        .loadavg()
        .map((x) => x.toFixed(1))
        .join(' ')}`,
    );
  } finally {
    for (const b of builds) {
      b.agent.destroy();
      await b.server.stop();
    }
    fs.rmSync(tmp, { recursive: true, force: true });
  }
}

await runAsProgram(import.meta.url, routeAb);
