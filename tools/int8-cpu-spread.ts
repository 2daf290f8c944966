// How far the int8 models' answers move between CPU classes (docs/int8.md, "The same answers on every CPU").
// The labelled photos become tensors in plain JS (the same numbers on every CPU), and each int8 file runs in
// onnxruntime-node: here with exact integer products (the reference: onnxruntime's precision mode, what the engine
// runs on an x86 CPU without VNNI and what the fast kernels compute on one with VNNI), here with onnxruntime's
// default kernels, and with --arm64 on arm64 under qemu (scripts/arm64/arm64-user.mjs; emulated, so no timing). For each
// run and model against the reference: the floats that differ, the relative RMS, and the decisions: YOLO detections
// at the model's int8 default threshold (boxes, scores, labels that flip), faceres' embedding cosine.
//
//   node dist/tools/int8-cpu-spread.js [--arm64 [--record]] [--photos=N]
// --record writes the arm64 run's YOLO answers to test/int8-cross-cpu.answers.json, which
// test/int8-cross-cpu.test.ts compares this CPU's with (rerun it when an int8 YOLO file changes).
//   node dist/tools/int8-cpu-spread.js --collect <dir> <run>     (one run's outputs into <dir>/<run>: used by the above)
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as ort from 'onnxruntime-node';
import type { ConvertedManifest } from '../models/model-manifest.js';
import { findRoot } from '../models/model-packages.js';
import { OBJECT_DEFAULTS } from '../src/engine/limits.js';
import { ORT_PRECISION_MODE } from '../testkit/cpu-int8.js';
import { loadObjectLabels } from '../testkit/object-labels.js';
import { ANSWERS_FILE, int8Input, photoInput, RECORD_COMMAND, type RecordedAnswers } from '../testkit/int8-answers.js';
import { compareBoxes, decodeYolo, type OutputTensor, type YoloSpec } from '../testkit/yolo-decode.js';
import { table } from '../testkit/table.js';

const MODELS = ['yolov5s', 'yolov5s-320', 'movenet-multipose', 'faceres'] as const;
interface RunSpec {
  name: string;
  session: ort.InferenceSession.SessionOptions;
}
/** The runs made on this machine; the arm64 run uses onnxruntime's defaults (precision mode is x86's). */
const LOCAL_RUNS: RunSpec[] = [
  { name: 'exact', session: ORT_PRECISION_MODE },
  { name: 'default', session: {} },
];

const readManifest = (root: string) => JSON.parse(readFileSync(join(root, 'models', 'onnx', 'manifest.json'), 'utf8')) as ConvertedManifest;

