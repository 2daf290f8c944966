// Which object detector the engine loads: a converted model by name (manifest), or an operator's own
// YOLO export by path (`--object-model /path/model.onnx`, YOLOv5 layout N x (5 + classes)) with its labels.
import fs from 'node:fs/promises';
import path from 'node:path';
import { EngineError } from './errors.js';
import { COCO_CLASSES } from './objects.js';

/** Built-in object models: centernet at its exported 512 px and smaller, YOLOv5s at 640 px and smaller. */
export const OBJECT_DETECTOR_MODELS = [
  'centernet-320',
  'centernet-384',
  'centernet-448',
  'centernet',
  'yolov5s-320',
  'yolov5s-416',
  'yolov5s-512',
  'yolov5s',
] as const;
export type ObjectDetectorModel = (typeof OBJECT_DETECTOR_MODELS)[number];

/** What /server/capabilities/ and the start-up log say about the object model. */
export interface ObjectModelInfo {
  /** Model name, or the file name of an operator's own model. */
  name: string;
  kind: 'centernet' | 'yolo';
  inputSize: number;
  /** Licence of the weights, as far as edgecv knows it. */
  licence: string;
  classes: number;
}

/** True when `value` names a file rather than a built-in model. */
export function isModelPath(value: string): boolean {
  return value.endsWith('.onnx') || value.includes('/') || value.includes(path.sep);
}

function invalid(message: string, cause?: unknown): EngineError {
  return new EngineError('INVALID_ARGUMENT', message, { cause });
}

/**
 * Reads a labels file: one class name per line, in the model's class order; blank lines and lines starting
 * with '#' are skipped. A missing, empty or binary file is a clear INVALID_ARGUMENT.
 */
export async function readLabels(file: string): Promise<string[]> {
  let text: string;
  try {
    text = await fs.readFile(file, 'utf8');
  } catch (e) {
    throw invalid(`object labels file ${file} cannot be read (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})`, e);
  }
  if (text.includes('\0')) throw invalid(`object labels file ${file} is not a text file (one class name per line)`);
  const labels = text
    .split(/\r?\n/)
    .map((l) => l.trim())
    .filter((l) => l.length > 0 && !l.startsWith('#'));
  if (labels.length === 0) throw invalid(`object labels file ${file} has no labels (one class name per line)`);
  const seen = new Set<string>();
  for (const l of labels) {
    if (seen.has(l)) throw invalid(`object labels file ${file}: label "${l}" appears twice`);
    seen.add(l);
  }
  return labels;
}

/** Checks an operator's model file before native code loads it, so a typo gets a clear message. */
export async function checkModelFile(file: string): Promise<void> {
  let handle: fs.FileHandle;
  try {
    handle = await fs.open(file, 'r');
  } catch (e) {
    throw invalid(`object model file ${file} cannot be read (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})`, e);
  }
  try {
    const { size } = await handle.stat();
    const head = Buffer.alloc(1);
    await handle.read(head, 0, 1, 0);
    // An ONNX file is a protobuf ModelProto; its first field is ir_version (field 1, varint): byte 0x08.
    if (size < 16 || head[0] !== 0x08) throw invalid(`object model file ${file} is not an ONNX model`);
  } finally {
    await handle.close();
  }
}

/** Labels for a model's classes: the labels file when given, else COCO's 80. */
export async function objectLabels(labelsFile: string | undefined): Promise<readonly string[]> {
  return labelsFile === undefined ? COCO_CLASSES : readLabels(labelsFile);
}
