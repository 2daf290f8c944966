// Are the int8 models' answers the same on another CPU? Writes, for each int8 file, real-photo inputs and the
// outputs onnxruntime-node gives here with exact int8 products (its precision mode, as the engine runs on a CPU
// without VNNI), into a folder to take to the other machine, where bench/int8-cross-cpu.py runs the same files
// with onnxruntime's Python package (its default kernels and its precision mode) and counts the floats that differ.
// The fp32 file of yolov5s-320, whose int8 file keeps fp32 layers, goes too (on the first photo only, to keep the
// folder under 64 MiB): how far fp32 alone moves between CPUs.
//   node dist/bench/int8-cross-cpu.js <folder>        then, there: python3 int8-cross-cpu.py <folder>
// docs/int8.md ("CPUs without VNNI") reports a run.
import { copyFileSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import * as ort from 'onnxruntime-node';
import type { ConvertedManifest } from '../models/model-manifest.js';
import { findRoot } from '../models/model-packages.js';
import { ORT_PRECISION_MODE } from '../test/support/cpu-int8.js';
import { photoTensor } from '../test/support/photo-tensor.js';

const PHOTOS = ['skimage/astronaut.png', 'skimage/motorcycle_left.png'];
const MODELS: { name: string; precision: 'int8' | 'fp32'; photos?: number }[] = [
  { name: 'faceres', precision: 'int8' },
  { name: 'movenet-multipose', precision: 'int8' },
  { name: 'yolov5s-320', precision: 'int8' },
  { name: 'yolov5s-320', precision: 'fp32', photos: 1 },
];

interface CrossCpuCase {
  input: string;
  shape: number[];
  inputName: string;
  outputs: { name: string; file: string }[];
}

async function writeCases(out: string): Promise<void> {
  const root = findRoot();
  const onnxDir = join(root, 'models', 'onnx');
  const manifest = JSON.parse(readFileSync(join(onnxDir, 'manifest.json'), 'utf8')) as ConvertedManifest;
  mkdirSync(out, { recursive: true });
  const models: Record<string, { file: string; cases: CrossCpuCase[] }> = {};
  for (const { name, precision, photos = PHOTOS.length } of MODELS) {
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
  writeFileSync(join(out, 'cases.json'), `${JSON.stringify({ photos: PHOTOS, models }, null, 1)}\n`);
  console.log(`wrote ${Object.keys(models).length} models' cases to ${out}`);
}

const folder = process.argv[2];
if (!folder) {
  console.error('usage: node dist/bench/int8-cross-cpu.js <folder>');
  process.exit(2);
}
await writeCases(resolve(folder));
