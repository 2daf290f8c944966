// Route latency of a real `edgecv serve`: the four routes on a 640x480 photo, and Frigate's
// DeepStack detector plugin (a 320x320 JPEG region POSTed as multipart to /v1/vision/detection, 0.1 s timeout by
// default), each at the default precision (int8) and at --precision fp32, back to back in one run. Warm keep-alive
// HTTPS on loopback, one request in flight per connection; client-side round trip, bounded request counts. Then
// where the time goes: a body the engine never sees (HTTPS, body, JSON error), and the engine's own stage timings
// of the same calls made in-process.
//   node dist/bench/route-latency.js [--quick]     (alone; `node dist/bench/run.js --routes` is the same)
// docs/int8.md ("Route latency") reports a run.

import fs from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import jpeg from 'jpeg-js';
import { Engine } from '../src/index.js';
import { median, percentile } from '../src/metrics/percentiles.js';
import { post, type PostRequest as Request } from '../testkit/timed-post.js';
import { freePort, startServerProcess, writeResult } from '../testkit/server-process.js';
import { VGA_FACE_PHOTO, VGA_SCENE_PHOTO, vgaJpeg } from '../testkit/vga-photos.js';
import { table } from '../testkit/table.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');

/** Frigate's default api_timeout (frigate/detectors/plugins/deepstack.py): a slower answer is a lost detection. */
export const FRIGATE_TIMEOUT_MS = 100;
const FRIGATE_SIDE = 320;
const WARMUP_REQUESTS = 10;

export type RouteLatencyRow = {
  precision: string;
  case: string;
  connections: number;
  requests: number;
  'p50 ms': number;
  'p99 ms': number;
  'max ms': number;
  'over 100 ms': number;
  /** What the last answer held: the bench times real work, not an error or an empty answer. */
  answer: string;
};

/** Median engine stage timings of one in-process call (the library, no HTTP), per route's engine method. */
export type EngineStageRow = { call: string; 'total ms': number; 'stage medians (ms)': string };

export interface RouteLatencyBench {
  date: string;
  /** Where a route's time goes inside the engine (default engine, in the bench process, one call at a time). */
  stages: EngineStageRow[];
  machine: { cpu: string; cores: number; loadavgBefore: number[]; loadavgAfter: number[] };
  command: string;
  photos: { face: string; scene: string; frigate: string };
  rows: RouteLatencyRow[];
}

const round = (x: number) => Math.round(x * 10) / 10;

/**
 * A 320x320 region of the 640x480 scene, cut around its centre as Frigate cuts a region around motion, JPEG at
 * quality 75 (PIL's default, what Frigate's plugin encodes with).
 */
function frigateRegion(vga: Buffer): Buffer {
  const src = jpeg.decode(vga, { useTArray: true, formatAsRGBA: true });
  const x0 = Math.floor((src.width - FRIGATE_SIDE) / 2);
  const y0 = Math.floor((src.height - FRIGATE_SIDE) / 2);
  const data = Buffer.alloc(FRIGATE_SIDE * FRIGATE_SIDE * 4);
  for (let y = 0; y < FRIGATE_SIDE; y++) {
    const from = ((y0 + y) * src.width + x0) * 4;
    data.set(src.data.subarray(from, from + FRIGATE_SIDE * 4), y * FRIGATE_SIDE * 4);
  }
  return Buffer.from(jpeg.encode({ data, width: FRIGATE_SIDE, height: FRIGATE_SIDE }, 75).data);
}

/** The body Python's `requests.post(url, data={"api_key": ""}, files={"image": jpeg})` sends. */
function frigateForm(image: Buffer): Request {
  const boundary = 'edgecvbenchc0ffee5eed0123456789';
  const body = Buffer.concat([
    Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="api_key"\r\n\r\n\r\n`),
    Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="image"; filename="image"\r\n\r\n`),
    image,
    Buffer.from(`\r\n--${boundary}--\r\n`),
  ]);
  return { path: '/v1/vision/detection', body, contentType: `multipart/form-data; boundary=${boundary}` };
}

/**
 * `total` requests over `connections` keep-alive connections (each its own agent of one socket, one request in
 * flight each), after WARMUP_REQUESTS per connection that are not counted. `agent: 'fresh'`: no keep-alive, a new
 * connection per request (what `requests.post` does without a Session).
 */
