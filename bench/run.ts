// `npm run bench`: every model's forward pass in the addon against onnxruntime-node on the same file, worker
// scaling, route latency over HTTPS, face-detector accuracy and latency per worker/thread layout, pose, objects,
// recognition, metrics, and edgecv against the Node alternatives (opencv4nodejs, onnxruntime-node, TF.js; last).
// Prints tables; writes bench/results/*.json.
//   node dist/bench/run.js [--quick] [--engine-speed | --pose-objects | --alternatives | --int8 | --gpu]   (one group of sections only:
//   SECTIONS below says which sections each group holds)
//   [--gallery-1m] adds a 1,000,000-embedding gallery (a long HNSW build); [--gallery-i8] stores that index as i8
// The benches run alone, one flag each (ALONE below), followed by that bench's own flags; each but --forward is also
// its own program (`node dist/bench/<file>.js`, the same flags):
//   --balancer [--quick]: haproxy in front of 1, 2, 3 servers (bench/balancer.ts)
//   --routes [--quick]: a real `edgecv serve`'s route latency, int8 and fp32, and Frigate's case (bench/route-latency.ts)
//   --metrics-platform [--quick]: the fleet metrics (1,000 instances into a real influxd, console queries)
//   --forward [a,b,...]: the fp32 forward pass against onnxruntime-node, of every model or of those named
//   --first-request [--rounds 4] [--base DIR]: each route's first request after start against the next ones
//   --pose-stages [--runs 200] [--configs persons:int8,whole:int8] [--size 640x480] [--fill 1]: the pose route by stage
//   --fair-shares [--workers 2] [--heavy 8] [--seconds 20] [--cli FILE]: a light client beside a flood of large photos
//   --library-paging [--samples 3000] [--limit 50] [--walks 5]: a large subject's samples listed page by page
//   --import-qualities [--lines 500] [--rounds 2]: an import with the crops' qualities, without them, without crops
//   --console-large-answer [--mb 150]: a huge InfluxDB answer against the console's byte cap
//   --route-ab --base <checkout>/dist/src/cli.js [--rounds 6] [--per-round 15]: the ordinary routes on two builds
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import autocannon from 'autocannon';
import { loadRow } from './load-row.js';
import type { ConvertedManifest } from '../models/model-manifest.js';
import { Engine, type DetectFacesOptions, type EngineOptions } from '../src/index.js';
import { createApp } from '../src/server/app.js';
import { startServer } from '../src/server/server.js';
import { generateSelfSigned } from '../src/server/tls.js';
import { evaluateFaceDetector } from '../testkit/face-eval.js';
import { benchObjectSizes, benchPoseObjectHttp, benchPoseObjectLatency } from './pose-objects.js';
import { benchMetricsStore, benchRequestTrace } from './metrics.js';
import { benchMetricsPlatform, printMetricsPlatform } from './metrics-platform.js';
import { benchGallerySearch, benchRecognition } from './recognition-bench.js';
import { benchForwardVsOnnxRuntime, benchRouteLatency, benchWorkerScaling } from './engine-speed.js';
import { HAS_INT8_DOT_PRODUCT } from '../testkit/cpu-int8.js';
import { benchInt8Accuracy, benchInt8Forward } from './int8-speed.js';
import { benchObjectAccuracy } from './object-accuracy.js';
import { benchPoseAccuracy } from './pose-accuracy.js';
import { benchPosePhotoSizes } from './pose-photo-sizes.js';
import { labelsSummary, loadObjectLabels } from '../testkit/object-labels.js';
import { MIN_KEYPOINTS } from '../testkit/pose-scoring.js';
import { benchAlternatives } from './alternatives/bench.js';
import { table } from '../testkit/table.js';
import { benchBalancer, printBalancer } from './balancer.js';
import { benchGpu, printGpu } from './gpu.js';
import { benchRouteLatencyServers, printRouteLatency } from './route-latency.js';
import { writeResult } from '../testkit/server-process.js';
import { percentile } from '../src/metrics/percentiles.js';
import type { AloneBench } from './entry.js';
import { consoleLargeAnswer } from './console-large-answer.js';
import { fairShares } from './fair-shares.js';
import { firstRequest } from './first-request.js';
import { importQualities } from './import-qualities.js';
import { libraryPaging } from './library-paging.js';
import { routeAb } from './route-ab.js';
import { poseStages } from './pose-stages.js';