/** One run: every model's outputs on every photo, as <dir>/<run>/<model>.<photo>.<output>.f32 and a dims file. */
async function collect(root: string, dir: string, run: RunSpec, photos: string[]): Promise<void> {
  const manifest = readManifest(root);
  const out = join(dir, run.name);
  mkdirSync(out, { recursive: true });
  const dims: Record<string, number[][]> = {};
  for (const model of MODELS) {
    const input = int8Input(manifest, model);
    const session = await ort.InferenceSession.create(join(root, 'models', 'onnx', input.file), { intraOpNumThreads: 2, ...run.session });
    try {
      for (const [p, file] of photos.entries()) {
        const x = new ort.Tensor('float32', photoInput(root, file, input), input.dims);
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

function readOutput(dir: string, run: string, model: string, photo: number, k: number, dims: number[]): OutputTensor {
  const bytes = readFileSync(join(dir, run, `${model}.${photo}.${k}.f32`));
  return { data: new Float32Array(bytes.buffer, bytes.byteOffset, bytes.byteLength / 4), dims };
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

/** Cosine of two raw (not normalized) embeddings. */
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

const outputDims = (dir: string, model: string) =>
  (JSON.parse(readFileSync(join(dir, 'exact', 'dims.json'), 'utf8')) as Record<string, number[][]>)[model]!;
const yoloOf = (manifest: ConvertedManifest, model: string) => (manifest.models[model] as { yolo?: YoloSpec }).yolo;
/** The score threshold the engine uses for an int8 YOLO by default. */
const int8Threshold = (manifest: ConvertedManifest, model: string) =>
  manifest.models[model]!.int8?.scoreThreshold ?? OBJECT_DEFAULTS.scoreThreshold.yolo;

function spreadOf(root: string, dir: string, run: string, model: string, photos: number): Spread {
  const manifest = readManifest(root);
  const dims = outputDims(dir, model);
  const yolo = yoloOf(manifest, model);
  const threshold = int8Threshold(manifest, model);
  const spread: Spread = {
    floats: 0,
    differing: 0,
    maxRelativeRms: dims.map(() => 0),
    ...(yolo ? { flips: 0, detections: 0, maxScoreChange: 0, maxBoxShift: 0 } : {}),
  };
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
    if (yolo) {
      const c = compareBoxes(decodeYolo(ref, yolo, threshold), decodeYolo(got, yolo, threshold));
      spread.flips! += c.flips;
      spread.detections! += c.reference;
      spread.maxScoreChange = Math.max(spread.maxScoreChange!, c.maxScoreChange);
      spread.maxBoxShift = Math.max(spread.maxBoxShift!, c.maxBoxShift);
    }
    if (model === 'faceres') spread.minCosine = Math.min(spread.minCosine ?? 1, cosine(ref[0]!.data, got[0]!.data));
  }
  return spread;
}

/** The YOLOs' answers of one run, for test/int8-cross-cpu.test.ts to compare this CPU's with. */
function recordAnswers(root: string, dir: string, run: string, cpu: string, photos: string[]): void {
  const manifest = readManifest(root);
  const models: RecordedAnswers['models'] = {};
  for (const model of MODELS) {
    const yolo = yoloOf(manifest, model);
    if (!yolo) continue;
    const threshold = int8Threshold(manifest, model);
    const dims = outputDims(dir, model);
    const answers = photos.map((_, p) =>
      decodeYolo(
        dims.map((d, k) => readOutput(dir, run, model, p, k, d)),
        yolo,
        threshold,
      ),
    );
    models[model] = { sha256: int8Input(manifest, model).sha256, threshold, answers };
  }
  const recorded: RecordedAnswers = { cpu, command: RECORD_COMMAND, photos, models };
  writeFileSync(join(root, ANSWERS_FILE), JSON.stringify(recorded, null, 1) + '\n');
  console.log(`wrote ${ANSWERS_FILE}: the ${run} run's answers`);
}

function cpuLine(): string {
  const info = readFileSync('/proc/cpuinfo', 'utf8');
  const name = info.match(/^model name\s*:\s*(.*)$/m)?.[1] ?? 'unknown CPU';
  const flags = new Set(
    info
      .match(/^flags\s*:(.*)$/m)?.[1]
      ?.trim()
      .split(/\s+/) ?? [],
  );
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
    const runs = LOCAL_RUNS.map((r) => ({
      name: r.name,
      cpu: `x64 here: ${cpuLine()}, onnxruntime ${r.name === 'exact' ? 'precision mode' : 'defaults'}`,
    }));
    for (const r of LOCAL_RUNS) await collect(root, dir, r, photos);
    if (args.includes('--arm64')) {
      const started = Date.now();
      const child = spawnSync(
        process.execPath,
        [
          join(root, 'scripts', 'arm64', 'arm64-user.mjs'),
          join(root, 'dist', 'bench', 'int8-cpu-spread.js'),
          '--collect',
          dir,
          'arm64',
          ...args.filter((a) => a.startsWith('--photos=')),
        ],
        { stdio: 'inherit', cwd: root },
      );
      if (child.status !== 0) throw new Error(`the arm64 run failed (exit ${child.status ?? child.signal})`);
      runs.push({
        name: 'arm64',
        cpu: `arm64 under qemu (Cortex-A76 described, dot product), onnxruntime defaults; ${((Date.now() - started) / 1000).toFixed(0)} s emulated`,
      });
      if (args.includes('--record')) recordAnswers(root, dir, 'arm64', 'arm64 under qemu user-mode emulation, onnxruntime-node defaults', photos);
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
