// The GPU table (docs/gpu.md): each net's forward pass on the Vulkan GPU against the CPU, and each route's server
// time and throughput with 1, 4 and 16 clients at once on an engine opened with --backend gpu against one with
// --backend cpu, on a 640x480 photo. The route times include every host copy the route really makes (decode,
// letterbox, upload, download, decode of the outputs): they are the engine's own calls.
//
//   node dist/bench/gpu.js [--runs N] [--clients 1,4,16] [--json FILE]; also a section of `npm run bench` (--gpu)
//
// Without a Vulkan GPU it says so and skips. On a software one (VK_ICD_FILENAMES at lavapipe) it runs, slowly, and
// says nothing about speed.

import fs from 'node:fs';
import path from 'node:path';
import { Engine } from '../src/index.js';
import type { BackendInfo, NetKey } from '../src/engine/types.js';
import { rawModelSpec, readManifest } from '../src/engine/manifest.js';
import { loadNative, type NativeGpuAdapter } from '../src/engine/native.js';
import { findOnnxRuntimeLibrary } from '../src/engine/onnxruntime-library.js';
import { madeUpInput } from '../src/engine/precision-timer.js';
import { percentile } from '../src/metrics/percentiles.js';
import { argValue } from '../testkit/args.js';
import { REPO_ROOT } from '../testkit/server-process.js';
import { VGA_FACE_PHOTO, VGA_SCENE_PHOTO, vgaJpeg } from '../testkit/vga-photos.js';
import { table } from '../testkit/table.js';

type Row = Record<string, string | number>;
const stats = (ms: number[]) => {
  const sorted = [...ms].sort((a, b) => a - b);
  return { p50: percentile(sorted, 50), p99: percentile(sorted, 99) };
};

async function timed(runs: number, fn: () => Promise<unknown>): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < runs; i++) {
    const t0 = performance.now();
    await fn();
    out.push(performance.now() - t0);
  }
  return out;
}

/** Each net of the default engine: fp32 on the GPU, fp32 and its default file (int8 where it has one) on the CPU. */
async function netRows(gpuEngine: Engine, runs: number): Promise<Row[]> {
  const modelDir = path.join(REPO_ROOT, 'models', 'onnx');
  const manifest = await readManifest(modelDir);
  const library = findOnnxRuntimeLibrary();
  if (!('path' in library)) throw new Error(library.missing);
  const native = loadNative().createEngine({
    workers: 1,
    threadsPerWorker: 2,
    queueLimit: 4,
    idleCores: 'keep',
    backend: 'gpu',
    onnxRuntimeLibrary: library.path,
  });
  const rows: Row[] = [];
  try {
    const models = gpuEngine.models;
    const names: Record<NetKey, string | null> = {
      faceDetector: models.faceDetector,
      faceEmbedder: models.faceEmbedder,
      poseEstimator: models.pose,
      objectDetector: models.objects,
      personDetector: models.persons,
    };
    for (const [key, name] of Object.entries(names) as [NetKey, string | null][]) {
      if (name === null || (key === 'personDetector' && name === models.objects)) continue;
      const spec = rawModelSpec(manifest, modelDir, name, 'onnxruntime', 'fp32');
      const int8 = rawModelSpec(manifest, modelDir, name, 'onnxruntime', 'int8');
      if (!spec || !int8) continue;
      const input = madeUpInput(spec.inputShape.reduce((a, b) => a * b, 1));
      const check = gpuEngine.backend().gpuChecks?.[key];
      const gpuSpec = { ...spec, device: 'gpu' as const, gpuGraph: check?.graph ?? 'optimized' };
      const sides = { gpu: gpuSpec, cpuFp32: spec, cpuInt8: int8 };
      const ms: Record<string, number[]> = {};
      for (const [side, s] of Object.entries(sides)) {
        await timed(3, () => native.runModel(input, s));
        ms[side] = await timed(runs, () => native.runModel(input, s));
      }
      const g = stats(ms['gpu']!);
      const c = stats(ms['cpuFp32']!);
      const i = stats(ms['cpuInt8']!);
      rows.push({
        net: name,
        input: spec.inputShape.join('x'),
        'GPU p50': g.p50,
        'GPU p99': g.p99,
        'CPU fp32 p50': c.p50,
        'CPU default p50': i.p50,
        'CPU fp32 / GPU': c.p50 / g.p50,
        'CPU default / GPU': i.p50 / g.p50,
      });
    }
  } finally {
    await native.close();
  }
  return rows;
}

