// Activation ranges for static int8 quantization: runs the fp32 ONNX graph in onnxruntime-node on calibration
// photos, with every tensor the quantizer would quantize added as a graph output, and keeps per-tensor ranges.
//
// Calibration photos are test/data photos that no accuracy bench or test scores (CALIBRATION_PHOTOS), with crops
// and a mirror of each for variety. The ranges go to models/calibration/<model>.json (committed): set-up
// quantizes from them without needing the photos.
//
//   node dist/models/calibrate.js [model ...]     (needs test/data: node scripts/setup/setup.mjs --test)
import { createHash } from 'node:crypto';
import { readFileSync, writeFileSync, mkdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import jpeg from 'jpeg-js';
import { PNG } from 'pngjs';
import * as ort from 'onnxruntime-node';
import { encodeOnnxModel, OnnxDataType, type OnnxModel } from './convert/onnx-writer.js';
import { foldIntoConvs } from './convert/fold-into-convs.js';
import { QUANTIZED_OPS, type ActivationRange } from './convert/quantize.js';
import { convertTfjsToOnnx } from './convert/tf-to-onnx.js';
import { loadTfjsGraph } from './convert/tfjs-graph.js';
import { findRoot, modelPackage, readSourceManifest } from './model-packages.js';
import { Engine } from '../src/index.js';
import type { CalibrationFile, SourceModel } from './model-manifest.js';

/** test/data photos scored by no accuracy bench or test (testkit/labels/objects.json, face and recognition sets). */
export const CALIBRATION_PHOTOS = ['darknet/scream.jpg', 'dlib/faces/bald_guys.jpg'] as const;

export type CalibrationMethod = CalibrationFile['method'];

interface Rgb {
  width: number;
  height: number;
  /** RGBA */
  data: Uint8Array;
}

function decode(bytes: Buffer, file: string): Rgb {
  if (file.endsWith('.png')) {
    const p = PNG.sync.read(bytes);
    return { width: p.width, height: p.height, data: new Uint8Array(p.data) };
  }
  const j = jpeg.decode(bytes, { useTArray: true, formatAsRGBA: true });
  return { width: j.width, height: j.height, data: j.data };
}

/** A crop [x0,y0,w,h] (fractions), maybe mirrored, letterboxed top-left into side x side with `pad`, NCHW normalized. */
function letterbox(img: Rgb, crop: [number, number, number, number], mirror: boolean, side: number, pad: number, mean: number, scale: number): Float32Array {
  const cx = Math.round(crop[0] * img.width);
  const cy = Math.round(crop[1] * img.height);
  const cw = Math.round(crop[2] * img.width);
  const ch = Math.round(crop[3] * img.height);
  const r = Math.min(side / cw, side / ch);
  const w = Math.round(cw * r);
  const h = Math.round(ch * r);
  const out = new Float32Array(3 * side * side).fill((pad - mean) * scale);
  for (let y = 0; y < h; y++) {
    const sy = cy + Math.min(ch - 1, Math.floor((y + 0.5) / r));
    for (let x = 0; x < w; x++) {
      const fx = Math.min(cw - 1, Math.floor((x + 0.5) / r));
      const sx = cx + (mirror ? cw - 1 - fx : fx);
      const o = (sy * img.width + sx) * 4;
      for (let c = 0; c < 3; c++) out[c * side * side + y * side + x] = (img.data[o + c]! - mean) * scale;
    }
  }
  return out;
}

const CROPS: [number, number, number, number][] = [
  [0, 0, 1, 1],
  [0, 0, 0.6, 0.6],
  [0.4, 0, 0.6, 0.6],
  [0, 0.4, 0.6, 0.6],
  [0.4, 0.4, 0.6, 0.6],
  [0.25, 0.25, 0.5, 0.5],
];

/** Model inputs from the calibration photos: each whole, mirrored, and in five crops (RGB order, as the models take). */
export function calibrationInputs(root: string, side: number, pad: number, mean: number, scale: number): Float32Array[] {
  const out: Float32Array[] = [];
  for (const file of CALIBRATION_PHOTOS) {
    const img = decode(readFileSync(join(root, 'test', 'data', file)), file);
    for (const crop of CROPS) out.push(letterbox(img, crop, false, side, pad, mean, scale));
    out.push(letterbox(img, CROPS[0]!, true, side, pad, mean, scale));
  }
  return out;
}

/** A square crop around `rect` (side = its longer side x cropScale, black outside the image), resized to side x side. */
function faceCrop(img: Rgb, rect: readonly number[], cropScale: number, side: number, mean: number, scale: number): Float32Array {
  const cx = (rect[0]! + rect[2]!) / 2;
  const cy = (rect[1]! + rect[3]!) / 2;
  const s = Math.max(1, Math.max(rect[2]! - rect[0]!, rect[3]! - rect[1]!) * cropScale);
  const out = new Float32Array(3 * side * side);
  for (let y = 0; y < side; y++) {
    const sy = Math.floor(cy - s / 2 + ((y + 0.5) * s) / side);
    for (let x = 0; x < side; x++) {
      const sx = Math.floor(cx - s / 2 + ((x + 0.5) * s) / side);
      const inside = sx >= 0 && sy >= 0 && sx < img.width && sy < img.height;
      for (let c = 0; c < 3; c++) out[c * side * side + y * side + x] = ((inside ? img.data[(sy * img.width + sx) * 4 + c]! : 0) - mean) * scale;
    }
  }
  return out;
}

/** Embedder inputs: the faces the default face detector finds in the calibration photos, cropped as the engine crops them. */
export async function faceCalibrationInputs(root: string, side: number, cropScale: number, mean: number, scale: number): Promise<Float32Array[]> {
  const engine = await Engine.open({ workers: 1, poseModel: null, objectDetector: null, faceEmbedder: null });
  const out: Float32Array[] = [];
  try {
    for (const file of CALIBRATION_PHOTOS) {
      const bytes = readFileSync(join(root, 'test', 'data', file));
      const img = decode(bytes, file);
      for (const face of (await engine.detectFaces(bytes)).faces) out.push(faceCrop(img, face.rect, cropScale, side, mean, scale));
    }
  } finally {
    await engine.close();
  }
  return out;
}

/** The activation tensors the quantizer may quantize: float inputs/outputs of QUANTIZED_OPS nodes, no graph outputs. */
export function calibrationTensors(model: OnnxModel): string[] {
  const inits = new Set(model.initializers.map((t) => t.name));
  const outputs = new Set(model.outputs.map((o) => o.name));
  const names = new Set<string>();
  for (const n of model.nodes) {
    if (!QUANTIZED_OPS.has(n.opType)) continue;
    const data = n.opType === 'Resize' || n.opType === 'Clip' ? n.inputs.slice(0, 1) : n.inputs;
    for (const t of [...data, ...n.outputs]) if (t && !inits.has(t) && !outputs.has(t)) names.add(t);
  }
  return [...names];
}

const SAMPLE = 1 << 16;

/** Ranges of `tensors` over `inputs`: global min/max, or the 0.01% / 99.99% percentiles of a pooled sample. */
export async function measureRanges(model: OnnxModel, tensors: string[], inputs: Float32Array[], method: CalibrationMethod): Promise<Record<string, ActivationRange>> {
  const graphInput = model.inputs[0]!;
  const probe: OnnxModel = {
    ...model,
    outputs: [...model.outputs, ...tensors.filter((t) => t !== graphInput.name).map((name) => ({ name, dataType: OnnxDataType.FLOAT }))],
  };
  const session = await ort.InferenceSession.create(encodeOnnxModel(probe), { intraOpNumThreads: 2, graphOptimizationLevel: 'disabled' });
  const min = new Map<string, number>();
  const max = new Map<string, number>();
  const samples = new Map<string, number[]>();
  try {
    for (const input of inputs) {
      const feeds = { [graphInput.name]: new ort.Tensor('float32', input, graphInput.shape!.map(Number)) };
      const result = await session.run(feeds);
      for (const t of tensors) {
        const data = t === graphInput.name ? input : (result[t]!.data as Float32Array);
        let lo = Infinity;
        let hi = -Infinity;
        for (let i = 0; i < data.length; i++) {
          const v = data[i]!;
          if (v < lo) lo = v;
          if (v > hi) hi = v;
        }
        min.set(t, Math.min(min.get(t) ?? Infinity, lo));
        max.set(t, Math.max(max.get(t) ?? -Infinity, hi));
        if (method === 'percentile') {
          const step = Math.max(1, Math.floor(data.length / SAMPLE));
          const s = samples.get(t) ?? [];
          for (let i = 0; i < data.length; i += step) s.push(data[i]!);
          samples.set(t, s);
        }
      }
    }
  } finally {
    await session.release();
  }
  const ranges: Record<string, ActivationRange> = {};
  for (const t of tensors) {
    if (method === 'minmax') {
      ranges[t] = { min: min.get(t)!, max: max.get(t)! };
      continue;
    }
    const s = Float64Array.from(samples.get(t)!).sort();
    const at = (q: number): number => s[Math.min(s.length - 1, Math.max(0, Math.round(q * (s.length - 1))))]!;
    ranges[t] = { min: at(0.0001), max: at(0.9999) };
  }
  return ranges;
}

/** Pad value and preprocessing of a source model's calibration inputs. */
function inputSpec(model: SourceModel): { side: number; pad: number; mean: number; scale: number } {
  const side = model.input.shape[1]!;
  // YOLO letterboxes with gray 114 (src/engine/limits.ts YOLO_PAD_VALUE); the pose letterbox pads with black.
  const pad = model.task === 'object-detection' ? 114 : 0;
  return { side, pad, mean: model.input.mean, scale: model.input.scale };
}

/** A source model's converted fp32 graph (onnxruntime's, square input) and its calibration inputs. */
export interface CalibrationSubject {
  /** The converted graph and its encoded bytes (whose sha256 the calibration file records). */
  converted: { model: OnnxModel; bytes: Uint8Array };
  inputs: Float32Array[];
}

/** A model of models/manifest.json converted as set-up converts it for onnxruntime (the graph its int8 file quantizes). */
export function convertForOnnxRuntime(root: string, name: string): { model: SourceModel; converted: ReturnType<typeof convertTfjsToOnnx> } {
  const manifest = readSourceManifest(root);
  const model = manifest.models[name];
  if (!model) throw new Error(`unknown model ${name}`);
  const pkg = modelPackage(root, manifest, model.package);
  const graph = loadTfjsGraph(join(pkg.dir, model.source));
  return { model, converted: convertTfjsToOnnx(graph, { input: model.input, outputs: model.outputs, target: 'ort', graphName: name }) };
}

export async function calibrationSubject(root: string, name: string): Promise<CalibrationSubject> {
  const { model, converted } = convertForOnnxRuntime(root, name);
  const spec = inputSpec(model);
  const recognition = model['recognition'] as { cropScale?: number } | undefined;
  const inputs =
    model.task === 'face-embedding'
      ? await faceCalibrationInputs(root, spec.side, recognition?.cropScale ?? 1, spec.mean, spec.scale)
      : calibrationInputs(root, spec.side, spec.pad, spec.mean, spec.scale);
  return { converted, inputs };
}

export async function calibrate(root: string, name: string, method: CalibrationMethod): Promise<CalibrationFile> {
  const { converted, inputs } = await calibrationSubject(root, name);
  // the quantizer folds Pads, batch norms and activation chains into the convolutions first: calibrate that graph
  const graphToQuantize = foldIntoConvs(converted.model);
  const ranges = await measureRanges(graphToQuantize, calibrationTensors(graphToQuantize), inputs, method);
  return {
    model: name,
    method,
    fp32Sha256: createHash('sha256').update(converted.bytes).digest('hex'),
    photos: [...CALIBRATION_PHOTOS],
    inputs: inputs.length,
    ranges,
  };
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const root = findRoot();
  const args = process.argv.slice(2);
  const method = (args.find((a) => a.startsWith('--method='))?.slice(9) ?? 'minmax') as CalibrationMethod;
  const outDir = args.find((a) => a.startsWith('--out='))?.slice(6) ?? join(root, 'models', 'calibration');
  mkdirSync(outDir, { recursive: true });
  for (const name of args.filter((a) => !a.startsWith('--'))) {
    const started = performance.now();
    const file = await calibrate(root, name, method);
    writeFileSync(join(outDir, `${name}.json`), `${JSON.stringify(file, null, 1)}\n`);
    console.log(`calibrate: ${name} (${method}, ${file.inputs} inputs, ${Object.keys(file.ranges).length} tensors) in ${(performance.now() - started).toFixed(0)} ms`);
  }
}