async function measure(
  base: string,
  r: Request,
  connections: number,
  total: number,
  agent: 'keep-alive' | 'fresh' = 'keep-alive',
): Promise<{ sorted: number[]; answer: string }> {
  const isHttps = base.startsWith('https:');
  const agents = Array.from({ length: connections }, () =>
    agent === 'fresh'
      ? (false as const)
      : isHttps
        ? new https.Agent({ keepAlive: true, maxSockets: 1 })
        : new http.Agent({ keepAlive: true, maxSockets: 1 }),
  );
  const samples: number[] = [];
  let answer = '';
  try {
    await Promise.all(
      agents.map(async (a) => {
        for (let i = 0; i < WARMUP_REQUESTS; i++) await post(base, a, r);
      }),
    );
    let sent = 0;
    await Promise.all(
      agents.map(async (a) => {
        while (sent++ < total) {
          const { ms, text } = await post(base, a, r);
          samples.push(ms);
          answer = text;
        }
      }),
    );
  } finally {
    for (const a of agents) if (a) a.destroy();
  }
  return { sorted: samples.sort((x, y) => x - y), answer: summarise(answer) };
}

/** An answer in a few words: the subject it names, how many of each list it holds (labels of DeepStack predictions). */
function summarise(text: string): string {
  const json = JSON.parse(text) as Record<string, unknown>;
  const parts: string[] = [];
  if (typeof json.subject === 'string') parts.push(`subject ${json.subject}`);
  if (typeof json.error === 'string') parts.push(`error "${json.error.slice(0, 40)}..."`);
  for (const [key, value] of Object.entries(json)) {
    if (!Array.isArray(value) || value.some((v) => typeof v !== 'object')) continue; // lists of results, not a box's numbers
    const labels = value.map((v: { label?: unknown; class?: unknown }) => v?.label ?? v?.class).filter((l) => typeof l === 'string');
    parts.push(`${value.length} ${key}${labels.length ? ` (${labels.join(', ')})` : ''}`);
  }
  return parts.join('; ');
}

function row(precision: string, name: string, connections: number, { sorted, answer }: { sorted: number[]; answer: string }): RouteLatencyRow {
  return {
    precision,
    case: name,
    connections,
    requests: sorted.length,
    'p50 ms': round(percentile(sorted, 50)),
    'p99 ms': round(percentile(sorted, 99)),
    'max ms': round(sorted[sorted.length - 1] ?? 0),
    'over 100 ms': sorted.filter((ms) => ms > FRIGATE_TIMEOUT_MS).length,
    answer,
  };
}

/** One server at `precision` (undefined: the default, int8), every case in turn. */
async function benchServer(
  tmp: string,
  precision: 'int8' | 'fp32',
  requests: number,
  photos: { face: Buffer; scene: Buffer; region: Buffer },
): Promise<RouteLatencyRow[]> {
  const httpPort = await freePort();
  const args = ['--data-dir', path.join(tmp, precision), '--http-port', String(httpPort), ...(precision === 'fp32' ? ['--precision', 'fp32'] : [])];
  const server = await startServerProcess(args);
  const label = precision === 'int8' ? 'int8 (default)' : 'fp32';
  try {
    // one enrolled face, so /recognizer/predict/ searches a gallery and names it
    await post(server.url, false, { path: '/trainer/add/?subject=astronaut', body: photos.face, contentType: 'image/jpeg' });
    const jpegOf = (p: string, body: Buffer): Request => ({ path: p, body, contentType: 'image/jpeg' });
    const cases: [string, Request][] = [
      ['objects POST /object/detect/ 640x480', jpegOf('/object/detect/', photos.scene)],
      ['pose POST /pose/detect/ 640x480', jpegOf('/pose/detect/', photos.scene)],
      ['recognition POST /recognizer/predict/ 640x480', jpegOf('/recognizer/predict/', photos.face)],
      ['face detection POST /detector/detect/ 640x480', jpegOf('/detector/detect/', photos.face)],
      // what HTTPS, the body and a JSON answer cost without the engine: a body of the face photo's size that is no image
      ['no engine: same-size non-image body, 400', { ...jpegOf('/detector/detect/', Buffer.alloc(photos.face.length, 1)), status: 400 }],
    ];
    const rows: RouteLatencyRow[] = [];
    for (const [name, r] of cases) rows.push(row(label, name, 1, await measure(server.url, r, 1, requests)));
    const frigate = frigateForm(photos.region);
    for (const connections of [1, 2]) {
      rows.push(
        row(
          label,
          'Frigate: 320x320 multipart /v1/vision/detection, HTTPS keep-alive',
          connections,
          await measure(server.url, frigate, connections, requests),
        ),
      );
    }
    // Frigate as it ships: plain HTTP (--http-port), requests.post opens a new connection for every region
    const plain = `http://127.0.0.1:${httpPort}/`;
    rows.push(row(label, 'Frigate as shipped: plain HTTP, new connection per request', 1, await measure(plain, frigate, 1, requests, 'fresh')));
    return rows;
  } catch (e) {
    throw new Error(`${(e as Error).message}\nserver output:\n${server.output()}`);
  } finally {
    await server.stop();
  }
}