/** `clients` callers at once, each making `perClient` calls: per-call ms and calls per second. */
async function load(clients: number, perClient: number, call: () => Promise<unknown>): Promise<{ ms: number[]; perSecond: number }> {
  const ms: number[] = [];
  const t0 = performance.now();
  await Promise.all(Array.from({ length: clients }, async () => ms.push(...(await timed(perClient, call)))));
  return { ms, perSecond: (ms.length * 1000) / (performance.now() - t0) };
}

async function routeRows(engines: Record<'gpu' | 'cpu', Engine>, runs: number, clientCounts: readonly number[]): Promise<Row[]> {
  const face = vgaJpeg(path.join(REPO_ROOT, 'test', 'data'), VGA_FACE_PHOTO);
  const scene = vgaJpeg(path.join(REPO_ROOT, 'test', 'data'), VGA_SCENE_PHOTO);
  const rows: Row[] = [];
  for (const [route, call] of Object.entries({
    '/detector/detect/': (e: Engine) => e.detectFaces(face),
    '/recognizer/predict/ (embed)': (e: Engine) => e.embedFace(face),
    '/pose/detect/': (e: Engine) => e.detectPoses(scene),
    '/object/detect/': (e: Engine) => e.detectObjects(scene),
  })) {
    for (const clients of clientCounts) {
      const row: Row = { route, clients };
      for (const [device, engine] of Object.entries(engines)) {
        await call(engine);
        const { ms, perSecond } = await load(clients, Math.max(2, Math.ceil(runs / clients)), () => call(engine));
        const s = stats(ms);
        Object.assign(row, { [`${device} p50`]: s.p50, [`${device} p99`]: s.p99, [`${device} /s`]: perSecond });
      }
      rows.push(row);
    }
  }
  return rows;
}

export interface GpuBench {
  adapter: NativeGpuAdapter | null;
  cpu: string;
  checks: BackendInfo['gpuChecks'];
  nets: Row[];
  routes: Row[];
}

/** The GPU table, or why there is none (no Vulkan GPU the WebGPU provider can use: `--backend gpu` refuses). */
export async function benchGpu(opts: { runs: number; clients: readonly number[] }): Promise<GpuBench | { skipped: string }> {
  let gpu: Engine;
  try {
    gpu = await Engine.open({ backend: 'gpu' });
  } catch (e) {
    return { skipped: (e as Error).message };
  }
  const cpu = await Engine.open({ backend: 'cpu' });
  try {
    const cpuName = fs.readFileSync('/proc/cpuinfo', 'utf8').match(/model name\s*:\s*(.*)/)?.[1] ?? 'unknown CPU';
    const nets = await netRows(gpu, opts.runs);
    const routes = await routeRows({ gpu, cpu }, opts.runs, opts.clients);
    return { adapter: gpu.backend().gpu, cpu: cpuName, checks: gpu.backend().gpuChecks, nets, routes };
  } finally {
    await gpu.close();
    await cpu.close();
  }
}

export function printGpu(result: GpuBench | { skipped: string }): void {
  if ('skipped' in result) {
    console.log(`\n## GPU: skipped (${result.skipped})`);
    return;
  }
  const a = result.adapter;
  console.log(`\n# GPU: ${a?.vendor} ${a?.device} (${a?.type}; ${a?.api}; driver ${a?.driver}); CPU: ${result.cpu}`);
  table('GPU: each net, one forward pass, ms (fp32 on the GPU; the CPU at fp32 and at its default file)', result.nets);
  table('GPU: each route on a 640x480 photo, engine time per call (ms) and calls per second, --backend gpu against cpu', result.routes);
}

if (process.argv[1]?.endsWith('gpu.js')) {
  const args = process.argv.slice(2);
  const result = await benchGpu({
    runs: Number(argValue(args, '--runs') ?? 30),
    clients: (argValue(args, '--clients') ?? '1,4,16').split(',').map(Number),
  });
  printGpu(result);
  const jsonFile = argValue(args, '--json');
  if (jsonFile) fs.writeFileSync(jsonFile, JSON.stringify(result, null, 1));
}
