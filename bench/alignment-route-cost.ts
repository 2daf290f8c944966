// What face alignment costs the recognition route: POST /recognizer/predict/ on a 640x480 photo with one face,
// over real HTTPS on loopback, against servers in this process that differ only in the engine's
// faceAlignment option (the aligned default, and the plain box crop). Requests alternate between the two servers
// one at a time (the order swapped every round), so both see the same load from whatever else runs on the
// machine; each server has its own keep-alive connection and its own gallery holding the photo's face.
//   node dist/bench/alignment-route-cost.js [--requests N] [--quick]
// Two photos: the face upright (within 10 degrees: cut as before, the landmark fit is the added work) and the same
// photo turned 30 degrees (the face is looked at again upright and cut turned). A third server, aligned too, is the
// control: the difference between two servers that differ in nothing shows what a difference is worth on this
// machine. docs/models.md reports a run.

import fs from 'node:fs';
import https from 'node:https';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import jpeg from 'jpeg-js';
import { DEFAULT_BODY_LIMIT } from '../src/config.js';
import { RecognitionService } from '../src/gallery/recognition-service.js';
import { SqliteGalleryStore } from '../src/gallery/sqlite-store.js';
import { Engine } from '../src/index.js';
import { median, percentile } from '../src/metrics/percentiles.js';
import { createApp } from '../src/server/app.js';
import { startServer, type RunningServer } from '../src/server/server.js';
import { generateSelfSigned } from '../src/server/tls.js';
import { rotateRgba } from './shared/rotate-photo.js';
import { post } from './shared/timed-post.js';
import { VGA, VGA_FACE_PHOTO, vgaJpeg, type Rgba } from './shared/vga-photos.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const WARMUP = 20;
const round = (x: number) => Math.round(x * 100) / 100;

type SideName = 'aligned' | 'box crop' | 'aligned, second server';

interface Side {
  name: SideName;
  engine: Engine;
  recognition: RecognitionService;
  server: RunningServer;
  agent: https.Agent;
}

/** The centre width x height of an image (the turned photo's canvas is larger than 640x480). */
function centre(src: Rgba, width: number, height: number): Buffer {
  const x0 = Math.floor((src.width - width) / 2);
  const y0 = Math.floor((src.height - height) / 2);
  const data = new Uint8Array(width * height * 4);
  for (let y = 0; y < height; y++) data.set(src.data.subarray(((y0 + y) * src.width + x0) * 4, ((y0 + y) * src.width + x0 + width) * 4), y * width * 4);
  return Buffer.from(jpeg.encode({ width, height, data }, 90).data);
}

/** One POST of a JPEG; resolves with the round trip in ms and the parsed answer (a status other than 200 rejects). */
async function predict(side: Side, body: Buffer): Promise<{ ms: number; answer: Record<string, unknown> }> {
  const r = await post(side.server.url, side.agent, { path: '/recognizer/predict/', body, contentType: 'image/jpeg' });
  return { ms: r.ms, answer: JSON.parse(r.text) as Record<string, unknown> };
}

async function openSide(name: SideName, tmp: string, tls: { cert: string; key: string }, enrolPhoto: Buffer): Promise<Side> {
  // The server's engine defaults, less the pose and object models this route never runs.
  const engine = await Engine.open({ poseModel: null, objectDetector: null, faceAlignment: name !== 'box crop' });
  const dir = path.join(tmp, `server-${fs.readdirSync(tmp).length}`);
  const store = SqliteGalleryStore.open(dir);
  const recognition = await RecognitionService.open(engine, store, { log: () => {} });
  await recognition.ready;
  await recognition.enrol('astronaut', enrolPhoto);
  const app = createApp({ engine, config: { bodyLimit: DEFAULT_BODY_LIMIT, adminKey: 'bench-admin-key-0123456789' }, recognition });
  const server = await startServer({ app, tls, port: 0, host: '127.0.0.1' });
  return { name, engine, recognition, server, agent: new https.Agent({ keepAlive: true, maxSockets: 1 }) };
}

interface CaseResult {
  photo: string;
  names: [SideName, SideName];
  requests: number;
  p50: [number, number];
  p90: [number, number];
  /** Median over rounds of (first - second) of the same round. */
  pairedMedian: number;
  answers: [string, string];
}

async function measureCase(sides: [Side, Side], photo: string, body: Buffer, requests: number): Promise<CaseResult> {
  for (const side of sides) for (let i = 0; i < WARMUP; i++) await predict(side, body);
  const times: [number[], number[]] = [[], []];
  const answers: [string, string] = ['', ''];
  const diffs: number[] = [];
  for (let i = 0; i < requests; i++) {
    const order = i % 2 === 0 ? [0, 1] : [1, 0];
    const ms: [number, number] = [0, 0];
    for (const k of order) {
      const r = await predict(sides[k]!, body);
      times[k]!.push(r.ms);
      ms[k] = r.ms;
      answers[k] = `${String(r.answer['subject'] ?? r.answer['success'])} ${String(r.answer['confidence'] ?? '')}`;
    }
    diffs.push(ms[0] - ms[1]);
  }
  const p = (k: 0 | 1, q: number) => round(percentile([...times[k]].sort((a, b) => a - b), q));
  return {
    photo,
    names: [sides[0].name, sides[1].name],
    requests,
    p50: [p(0, 50), p(1, 50)],
    p90: [p(0, 90), p(1, 90)],
    pairedMedian: round(median(diffs)),
    answers,
  };
}

