// How far the int8 models' answers move between CPU classes (docs/int8.md, "The same answers on every CPU").
// The labelled photos become tensors in plain JS (the same numbers on every CPU), and each int8 file runs in
// onnxruntime-node: here with exact integer products (the reference: onnxruntime's precision mode, what the engine
// runs on an x86 CPU without VNNI and what the fast kernels compute on one with VNNI), here with onnxruntime's
// default kernels, and with --arm64 on arm64 under qemu (scripts/arm64-user.mjs; emulated, so no timing). For each
// run and model against the reference: the floats that differ, the relative RMS, and the decisions: YOLO detections
// at the model's int8 default threshold (boxes, scores, labels that flip), faceres' embedding cosine.
//
//   node dist/bench/int8-cpu-spread.js [--arm64] [--photos=N]
//   node dist/bench/int8-cpu-spread.js --collect <dir> <run>     (one run's outputs into <dir>/<run>: used by the above)
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as ort from 'onnxruntime-node';
import type { ConvertedManifest } from '../models/model-manifest.js';
import { findRoot } from '../models/model-packages.js';
import { OBJECT_DEFAULTS } from '../src/engine/limits.js';
import { ORT_PRECISION_MODE } from '../test/support/cpu-int8.js';
import { loadObjectLabels } from '../test/support/object-labels.js';
import { resizeNearestRgb } from '../test/support/photo-tensor.js';
import { decode } from '../test/support/vga-photos.js';
import { table } from './table.js';

const MODELS = ['yolov5s', 'yolov5s-320', 'movenet-multipose', 'faceres'] as const;
/** yolov5s' input size is open: it runs here at the size the engine letterboxes a square photo into. */
const OPEN_SIDE = 640;
const IOU_SAME_BOX = 0.5;
const NMS_IOU = 0.45;

interface RunSpec {
  name: string;
  session: ort.InferenceSession.SessionOptions;
}
/** The runs made on this machine; the arm64 run uses onnxruntime's defaults (precision mode is x86's). */
const LOCAL_RUNS: RunSpec[] = [
  { name: 'exact', session: ORT_PRECISION_MODE },
  { name: 'default', session: {} },
];

type Tensor = { data: Float32Array; dims: number[] };

function modelInput(manifest: ConvertedManifest, name: string): { file: string; dims: number[]; mean: number; scale: number } {
  const entry = manifest.models[name]!;
  const dims = entry.input.shape.map((d) => (typeof d === 'number' && d > 0 ? d : OPEN_SIDE));
  return { file: entry.int8!.ortFile, dims, mean: entry.input.mean, scale: entry.input.scale };
}

function photoInput(root: string, file: string, dims: number[], mean: number, scale: number): Float32Array {
  const [, , height, width] = dims as [number, number, number, number];
  const rgb = resizeNearestRgb(decode(join(root, 'test', 'data', file)), width, height);
  const plane = width * height;
  const nchw = new Float32Array(3 * plane);
  for (let i = 0; i < plane; i++) for (let c = 0; c < 3; c++) nchw[c * plane + i] = (rgb[i * 3 + c]! - mean) * scale;
  return nchw;
}

/** One run: every model's outputs on every photo, as <dir>/<run>/<model>.<photo>.<output>.f32 and a dims file. */
async function collect(root: string, dir: string, run: RunSpec, photos: string[]): Promise<void> {
  const manifest = JSON.parse(readFileSync(join(root, 'models', 'onnx', 'manifest.json'), 'utf8')) as ConvertedManifest;
  const out = join(dir, run.name);
  mkdirSync(out, { recursive: true });
  const dims: Record<string, number[][]> = {};
  for (const model of MODELS) {
    const input = modelInput(manifest, model);
    const session = await ort.InferenceSession.create(join(root, 'models', 'onnx', input.file), { intraOpNumThreads: 2, ...run.session });
    try {
      for (const [p, file] of photos.entries()) {
        const x = new ort.Tensor('float32', photoInput(root, file, input.dims, input.mean, input.scale), input.dims);
        const result = await session.run({ [session.inputNames[0]!]: x });
        session.outputNames.forEach((o, k) => {
          writeFileSync(join(out, `${model}.${p}.${k}.f32`), result[o]!.data as Float32Array);
          dims[model] ??= session.outputNames.map((n) => [...(result[n]!.dims as readonly number[])]);
        });
      }
    } finally {
      await session.release();
    }
  }
  writeFileSync(join(out, 'dims.json'), JSON.stringify(dims));
}

function readOutput(dir: string, run: string, model: string, photo: number, k: number, dims: number[]): Tensor {
  const bytes = readFileSync(join(dir, run, `${model}.${photo}.${k}.f32`));
  return { data: new Float32Array(bytes.buffer, bytes.byteOffset, bytes.byteLength / 4), dims };
}

