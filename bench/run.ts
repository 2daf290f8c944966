// `npm run bench`: face-detector latency and throughput per worker/thread layout, the same model
// in three runtimes (OpenCV DNN via the addon, onnxruntime-node, TF.js wasm), detector accuracy,
// and HTTPS throughput against a real server on loopback. Prints tables; writes bench/results/*.json.
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import autocannon from 'autocannon';
import { loadRow } from './load-row.js';
import * as ort from 'onnxruntime-node';
import type { ConvertedManifest } from '../models/model-manifest.js';
import { Engine, type DetectFacesOptions, type EngineOptions } from '../src/index.js';
import { createApp } from '../src/server/app.js';
import { startServer } from '../src/server/server.js';
import { generateSelfSigned } from '../src/server/tls.js';
import { evaluateFaceDetector } from './face-eval.js';
import { benchObjectSizes, benchPoseObjectHttp, benchPoseObjectLatency } from './pose-objects.js';
import { benchMetricsStore, benchRequestTrace } from './metrics.js';
import { benchGallerySearch, benchRecognition } from './recognition-bench.js';
import { TfjsReference, useTfjsBackend } from './tfjs-reference.js';
import { benchObjectAccuracy, labelsSummary, loadObjectLabels } from './object-accuracy.js';
import { table } from './table.js';

function findRoot(): string {
  // dist/bench/run.js -> repo root
  return join(dirname(fileURLToPath(import.meta.url)), '..', '..');
}

const root = findRoot();
const data = (p: string) => readFileSync(join(root, 'test', 'data', p));
const quick = process.argv.includes('--quick');
const ITER = quick ? 8 : 40;
// Only the pose and object sections (`node dist/bench/run.js --pose-objects`).
const onlyPoseObjects = process.argv.includes('--pose-objects');

interface LatencyStats {
  p50: number;
  p99: number;
  mean: number;
  n: number;
}

function percentile(sorted: number[], p: number): number {
  const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[i];
}

function stats(samples: number[]): LatencyStats {
  const s = [...samples].sort((a, b) => a - b);
  return { p50: percentile(s, 50), p99: percentile(s, 99), mean: s.reduce((a, b) => a + b, 0) / s.length, n: s.length };
}

async function timeIt(n: number, fn: () => Promise<unknown>): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < n; i++) {
    const t = performance.now();
    await fn();
    out.push(performance.now() - t);
  }
  return out;
}

const DETECT_IMAGES = [
  { name: 'group 500x375 (dlib 2008_002506.jpg)', file: 'dlib/faces/2008_002506.jpg' },
  { name: 'portrait 512x512 (astronaut.png)', file: 'skimage/astronaut.png' },
  { name: 'collage 1986x1545 (bald_guys.jpg)', file: 'dlib/faces/bald_guys.jpg' },
];

async function benchLayouts(): Promise<Record<string, string | number>[]> {
  const layouts: Required<Pick<EngineOptions, 'workers' | 'threadsPerWorker'>>[] = [
    { workers: 1, threadsPerWorker: 1 },
    { workers: 1, threadsPerWorker: 2 },
    { workers: 2, threadsPerWorker: 1 },
    { workers: 2, threadsPerWorker: 2 },
  ];
  const rows: Record<string, string | number>[] = [];
  for (const layout of layouts) {
    const engine = await Engine.open(layout);
    for (const img of DETECT_IMAGES) {
      const buf = data(img.file);
      await timeIt(3, () => engine.detectFaces(buf));
      const lat = stats(await timeIt(ITER, () => engine.detectFaces(buf)));
      // Throughput: keep 2 jobs per worker in flight.
      const total = ITER * 2;
      const inFlight = layout.workers * 2;
      const t = performance.now();
      let next = 0;
      await Promise.all(
        Array.from({ length: inFlight }, async () => {
          while (next++ < total) await engine.detectFaces(buf);
        }),
      );
      const seconds = (performance.now() - t) / 1000;
      rows.push({
        workers: layout.workers,
        threads: layout.threadsPerWorker,
        image: img.name,
        faces: (await engine.detectFaces(buf)).faces.length,
        'p50 ms': lat.p50,
        'p99 ms': lat.p99,
        'images/s': total / seconds,
      });
    }
    await engine.close();
  }
  return rows;
}

