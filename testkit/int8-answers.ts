// The int8 YOLOs' answers on labelled photos as another CPU class gave them (test/int8-cross-cpu.answers.json,
// written by `node dist/tools/int8-cpu-spread.js --arm64 --record`), and what both sides need to compute them the
// same way: the int8 file and input of a model, and a photo as that input, made in plain JS.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { ConvertedManifest } from '../models/model-manifest.js';
import { resizeNearestRgb, rgbTensor } from './photo-tensor.js';
import { decode } from './vga-photos.js';
import type { Box } from './yolo-decode.js';

export const ANSWERS_FILE = join('test', 'int8-cross-cpu.answers.json');
export const RECORD_COMMAND = 'node dist/tools/int8-cpu-spread.js --arm64 --record';
/** yolov5s' input size is open: it runs at the size the engine letterboxes a square photo into. */
const OPEN_SIDE = 640;

export interface RecordedAnswers {
  cpu: string;
  command: string;
  photos: string[];
  models: Record<string, { sha256: string; threshold: number; answers: Box[][] }>;
}

export interface Int8Input {
  file: string;
  sha256: string;
  dims: number[];
  mean: number;
  scale: number;
}

export function int8Input(manifest: ConvertedManifest, name: string): Int8Input {
  const entry = manifest.models[name]!;
  const dims = entry.input.shape.map((d) => (typeof d === 'number' && d > 0 ? d : OPEN_SIDE));
  return { file: entry.int8!.ortFile, sha256: entry.int8!.sha256, dims, mean: entry.input.mean, scale: entry.input.scale };
}

/** A photo of test/data stretched to the input (nearest neighbour), (pixel - mean) * scale, NCHW. */
export function photoInput(root: string, file: string, input: Int8Input): Float32Array {
  const [, , height, width] = input.dims as [number, number, number, number];
  return rgbTensor(resizeNearestRgb(decode(join(root, 'test', 'data', file)), width, height), width, height, input.mean, input.scale).nchw;
}

export function readRecordedAnswers(root: string): RecordedAnswers {
  return JSON.parse(readFileSync(join(root, ANSWERS_FILE), 'utf8')) as RecordedAnswers;
}