const sigmoid = (x: number) => 1 / (1 + Math.exp(-x));

interface Box {
  classId: number;
  score: number;
  rect: [number, number, number, number];
}

function iou(a: Box['rect'], b: Box['rect']): number {
  const w = Math.min(a[2], b[2]) - Math.max(a[0], b[0]);
  const h = Math.min(a[3], b[3]) - Math.max(a[1], b[1]);
  if (w <= 0 || h <= 0) return 0;
  const inter = w * h;
  return inter / ((a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter);
}

/** A YOLO entry of models/onnx/manifest.json (src/engine/manifest.ts checks it for the engine). */
interface YoloSpec {
  strides: number[];
  anchors: number[][];
  classes: number;
}

/** YOLOv5 heads ([1,H,W,A*(5+C)], before the sigmoid) to boxes at `threshold`, class-aware NMS. */
function decodeYolo(heads: Tensor[], yolo: YoloSpec, threshold: number): Box[] {
  const boxes: Box[] = [];
  const per = 5 + yolo.classes;
  heads.forEach(({ data, dims }, l) => {
    const [, h, w, channels] = dims as [number, number, number, number];
    const stride = yolo.strides[l]!;
    const anchors = channels / per;
    for (let gy = 0; gy < h; gy++) {
      for (let gx = 0; gx < w; gx++) {
        for (let a = 0; a < anchors; a++) {
          const o = ((gy * w + gx) * anchors + a) * per;
          const objectness = sigmoid(data[o + 4]!);
          if (objectness < threshold) continue;
          let classId = 0;
          for (let c = 1; c < yolo.classes; c++) if (data[o + 5 + c]! > data[o + 5 + classId]!) classId = c;
          const score = objectness * sigmoid(data[o + 5 + classId]!);
          if (score < threshold) continue;
          const cx = (sigmoid(data[o]!) * 2 - 0.5 + gx) * stride;
          const cy = (sigmoid(data[o + 1]!) * 2 - 0.5 + gy) * stride;
          const bw = (sigmoid(data[o + 2]!) * 2) ** 2 * yolo.anchors[l]![a * 2]!;
          const bh = (sigmoid(data[o + 3]!) * 2) ** 2 * yolo.anchors[l]![a * 2 + 1]!;
          boxes.push({ classId, score, rect: [cx - bw / 2, cy - bh / 2, cx + bw / 2, cy + bh / 2] });
        }
      }
    }
  });
  boxes.sort((x, y) => y.score - x.score);
  const kept: Box[] = [];
  for (const b of boxes) if (!kept.some((k) => k.classId === b.classId && iou(k.rect, b.rect) > NMS_IOU)) kept.push(b);
  return kept;
}

interface Spread {
  floats: number;
  differing: number;
  /** Per output, the largest over the photos. */
  maxRelativeRms: number[];
  /** YOLO: detections in one answer and not the other (same class, IoU >= 0.5); label changes count here. */
  flips?: number;
  detections?: number;
  maxScoreChange?: number;
  maxBoxShift?: number;
  /** faceres: the lowest cosine between the run's and the reference's embeddings. */
  minCosine?: number;
}

function compareYolo(ref: Box[], got: Box[], spread: Spread): void {
  const unmatched = new Set(got.keys());
  for (const r of ref) {
    const i = [...unmatched].find((j) => got[j]!.classId === r.classId && iou(got[j]!.rect, r.rect) >= IOU_SAME_BOX);
    if (i === undefined) {
      spread.flips! += 1;
      continue;
    }
    unmatched.delete(i);
    spread.maxScoreChange = Math.max(spread.maxScoreChange!, Math.abs(got[i]!.score - r.score));
    spread.maxBoxShift = Math.max(spread.maxBoxShift!, ...r.rect.map((v, c) => Math.abs(v - got[i]!.rect[c]!)));
  }
  spread.flips! += unmatched.size;
  spread.detections! += ref.length;
}

function cosine(a: Float32Array, b: Float32Array): number {
  let ab = 0;
  let aa = 0;
  let bb = 0;
  for (let i = 0; i < a.length; i++) {
    ab += a[i]! * b[i]!;
    aa += a[i]! ** 2;
    bb += b[i]! ** 2;
  }
  return ab / Math.sqrt(aa * bb);
}

function spreadOf(root: string, dir: string, run: string, model: string, photos: number): Spread {
  const manifest = JSON.parse(readFileSync(join(root, 'models', 'onnx', 'manifest.json'), 'utf8')) as ConvertedManifest;
  const dims = (JSON.parse(readFileSync(join(dir, 'exact', 'dims.json'), 'utf8')) as Record<string, number[][]>)[model]!;
  const yolo = (manifest.models[model] as { yolo?: YoloSpec }).yolo;
  const threshold = manifest.models[model]!.int8?.scoreThreshold ?? OBJECT_DEFAULTS.scoreThreshold.yolo;
  const spread: Spread = { floats: 0, differing: 0, maxRelativeRms: dims.map(() => 0), ...(yolo ? { flips: 0, detections: 0, maxScoreChange: 0, maxBoxShift: 0 } : {}) };
  for (let p = 0; p < photos; p++) {
    const ref = dims.map((d, k) => readOutput(dir, 'exact', model, p, k, d));
    const got = dims.map((d, k) => readOutput(dir, run, model, p, k, d));
    ref.forEach((r, k) => {
      let err = 0;
      let size = 0;
      for (let i = 0; i < r.data.length; i++) {
        if (got[k]!.data[i] !== r.data[i]) spread.differing++;
        err += (got[k]!.data[i]! - r.data[i]!) ** 2;
        size += r.data[i]! ** 2;
      }
      spread.floats += r.data.length;
      spread.maxRelativeRms[k] = Math.max(spread.maxRelativeRms[k]!, Math.sqrt(err / Math.max(size, 1e-30)));
    });
    if (yolo) compareYolo(decodeYolo(ref, yolo, threshold), decodeYolo(got, yolo, threshold), spread);
    if (model === 'faceres') spread.minCosine = Math.min(spread.minCosine ?? 1, cosine(ref[0]!.data, got[0]!.data));
  }
  return spread;
}

function cpuLine(): string {
  const info = readFileSync('/proc/cpuinfo', 'utf8');
  const name = info.match(/^model name\s*:\s*(.*)$/m)?.[1] ?? 'unknown CPU';
  const flags = new Set(info.match(/^flags\s*:(.*)$/m)?.[1]?.trim().split(/\s+/) ?? []);
  const shown = ['avx2', 'avx512f', 'avx512_vnni', 'avx_vnni', 'avx512vbmi', 'amx_int8'].filter((f) => flags.has(f));
  return `${name} (${shown.join(' ') || 'no AVX2'})`;
}

async function main(): Promise<void> {
  const root = findRoot();
  const args = process.argv.slice(2);
  const labels = loadObjectLabels(root);
  const limit = Number(args.find((a) => a.startsWith('--photos='))?.slice('--photos='.length) ?? Infinity);
  const photos = Object.keys(labels.photos).slice(0, limit);
  if (args[0] === '--collect') {
    const run = LOCAL_RUNS.find((r) => r.name === args[2]) ?? { name: args[2]!, session: {} };
    await collect(root, args[1]!, run, photos);
    return;
  }
  const dir = mkdtempSync(join(tmpdir(), 'edgecv-int8-spread-'));
  try {
    const runs = LOCAL_RUNS.map((r) => ({ name: r.name, cpu: `x64 here: ${cpuLine()}, onnxruntime ${r.name === 'exact' ? 'precision mode' : 'defaults'}` }));
    for (const r of LOCAL_RUNS) await collect(root, dir, r, photos);
    if (args.includes('--arm64')) {
      const started = Date.now();
      const child = spawnSync(process.execPath, [join(root, 'scripts', 'arm64-user.mjs'), join(root, 'dist', 'bench', 'int8-cpu-spread.js'), '--collect', dir, 'arm64', ...args.filter((a) => a.startsWith('--photos='))], { stdio: 'inherit', cwd: root });
      if (child.status !== 0) throw new Error(`the arm64 run failed (exit ${child.status ?? child.signal})`);
      runs.push({ name: 'arm64', cpu: `arm64 under qemu (Cortex-A76 described, dot product), onnxruntime defaults; ${((Date.now() - started) / 1000).toFixed(0)} s emulated` });
    }
    console.log(`# int8 answers against exact integer products on this x64 CPU (${photos.length} labelled photos, tensors made in JS)`);
    for (const run of runs.filter((r) => r.name !== 'exact')) {
      const rows = MODELS.map((model) => {
        const s = spreadOf(root, dir, run.name, model, photos.length);
        return {
          model,
          'floats differing': `${s.differing} of ${s.floats}`,
          'max relative RMS, each output': s.maxRelativeRms.map((e) => (e === 0 ? '0' : e.toExponential(1))).join(' / '),
          'detections flipped (of reference)': s.flips === undefined ? '-' : `${s.flips} (of ${s.detections})`,
          'max score change': s.maxScoreChange === undefined ? '-' : s.maxScoreChange.toFixed(4),
          'max box shift px': s.maxBoxShift === undefined ? '-' : s.maxBoxShift.toFixed(2),
          'min embedding cosine': s.minCosine === undefined ? '-' : s.minCosine.toFixed(5),
        };
      });
      table(run.cpu, rows);
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