/**
 * `runs` calls of each engine method the routes use, one at a time, after 5 warm-up calls; medians per stage. Each
 * call is marked as a request the host serves alone (Engine.serveRequest), as the server marks a lone request.
 */
async function engineStages(photos: { face: Buffer; scene: Buffer; region: Buffer }, runs: number): Promise<EngineStageRow[]> {
  const engine = await Engine.open({ workers: 1 });
  const served = async <T>(call: () => Promise<T>): Promise<T> => {
    const done = engine.serveRequest();
    try {
      return await call();
    } finally {
      done();
    }
  };
  const calls: [string, () => Promise<{ timings: object }>][] = [
    ['detectObjects, 640x480 scene', () => served(() => engine.detectObjects(photos.scene))],
    ['detectObjects, Frigate 320x320 region', () => served(() => engine.detectObjects(photos.region))],
    ['detectPoses, 640x480 scene', () => served(() => engine.detectPoses(photos.scene))],
    ['embedFace (recognition), 640x480 face', () => served(() => engine.embedFace(photos.face))],
    ['detectFaces, 640x480 face', () => served(() => engine.detectFaces(photos.face))],
  ];
  const rows: EngineStageRow[] = [];
  try {
    for (const [call, run] of calls) {
      for (let i = 0; i < 5; i++) await run();
      const totals: number[] = [];
      const stages = new Map<string, number[]>();
      for (let i = 0; i < runs; i++) {
        const t0 = performance.now();
        const { timings } = await run();
        totals.push(performance.now() - t0);
        for (const [k, v] of Object.entries(timings)) {
          if (typeof v !== 'number') continue;
          const values = stages.get(k) ?? [];
          values.push(v);
          stages.set(k, values);
        }
      }
      const parts = [...stages].map(([k, v]) => `${k.replace(/Ms$/, '')} ${round(median(v))}`);
      rows.push({ call, 'total ms': round(median(totals)), 'stage medians (ms)': parts.join(', ') });
    }
  } finally {
    await engine.close();
  }
  return rows;
}

export async function benchRouteLatencyServers(quick: boolean): Promise<RouteLatencyBench> {
  const requests = quick ? 20 : 200;
  const scene = vgaJpeg(ROOT, VGA_SCENE_PHOTO);
  const photos = { face: vgaJpeg(ROOT, VGA_FACE_PHOTO), scene, region: frigateRegion(scene) };
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'edgecv-bench-routes-'));
  const loadavgBefore = os.loadavg().map((x) => Math.round(x * 100) / 100);
  const rows: RouteLatencyRow[] = [];
  try {
    // back to back: one server at a time, so neither's idle threads share the cores with the other's requests
    for (const precision of ['int8', 'fp32'] as const) rows.push(...(await benchServer(tmp, precision, requests, photos)));
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true });
  }
  const stages = await engineStages(photos, quick ? 10 : 40);
  return {
    date: new Date().toISOString(),
    stages,
    machine: {
      cpu: os.cpus()[0]?.model ?? 'unknown',
      cores: os.cpus().length,
      loadavgBefore,
      loadavgAfter: os.loadavg().map((x) => Math.round(x * 100) / 100),
    },
    command: ['node', path.relative(ROOT, process.argv[1] ?? ''), ...process.argv.slice(2)].join(' '),
    photos: {
      face: `${VGA_FACE_PHOTO} fitted into 640x480, JPEG q90 (${photos.face.length} bytes)`,
      scene: `${VGA_SCENE_PHOTO} fitted into 640x480, JPEG q90 (${photos.scene.length} bytes)`,
      frigate: `the scene's centre 320x320, JPEG q75 (${photos.region.length} bytes)`,
    },
    rows,
  };
}

export function printRouteLatency(b: RouteLatencyBench): void {
  table(
    `Route latency of \`edgecv serve\` (default options, then --precision fp32), loopback, ${b.rows[0]?.requests ?? 0} requests per row after 10 warm-up; ` +
      `${b.machine.cores} cores, load average ${b.machine.loadavgBefore.join(', ')} before, ${b.machine.loadavgAfter.join(', ')} after (${b.date})`,
    b.rows,
  );
  table(
    'Where the time goes: engine stage medians of one call at a time in the bench process (default engine, int8, 1 worker; each call marked as a lone request; no HTTP)',
    b.stages,
  );
}

if (process.argv[1] && fileURLToPath(import.meta.url) === path.resolve(process.argv[1])) {
  benchRouteLatencyServers(process.argv.includes('--quick'))
    .then((b) => {
      printRouteLatency(b);
      writeResult('route-latency', b);
    })
    .catch((e: unknown) => {
      console.error(e);
      process.exit(1);
    });
}
