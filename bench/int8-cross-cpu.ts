// Are the int8 models' answers the same on another CPU? Writes, for each int8 file, real-photo inputs and the
// outputs onnxruntime-node gives here with exact int8 products (its precision mode, as the engine runs on a CPU
// without VNNI), into a folder to take to the other machine, where bench/int8-cross-cpu.py runs the same files
// with onnxruntime's Python package (its default kernels and its precision mode) and counts the floats that differ.
// With --fp32-yolo the fp32 file of yolov5s-320, whose int8 file keeps fp32 layers, goes too (on the first photo
// only): how far fp32 alone moves between CPUs. With --speed the fp32 files of faceres and movenet-multipose go
// too, and the other machine times each against its int8 file (onnxruntime's default kernels, 2 threads). Either
// keeps the folder under the 64 MiB the device tool carries; both would not.
//   node dist/bench/int8-cross-cpu.js <folder> [--fp32-yolo | --speed]   then, there: python3 int8-cross-cpu.py <folder>
// docs/int8.md ("CPUs without VNNI") reports a run.
import { copyFileSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import * as ort from 'onnxruntime-node';
import type { ConvertedManifest } from '../models/model-manifest.js';
import { findRoot } from '../models/model-packages.js';
import { ORT_PRECISION_MODE } from './shared/cpu-int8.js';
import { photoTensor } from './shared/photo-tensor.js';

const PHOTOS = ['skimage/astronaut.png', 'skimage/motorcycle_left.png'];
const MODELS: { name: string; precision: 'int8' | 'fp32'; photos?: number }[] = [
  { name: 'faceres', precision: 'int8' },
  { name: 'movenet-multipose', precision: 'int8' },
  { name: 'yolov5s-320', precision: 'int8' },
];
const FP32_YOLO = { name: 'yolov5s-320', precision: 'fp32', photos: 1 } as const;
/** Models whose fp32 file goes along with --speed, to be timed against the int8 file there. */
const SPEED_MODELS = ['faceres', 'movenet-multipose'];

interface CrossCpuCase {
  input: string;
  shape: number[];
  inputName: string;
  outputs: { name: string; file: string }[];
}

async function writeCases(out: string, options: { fp32Yolo: boolean; speed: boolean }): Promise<void> {
  const root = findRoot();
  const onnxDir = join(root, 'models', 'onnx');
  const manifest = JSON.parse(readFileSync(join(onnxDir, 'manifest.json'), 'utf8')) as ConvertedManifest;
  mkdirSync(out, { recursive: true });
  const models: Record<string, { file: string; cases: CrossCpuCase[] }> = {};
  for (const { name, precision, photos = PHOTOS.length } of options.fp32Yolo ? [...MODELS, FP32_YOLO] : MODELS) {
    const entry = manifest.models[name]!;
    const file = precision === 'int8' ? entry.int8!.ortFile : entry.ortFile;
    const key = `${name} ${precision}`;
    copyFileSync(join(onnxDir, file), join(out, file));
    const session = await ort.InferenceSession.create(join(onnxDir, file), { intraOpNumThreads: 2, ...ORT_PRECISION_MODE });
    const [, , height, width] = entry.input.shape as [number, number, number, number];
    const cases: CrossCpuCase[] = [];
    for (const [i, photo] of PHOTOS.slice(0, photos).entries()) {
      const { nchw } = photoTensor(readFileSync(join(root, 'test', 'data', photo)), width, height, entry.input.mean, entry.input.scale);
      const result = await session.run({ [session.inputNames[0]!]: new ort.Tensor('float32', nchw, entry.input.shape) });
      const input = `${name}.${precision}.photo${i}.input.f32`;
      writeFileSync(join(out, input), nchw);
      const outputs = session.outputNames.map((o, k) => {
        const f = `${name}.${precision}.photo${i}.output${k}.f32`;
        writeFileSync(join(out, f), result[o]!.data as Float32Array);
        return { name: o, file: f };
      });
      cases.push({ input, shape: entry.input.shape, inputName: session.inputNames[0]!, outputs });
    }
    await session.release();
    models[key] = { file, cases };
  }
  const speed: Record<string, { fp32: string; int8: string; shape: number[] }> = {};
  for (const name of options.speed ? SPEED_MODELS : []) {
    const entry = manifest.models[name]!;
    copyFileSync(join(onnxDir, entry.ortFile), join(out, entry.ortFile));
    speed[name] = { fp32: entry.ortFile, int8: entry.int8!.ortFile, shape: entry.input.shape };
  }
  writeFileSync(join(out, 'cases.json'), `${JSON.stringify({ photos: PHOTOS, models, speed }, null, 1)}\n`);
  console.log(`wrote ${Object.keys(models).length} models' cases to ${out}`);
}

const args = process.argv.slice(2);
const folder = args.find((a) => !a.startsWith('--'));
const fp32Yolo = args.includes('--fp32-yolo');
const speed = args.includes('--speed');
if (!folder || (fp32Yolo && speed)) {
  console.error('usage: node dist/bench/int8-cross-cpu.js <folder> [--fp32-yolo | --speed]');
  process.exit(2);
}
await writeCases(resolve(folder), { fp32Yolo, speed });