function findRoot(): string {
  // dist/bench/run.js -> repo root
  return join(dirname(fileURLToPath(import.meta.url)), '..', '..');
}

const root = findRoot();
const data = (p: string) => readFileSync(join(root, 'test', 'data', p));
const quick = process.argv.includes('--quick');
const ITER = quick ? 8 : 40;
/** The groups one flag selects (`node dist/bench/run.js --int8`, ...); no flag runs every section. */
const GROUPS = ['engine-speed', 'pose-objects', 'alternatives', 'int8', 'gpu'] as const;
type Group = (typeof GROUPS)[number];
const onlyGroup: Group | undefined = GROUPS.find((g) => process.argv.includes(`--${g}`));

interface LatencyStats {
  p50: number;
  p99: number;
  mean: number;
  n: number;
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

type Rows = Record<string, string | number>[];
type Context = { root: string; iterations: number; quick: boolean; timeIt: typeof timeIt; stats: typeof stats };

/** One section of the bench: its key in the results file, the groups that select it, how it runs and prints. */
interface Section<T = unknown> {
  key: string;
  groups: Group[];
  /** skipped under --quick */
  notQuick?: boolean;
  /** its value in the results file when not run */
  empty: T;
  run: () => Promise<T>;
  print: (result: T) => void;
}

const section = <T>(s: Section<T>): Section => s as Section;
const rowsSection = (key: string, groups: Group[], title: string, run: () => Promise<Rows>, notQuick = false): Section =>
  section<Rows>({ key, groups, notQuick, empty: [], run, print: (rows) => table(title, rows) });

/** Every section, in the order they run (the alternatives last: opencv4nodejs's thread count is process-wide). */
function sections(ctx: Context, manifest: ConvertedManifest): Section[] {
  const int8Cpu = HAS_INT8_DOT_PRODUCT ? 'CPU with int8 dot products (VNNI)' : "CPU without VNNI: onnxruntime's exact int8 kernels on both sides";
  const gallerySizes = [1_000, 10_000, 100_000, ...(process.argv.includes('--gallery-1m') ? [1_000_000] : [])];
  const galleryStorage = process.argv.includes('--gallery-i8') ? 'i8' : 'f16';
  return [
    rowsSection(
      'int8',
      ['engine-speed', 'int8'],
      `int8 models: edgecv running the int8 file vs onnxruntime-node running the fp32 and the int8 file, same input, 2 threads, interleaved; ${int8Cpu} (docs/int8.md)`,
      () => benchInt8Forward(ctx, manifest),
    ),
    rowsSection('int8Accuracy', ['int8'], 'int8 and fp32 accuracy from the same run (each precision at its default thresholds; docs/int8.md)', () =>
      benchInt8Accuracy(root),
    ),
    section({
      key: 'forward',
      groups: ['engine-speed'],
      empty: null,
      run: () => benchForwardVsOnnxRuntime(ctx, manifest),
      print: (forward) => {
        if (!forward) return;
        table(
          'Forward pass, every manifest model: edgecv (1 worker x 2 threads) vs onnxruntime-node (2 threads), same file, interleaved',
          forward.rows,
        );
        table('Forward pass summary (ratio = onnxruntime-node p50 / edgecv p50)', [forward.summary]);
      },
    }),
    section({
      key: 'scaling',
      groups: ['engine-speed'],
      empty: null,
      run: () => benchWorkerScaling(ctx),
      print: (scaling) =>
        scaling && table(`Face detection throughput by layout, 640x480 JPEG (2 workers / 1 worker = ${scaling.scaling.toFixed(2)}x)`, scaling.rows),
    }),
    section({
      key: 'routes',
      groups: ['engine-speed'],
      empty: null,
      run: () => benchRouteLatency(ctx),
      print: (routes) =>
        routes &&
        table(
          `Routes over HTTPS on loopback, 640x480 JPEG, default server (detector 4 / 1 connections = ${routes.httpScaling.keep.toFixed(2)}x keeping idle cores, ${routes.httpScaling.lend.toFixed(2)}x lending them)`,
          routes.rows,
        ),
    }),
    section({
      key: 'gpu',
      groups: ['gpu'],
      empty: null,
      run: () => benchGpu({ runs: quick ? 8 : 30, clients: [1, 4, 16] }),
      print: (r) => r && printGpu(r),
    }),
    rowsSection('accuracy', [], 'Face detector accuracy (dlib examples/faces: 43 annotated faces, IoU >= 0.5; 10 faceless photos)', benchAccuracy),
    rowsSection('layouts', [], 'Face detection per image, by worker/thread layout (default detector and options)', benchLayouts),
    rowsSection('http', [], 'HTTPS POST /detector/detect/ (500x375 JPEG, loopback, autocannon)', benchHttp),
    rowsSection(
      'objectSizes',
      ['pose-objects'],
      'Object detector input size: latency on dog.jpg 768x576, expected objects found in 4 darknet photos',
      () => benchObjectSizes(ctx),
    ),
    rowsSection(
      'objectAccuracy',
      ['pose-objects'],
      `Object detectors on the hand-checked labels (testkit/labels/objects.json: ${labelsSummary(loadObjectLabels(root))}; IoU >= 0.5; 1 worker x 2 threads)`,
      () => benchObjectAccuracy(root, { quick }),
    ),
    rowsSection(
      'poseAccuracy',
      ['pose-objects'],
      `Pose models on the labelled persons (testkit/labels/objects.json, photos with every person boxed; a person is posed by >= ${MIN_KEYPOINTS} confident keypoints mostly inside the box; 1 worker x 2 threads)`,
      () => benchPoseAccuracy(root, { quick }),
    ),
    rowsSection(
      'poseSizes',
      ['pose-objects'],
      'The labelled persons at camera sizes, JPEG against PNG of the same pixels (persons mode, int8; the pose route decodes a JPEG as small as its models allow)',
      () => benchPosePhotoSizes(root),
      true,
    ),
    rowsSection('poseObjects', ['pose-objects'], 'Pose and object detection per image (default models and options)', () =>
      benchPoseObjectLatency(ctx),
    ),
    rowsSection('poseObjectHttp', ['pose-objects'], 'HTTPS POST /pose/detect/ and /object/detect/ (640x424 JPEG, loopback, autocannon)', () =>
      benchPoseObjectHttp(ctx),
    ),
    rowsSection('metricsStore', [], 'Metrics store: 48 h of 10 s samples in SQLite', () => benchMetricsStore(quick)),
    section({ key: 'metricsPlatform', groups: [], empty: null, run: () => benchMetricsPlatform(quick), print: (r) => r && printMetricsPlatform(r) }),
    section({ key: 'balancer', groups: [], empty: null, run: () => benchBalancer(quick), print: (r) => r && printBalancer(r) }),
    section({
      key: 'routeServers',
      groups: [],
      empty: null,
      run: () => benchRouteLatencyServers(quick),
      print: (r) => {
        if (!r) return;
        printRouteLatency(r);
        writeResult('route-latency', r);
      },
    }),
    rowsSection('requestTrace', [], 'HTTPS GET /test/ (8 connections): cost of the audit line', async () => {
      const engine = await Engine.open({ workers: 1 });
      return benchRequestTrace(engine, quick).finally(() => engine.close());
    }),
    rowsSection('recognition', [], 'Recognition per face: decode, detect, embed, search a gallery of 1,000 (1 worker x 1 thread)', () =>
      benchRecognition(root, quick),
    ),
    rowsSection(
      'gallerySearch',
      [],
      `Gallery search at scale: exact (matrix product on a worker) vs HNSW (${galleryStorage}, JS thread) + exact re-ranking, would-be rejections confirmed by an int8 scan of every entry, real embeddings + distractors`,
      () => benchGallerySearch(root, quick, gallerySizes, galleryStorage),
    ),
    section({
      key: 'alternatives',
      groups: ['alternatives'],
      empty: null,
      run: () => benchAlternatives({ root, quick, stats }),
      print: (alternatives) => {
        if (!alternatives) return;
        table('Alternatives: does each find about the same boxes as edgecv on the photo?', alternatives.checks);
        table('edgecv vs the Node alternatives: photo bytes to boxes, same model, 2 threads per call', alternatives.rows);
        for (const note of alternatives.notes) console.log(`- ${note}`);
      },
    }),
  ];
}

function readManifest(): ConvertedManifest {
  return JSON.parse(readFileSync(join(root, 'models', 'onnx', 'manifest.json'), 'utf8')) as ConvertedManifest;
}

/** The machine, printed first and kept in the results file. */
async function machineLine(): Promise<{ cpu: string; cores: number; backend: ReturnType<Engine['backend']>; node: string }> {
  const probe = await Engine.open({ workers: 1 });
  const machine = { cpu: cpus()[0]?.model ?? 'unknown', cores: cpus().length, backend: probe.backend(), node: process.version };
  await probe.close();
  console.log(`# edgecv bench ${new Date().toISOString()} on ${machine.cpu} (${machine.cores} cores, ${machine.backend.backend})`);
  return machine;
}

/** --forward [a,b,...]: the fp32 forward pass of the models named (all when none) against onnxruntime-node. */
async function forwardAlone(): Promise<void> {
  const manifest = readManifest();
  await machineLine();
  const forwardAt = process.argv.indexOf('--forward');
  const named = process.argv[forwardAt + 1];
  const models = named && !named.startsWith('--') ? named.split(',') : Object.keys(manifest.models);
  const unknown = models.filter((m) => !(m in manifest.models));
  if (unknown.length) throw new Error(`--forward: no model ${unknown.join(', ')} in the manifest`);
  const only = { ...manifest, models: Object.fromEntries(models.map((m) => [m, manifest.models[m]!])) };
  const forward = await benchForwardVsOnnxRuntime({ root, iterations: ITER, quick, timeIt, stats }, only);
  table('Forward pass: edgecv (1 worker x 2 threads) vs onnxruntime-node (2 threads), same fp32 file, interleaved', forward.rows);
  table('Forward pass summary (ratio = onnxruntime-node p50 / edgecv p50)', [forward.summary]);
}

/** A bench run alone: `--flag` selects it and it gets the command line's other flags. */
interface Alone {
  flag: string;
  run: AloneBench;
}

/** Every bench run alone (the header above says what each measures). */
const ALONE: Alone[] = [
  {
    flag: 'balancer',
    run: async () => {
      const b = await benchBalancer(quick);
      printBalancer(b);
      writeResult('balancer', b);
    },
  },
  {
    flag: 'routes',
    run: async () => {
      const b = await benchRouteLatencyServers(quick);
      printRouteLatency(b);
      writeResult('route-latency', b);
    },
  },
  { flag: 'metrics-platform', run: async () => printMetricsPlatform(await benchMetricsPlatform(quick)) },
  { flag: 'forward', run: forwardAlone },
  { flag: 'first-request', run: firstRequest },
  { flag: 'pose-stages', run: poseStages },
  { flag: 'fair-shares', run: fairShares },
  { flag: 'library-paging', run: libraryPaging },
  { flag: 'import-qualities', run: importQualities },
  { flag: 'console-large-answer', run: consoleLargeAnswer },
  { flag: 'route-ab', run: routeAb },
];

async function main(): Promise<void> {
  const args = process.argv.slice(2);
  const alone = ALONE.find((a) => args.includes(`--${a.flag}`));
  if (alone) {
    await alone.run(args.filter((a) => a !== `--${alone.flag}`));
    return;
  }
  const manifest = readManifest();
  const machine = await machineLine();
  const ctx = { root, iterations: ITER, quick, timeIt, stats };
  const results: Record<string, unknown> = { machine, quick };
  for (const section of sections(ctx, manifest)) {
    const selected = (onlyGroup === undefined || section.groups.includes(onlyGroup)) && !(quick && section.notQuick);
    const result = selected ? await section.run() : section.empty;
    results[section.key] = result;
    if (selected) section.print(result);
  }

  const outDir = join(root, 'bench', 'results');
  mkdirSync(outDir, { recursive: true });
  const file = join(outDir, `bench-${new Date().toISOString().replace(/[:.]/g, '-')}.json`);
  writeFileSync(file, `${JSON.stringify(results, null, 2)}\n`);
  console.log(`\nwrote ${file}`);
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
