// Bench sections for pose and object detection: per-image latency of both, centernet's input size against
// latency and detections, and both HTTPS routes under load.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import autocannon from 'autocannon';
import { loadRow } from './load-row.js';
import { Engine, OBJECT_DETECTOR_MODELS, type EngineOptions } from '../src/index.js';
import { createApp } from '../src/server/app.js';
import { startServer } from '../src/server/server.js';
import { generateSelfSigned } from '../src/server/tls.js';
import { EXPECTED_OBJECTS, matchesExpected } from '../testkit/object-eval.js';

type Row = Record<string, string | number>;
type Stats = { p50: number; p99: number };

export interface BenchContext {
  root: string;
  iterations: number;
  quick: boolean;
  timeIt: (n: number, fn: () => Promise<unknown>) => Promise<number[]>;
  stats: (samples: number[]) => Stats;
}

const PHOTOS = [
  { name: 'person.jpg 640x424', file: 'darknet/person.jpg' },
  { name: 'dog.jpg 768x576', file: 'darknet/dog.jpg' },
  { name: 'group 500x375 (2008_001322.jpg)', file: 'dlib/faces/2008_001322.jpg' },
];

/** Whole-call latency (decode, letterbox, inference, decoding) of detectPoses and detectObjects, one call at a time. */
export async function benchPoseObjectLatency(ctx: BenchContext): Promise<Row[]> {
  const rows: Row[] = [];
  const layouts: Required<Pick<EngineOptions, 'workers' | 'threadsPerWorker'>>[] = [
    { workers: 2, threadsPerWorker: 1 },
    { workers: 1, threadsPerWorker: 2 },
  ];
  for (const layout of layouts) {
    const engine = await Engine.open(layout);
    for (const photo of PHOTOS) {
      const buf = readFileSync(join(ctx.root, 'test', 'data', photo.file));
      for (const [route, run] of [
        ['pose', () => engine.detectPoses(buf)],
        ['objects', () => engine.detectObjects(buf)],
      ] as const) {
        await ctx.timeIt(2, run);
        const s = ctx.stats(await ctx.timeIt(ctx.iterations, run));
        const found = await run();
        rows.push({
          task: route,
          workers: layout.workers,
          threads: layout.threadsPerWorker,
          image: photo.name,
          found: 'poses' in found ? found.poses.length : found.objects.length,
          'p50 ms': s.p50,
          'p99 ms': s.p99,
        });
      }
    }
    await engine.close();
  }
  return rows;
}

/** Every object model (centernet and YOLOv5s at each converted input size): latency on a 768x576 photo, and the expected objects it finds. */
export async function benchObjectSizes(ctx: BenchContext): Promise<Row[]> {
  const expectedCount = EXPECTED_OBJECTS.reduce((n, [, e]) => n + e.length, 0);
  const dog = readFileSync(join(ctx.root, 'test', 'data', 'darknet', 'dog.jpg'));
  const rows: Row[] = [];
  for (const model of OBJECT_DETECTOR_MODELS) {
    const row: Row = { model };
    for (const threads of [1, 2]) {
      // The model's cost on this many threads: no idle core lent to the 1-thread run.
      const engine = await Engine.open({ workers: 1, threadsPerWorker: threads, idleCores: 'keep', objectDetector: model, poseModel: null });
      await ctx.timeIt(2, () => engine.detectObjects(dog));
      row[`p50 ms, ${threads} thread${threads > 1 ? 's' : ''}`] = ctx.stats(await ctx.timeIt(ctx.iterations, () => engine.detectObjects(dog))).p50;
      if (threads === 1) {
        for (const threshold of [0.3, 0.2]) {
          let found = 0;
          let detections = 0;
          for (const [file, expected] of EXPECTED_OBJECTS) {
            const r = await engine.detectObjects(readFileSync(join(ctx.root, 'test', 'data', file)), { scoreThreshold: threshold });
            detections += r.objects.length;
            found += expected.filter((e) => r.objects.some((o) => matchesExpected(o, e, r.width, r.height))).length;
          }
          row[`expected found @${threshold}`] = `${found}/${expectedCount}`;
          row[`detections @${threshold}`] = detections;
        }
      }
      await engine.close();
    }
    rows.push(row);
  }
  return rows;
}

/** HTTPS POST /pose/detect/ and /object/detect/ with a 640x424 JPEG, autocannon on loopback. */
export async function benchPoseObjectHttp(ctx: BenchContext): Promise<Row[]> {
  const engine = await Engine.open();
  const tls = await generateSelfSigned();
  const server = await startServer({ app: createApp({ engine, config: { bodyLimit: 20 * 1024 * 1024 } }), tls, port: 0, host: '127.0.0.1' });
  const body = readFileSync(join(ctx.root, 'test', 'data', 'darknet', 'person.jpg'));
  const rows: Row[] = [];
  try {
    for (const path of ['/pose/detect/', '/object/detect/']) {
      for (const connections of [1, 4]) {
        const result = await autocannon({
          url: `https://127.0.0.1:${server.port}${path}`,
          method: 'POST',
          headers: { 'content-type': 'image/jpeg' },
          body,
          connections,
          duration: ctx.quick ? 3 : 10,
        });
        rows.push({
          route: path,
          connections,
          ...loadRow(result),
        });
      }
    }
  } finally {
    await server.close();
    await engine.close();
  }
  return rows;
}