/**
 * The same comparison inside one engine, without HTTP: recognizeFace with and without alignment, alternating call
 * by call (each marked as a lone request, as the server marks it); medians of the total and of each stage.
 */
async function inEngine(side: Side, body: Buffer, calls: number): Promise<string[]> {
  const gallery = side.engine.createGallery();
  const first = await side.engine.embedFace(body);
  gallery.add([{ id: 1, subject: 'astronaut', embedding: first.embedding! }]);
  const stages = { aligned: new Map<string, number[]>(), 'box crop': new Map<string, number[]>() };
  for (let i = 0; i < WARMUP + calls; i++) {
    for (const align of i % 2 === 0 ? [true, false] : [false, true]) {
      const done = side.engine.serveRequest();
      const t0 = performance.now();
      const r = await side.engine.recognizeFace(body, gallery, { align });
      const total = performance.now() - t0;
      done();
      if (i < WARMUP) continue;
      const into = stages[align ? 'aligned' : 'box crop'];
      for (const [k, v] of [['total', total], ...Object.entries(r.timings)] as [string, number][]) into.set(k, [...(into.get(k) ?? []), v]);
    }
  }
  return [...stages.aligned.keys()].map((k) => `| ${k.replace(/Ms$/, '')} | ${round(median(stages.aligned.get(k)!))} | ${round(median(stages['box crop'].get(k)!))} |`);
}

async function main(): Promise<void> {
  const at = process.argv.indexOf('--requests');
  const requests = at > 0 ? Number(process.argv[at + 1]) : process.argv.includes('--quick') ? 30 : 400;
  if (!Number.isInteger(requests) || requests < 1 || requests > 5000) throw new Error('--requests takes 1 to 5000');
  const upright = vgaJpeg(ROOT, VGA_FACE_PHOTO);
  const turned = centre(rotateRgba(jpeg.decode(upright, { useTArray: true, formatAsRGBA: true }), 30), VGA.width, VGA.height);
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'edgecv-bench-align-'));
  const tls = await generateSelfSigned();
  const loadBefore = os.loadavg().map((x) => round(x));
  const sides: Side[] = [];
  try {
    for (const name of ['aligned', 'box crop', 'aligned, second server'] as const) sides.push(await openSide(name, tmp, tls, upright));
    const [aligned, box, control] = sides as [Side, Side, Side];
    const results = [
      await measureCase([aligned, box], 'upright, 640x480', upright, requests),
      // the control: two servers that differ in nothing, measured the same way (what the difference is worth)
      await measureCase([aligned, control], 'upright, 640x480 (control)', upright, requests),
      await measureCase([aligned, box], 'turned 30 degrees, 640x480', turned, requests),
    ];
    console.log(`CPU: ${os.cpus()[0]?.model ?? 'unknown'}, ${os.cpus().length} cores; load average ${loadBefore.join(', ')} before, ${os.loadavg().map((x) => round(x)).join(', ')} after; ${new Date().toISOString()}`);
    console.log(`engine: ${aligned.engine.backend().runtimes['faceEmbedder'] ?? '?'} faceres ${aligned.engine.backend().precisions['faceEmbedder'] ?? '?'}; ${requests} requests per server and photo, alternating, after ${WARMUP} warm-up`);
    console.log('| photo | servers A / B | p50 A ms | p50 B ms | p50 A - B | median of paired differences A - B | p90 A / B | answers A / B |');
    console.log('|---|---|---|---|---|---|---|---|');
    for (const r of results) {
      console.log(
        `| ${r.photo} | ${r.names.join(' / ')} | ${r.p50[0]} | ${r.p50[1]} | ${round(r.p50[0] - r.p50[1])} | ${r.pairedMedian} | ${r.p90.join(' / ')} | ${r.answers.join(' / ')} |`,
      );
    }
    console.log(`\nIn one engine, no HTTP: recognizeFace aligned and not, alternating, ${requests} calls each (upright photo); medians`);
    console.log('| stage | aligned ms | box crop ms |');
    console.log('|---|---|---|');
    for (const line of await inEngine(aligned, upright, requests)) console.log(line);
  } finally {
    for (const s of sides) {
      s.agent.destroy();
      await s.server.close();
      await s.recognition.close();
      await s.engine.close();
    }
    fs.rmSync(tmp, { recursive: true, force: true });
  }
}

await main();