async function benchRuntimes(manifest: ConvertedManifest): Promise<Record<string, string | number>[]> {
  const rows: Record<string, string | number>[] = [];
  await useTfjsBackend('wasm');
  for (const name of ['blazeface-back', 'facemesh-detection-full']) {
    const model = manifest.models[name];
    const size = model.input.shape.reduce((a, b) => a * b, 1);
    const nchw = new Float32Array(size).map((_, i) => Math.sin(i) * 0.9);
    const [, c, h, w] = model.input.shape;
    const results: Record<string, number> = {};
    for (const threads of [1, 2]) {
      const engine = await Engine.open({ workers: 1, threadsPerWorker: threads });
      await timeIt(3, () => engine.runModel(name, nchw));
      results[`opencv ${threads}t`] = stats(await timeIt(ITER, () => engine.runModel(name, nchw))).p50;
      await engine.close();

      const session = await ort.InferenceSession.create(join(root, 'models', 'onnx', model.ortFile), {
        intraOpNumThreads: threads,
        interOpNumThreads: 1,
      });
      const feeds = { [model.input.name]: new ort.Tensor('float32', nchw, model.input.shape) };
      await timeIt(3, () => session.run(feeds));
      results[`onnxruntime ${threads}t`] = stats(await timeIt(ITER, () => session.run(feeds))).p50;
      await session.release();
    }
    const ref = await TfjsReference.load(model.source.file, model.input.tfNode, model.outputs.map((o) => o.tfNode), undefined, model.source.package);
    const nhwc = new Float32Array(size);
    await timeIt(3, () => ref.run(nhwc, [1, h, w, c]));
    results['tfjs-wasm'] = stats(await timeIt(ITER, () => ref.run(nhwc, [1, h, w, c]))).p50;
    ref.dispose();
    const base = results['opencv 2t'];
    for (const [engine, ms] of Object.entries(results)) {
      rows.push({ model: name, engine, 'p50 ms': ms, 'x opencv 2t': ms / base });
    }
  }
  return rows;
}

async function benchAccuracy(): Promise<Record<string, string | number>[]> {
  const rows: Record<string, string | number>[] = [];
  const variants: { detector: EngineOptions['faceDetector']; options: DetectFacesOptions; label: string }[] = [
    { detector: 'blazeface-back', options: { tiles: 0, scoreThreshold: 0.5 }, label: 'whole image, score 0.5' },
    { detector: 'blazeface-back', options: { tiles: 2, scoreThreshold: 0.7 }, label: '+2x2 tiles, score 0.7' },
    { detector: 'facemesh-detection-full', options: { tiles: 0, scoreThreshold: 0.5 }, label: 'whole image, score 0.5' },
    { detector: 'facemesh-detection-full', options: { tiles: 0, scoreThreshold: 0.6 }, label: 'whole image, score 0.6' },
    { detector: 'facemesh-detection-full', options: { tiles: 2, scoreThreshold: 0.6 }, label: '+2x2 tiles, score 0.6' },
    { detector: 'facemesh-detection-full', options: {}, label: 'defaults' },
  ];
  for (const v of variants) {
    const engine = await Engine.open({ faceDetector: v.detector, workers: 1, threadsPerWorker: 2 });
    const r = await evaluateFaceDetector(engine, join(root, 'test', 'data'), v.options, 0.5);
    rows.push({
      detector: v.detector ?? '',
      variant: v.label,
      recall: r.recall,
      precision: r.precision,
      'mean IoU': r.meanIou,
      'faceless FP': r.facelessDetections,
    });
    await engine.close();
  }
  return rows;
}

async function benchHttp(): Promise<Record<string, string | number>[]> {
  const engine = await Engine.open();
  const tls = await generateSelfSigned();
  const app = createApp({ engine, config: { bodyLimit: 20 * 1024 * 1024 } });
  const server = await startServer({ app, tls, port: 0, host: '127.0.0.1' });
  const body = data('dlib/faces/2008_002506.jpg');
  const rows: Record<string, string | number>[] = [];
  try {
    for (const connections of [1, 4, 16]) {
      const result = await autocannon({
        url: `https://127.0.0.1:${server.port}/detector/detect/`,
        method: 'POST',
        headers: { 'content-type': 'image/jpeg' },
        body,
        connections,
        duration: quick ? 3 : 10,
      });
      rows.push({
        connections,
        ...loadRow(result),
      });
    }
  } finally {
    await server.close();
    await engine.close();
  }
  return rows;
}

async function main(): Promise<void> {
  const manifest = JSON.parse(readFileSync(join(root, 'models', 'onnx', 'manifest.json'), 'utf8')) as ConvertedManifest;
  const probe = await Engine.open({ workers: 1 });
  const machine = { cpu: cpus()[0]?.model ?? 'unknown', cores: cpus().length, backend: probe.backend(), node: process.version };
  await probe.close();
  console.log(`# edgecv bench ${new Date().toISOString()} on ${machine.cpu} (${machine.cores} cores, ${machine.backend.backend})`);

  const accuracy = onlyPoseObjects ? [] : await benchAccuracy();
  table('Face detector accuracy (dlib examples/faces: 43 annotated faces, IoU >= 0.5; 10 faceless photos)', accuracy);
  const layouts = onlyPoseObjects ? [] : await benchLayouts();
  table('Face detection per image, by worker/thread layout (default detector and options)', layouts);
  const runtimes = onlyPoseObjects ? [] : await benchRuntimes(manifest);
  table('Same model, same input, forward pass only (p50)', runtimes);
  const http = onlyPoseObjects ? [] : await benchHttp();
  table('HTTPS POST /detector/detect/ (500x375 JPEG, loopback, autocannon)', http);
  const poseObjectContext = { root, iterations: ITER, quick, timeIt, stats };
  const objectSizes = await benchObjectSizes(poseObjectContext);
  table('Object detector input size: latency on dog.jpg 768x576, expected objects found in 4 darknet photos', objectSizes);
  const objectAccuracy = await benchObjectAccuracy(root, { quick });
  table(`Object detectors on the hand-checked labels (bench/labels/objects.json: ${labelsSummary(loadObjectLabels(root))}; IoU >= 0.5; 1 worker x 2 threads)`, objectAccuracy);
  const poseObjects = await benchPoseObjectLatency(poseObjectContext);
  table('Pose and object detection per image (default models and options)', poseObjects);
  const poseObjectHttp = await benchPoseObjectHttp(poseObjectContext);
  table('HTTPS POST /pose/detect/ and /object/detect/ (640x424 JPEG, loopback, autocannon)', poseObjectHttp);
  const metricsStore = await benchMetricsStore(quick);
  table('Metrics store: 48 h of 10 s samples in SQLite', metricsStore);
  const traceEngine = await Engine.open({ workers: 1 });
  const requestTrace = await benchRequestTrace(traceEngine, quick).finally(() => traceEngine.close());
  table('HTTPS GET /test/ (8 connections): cost of the audit line', requestTrace);
  const recognition = await benchRecognition(root, quick);
  table('Recognition per face: decode, detect, embed, search a gallery of 1,000 (1 worker x 1 thread)', recognition);
  const gallerySearch = await benchGallerySearch(quick);
  table('Gallery search: one matrix product over all enrolled 1024-d embeddings (1 worker x 1 thread)', gallerySearch);

  const outDir = join(root, 'bench', 'results');
  mkdirSync(outDir, { recursive: true });
  const file = join(outDir, `bench-${new Date().toISOString().replace(/[:.]/g, '-')}.json`);
  const results = {
    machine,
    quick,
    accuracy,
    layouts,
    runtimes,
    http,
    objectSizes,
    objectAccuracy,
    poseObjects,
    poseObjectHttp,
    metricsStore,
    requestTrace,
    recognition,
    gallerySearch,
  };
  writeFileSync(file, `${JSON.stringify(results, null, 2)}\n`);
  console.log(`\nwrote ${file}`);
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
