// The YOLO object detector: the C++ decode (native/models/yolo_detector.cc, cut at the head convolutions) against
// the full original TF.js graph ([1,25200,85], decoded in the graph) on the same real pixels; an operator's
// own model (the converted full-head export) through --object-model; and the errors for bad files.
import { readFileSync, writeFileSync } from 'node:fs';
import https from 'node:https';
import { join } from 'node:path';
import { PNG } from 'pngjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TfjsReference, useTfjsBackend } from '../testkit/tfjs-reference.js';
import { YOLO_NMS_IOU, YOLO_PAD_VALUE } from '../src/engine/limits.js';
import { loadNative, type NativeYoloDetectorSpec } from '../src/engine/native.js';
import { findOnnxRuntimeLibrary } from '../src/engine/onnxruntime-library.js';
import { Engine, type DetectedObject } from '../src/index.js';
import { encodeOnnxModel, OnnxDataType, type OnnxTensor } from '../models/convert/onnx-writer.js';
import { HAS_INT8_DOT_PRODUCT } from '../testkit/cpu-int8.js';
import { photoTensor } from '../testkit/photo-tensor.js';
import { httpsRequest, photo, ROOT, useTempDirs } from './helpers.js';
import { startServerProcess } from '../testkit/server-process.js';
import { iou } from '../testkit/boxes.js';

const SIZE = 640;
const THRESHOLD = 0.25;
const NMS_IOU = 0.45;
const MODEL_DIR = join(ROOT, 'models', 'onnx');
const FULL_HEAD = join(MODEL_DIR, 'yolov5s-full.opencv.onnx');

/**
 * A 640x640 mosaic of four real photos (person, motorcycle, cat, cups) as RGB 0..255: at the model's own
 * size the engine's letterbox is the identity, so both engines see the very same pixels.
 */
function mosaic(): { png: Buffer; nhwc: Float32Array } {
  const half = SIZE / 2;
  const tiles = ['astronaut.png', 'motorcycle_left.png', 'chelsea.png', 'coffee.png'].map(
    (f) => photoTensor(photo(`skimage/${f}`), half, half, 0, 1).nhwc,
  );
  const image = new PNG({ width: SIZE, height: SIZE });
  const nhwc = new Float32Array(SIZE * SIZE * 3);
  for (let y = 0; y < SIZE; y++) {
    for (let x = 0; x < SIZE; x++) {
      const tile = tiles[(y >= half ? 2 : 0) + (x >= half ? 1 : 0)]!;
      const from = ((y % half) * half + (x % half)) * 3;
      for (let c = 0; c < 3; c++) {
        const v = tile[from + c]!;
        image.data[(y * SIZE + x) * 4 + c] = v;
        nhwc[(y * SIZE + x) * 3 + c] = v / 255;
      }
      image.data[(y * SIZE + x) * 4 + 3] = 255;
    }
  }
  return { png: PNG.sync.write(image), nhwc };
}

interface RefBox {
  rect: [number, number, number, number];
  classId: number;
  score: number;
}

/** YOLOv5's own post-processing of [N,85] rows (boxes in 0..1 of the input): best class, class-aware NMS. */
function decodeReference(rows: Float32Array, threshold: number): RefBox[] {
  const candidates: RefBox[] = [];
  for (let k = 0; k < rows.length / 85; k++) {
    const r = rows.subarray(k * 85, k * 85 + 85);
    let best = 0;
    for (let c = 1; c < 80; c++) if (r[5 + c]! > r[5 + best]!) best = c;
    const score = r[4]! * r[5 + best]!;
    if (score < threshold) continue;
    const [cx, cy, w, h] = [r[0]! * SIZE, r[1]! * SIZE, r[2]! * SIZE, r[3]! * SIZE];
    candidates.push({ rect: [cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2], classId: best, score });
  }
  candidates.sort((a, b) => b.score - a.score);
  const kept: RefBox[] = [];
  for (const c of candidates) {
    if (!kept.some((k) => k.classId === c.classId && iou(k.rect, c.rect) > NMS_IOU)) kept.push(c);
  }
  return kept;
}

function expectSameBoxes(actual: DetectedObject[], expected: RefBox[], pixels: number): void {
  expect(actual.map((o) => o.classId)).toEqual(expected.map((o) => o.classId));
  actual.forEach((o, i) => {
    const e = expected[i]!;
    expect(Math.abs(o.score - e.score), `score of ${o.className}`).toBeLessThan(1e-3);
    o.rect.forEach((v, k) => expect(Math.abs(v - e.rect[k]!), `${o.className} rect[${k}]`).toBeLessThan(pixels));
  });
}

describe('YOLOv5s object detector', () => {
  const input = mosaic();
  let reference: RefBox[];
  let engine: Engine;
  beforeAll(async () => {
    await useTfjsBackend('cpu');
    const graph = await TfjsReference.cached('dist/src/model_s/model.json', 'input_1', ['Identity'], undefined, 'yolov5');
    const [rows] = await graph.run(input.nhwc, [1, SIZE, SIZE, 3]);
    graph.dispose();
    reference = decodeReference(rows!, THRESHOLD);
    // fp32: the same weights as the TF.js graph (the int8 file is checked against fp32 in int8-models.test.ts)
    engine = await Engine.open({
      workers: 1,
      threadsPerWorker: 2,
      precision: 'fp32',
      poseModel: null,
      faceEmbedder: null,
      objectDetector: 'yolov5s',
    });
  });
  afterAll(async () => {
    await engine.close();
  });

  it('the C++ decode of the head convolutions matches the TF.js graph decoded the YOLOv5 way on the same pixels', async () => {
    // Person, motorcycle and cup (the cat at 320 px is not found), so the comparison is not between empty lists.
    const names = new Set(reference.map((r) => r.classId));
    for (const id of [0, 3, 41]) expect(names.has(id), `class ${id} in the reference`).toBe(true);
    expect(reference.length).toBeGreaterThanOrEqual(5);
    const result = await engine.detectObjects(input.png, { scoreThreshold: THRESHOLD });
    expect(result.width).toBe(SIZE);
    expectSameBoxes(result.objects, reference, 0.05);
    console.log(`yolo mosaic: ${result.objects.map((o) => `${o.className} ${o.score.toFixed(2)}`).join(', ')}`);
  });

  it('finds the dog, bicycle and truck in darknet dog.jpg (letterboxed) with the same answer shape as centernet', async () => {
    const result = await engine.detectObjects(photo('darknet/dog.jpg'), { scoreThreshold: THRESHOLD });
    expect(result.format).toBe('jpeg');
    const top = new Map<string, DetectedObject>();
    for (const o of result.objects) if (!top.has(o.className)) top.set(o.className, o);
    expect(result.objects[0]!.className).toBe('dog');
    expect(result.objects[0]!.score).toBeGreaterThan(0.8);
    for (const name of ['bicycle', 'truck']) expect(top.has(name), name).toBe(true);
    expect(result.objects.some((o) => o.className === 'cat')).toBe(false);
    // The dog sits in the lower left of the 768x576 photo.
    const [l, t, r, b] = top.get('dog')!.rect;
    expect(l).toBeLessThan(200);
    expect(t).toBeGreaterThan(150);
    expect(r).toBeLessThan(400);
    expect(b).toBeGreaterThan(450);
    expect(Object.keys(result.objects[0]!).sort()).toEqual(['classId', 'className', 'rect', 'score']);
    expect(engine.objectModel).toMatchObject({ name: 'yolov5s', kind: 'yolo', inputSize: 640, classes: 80 });
    expect(engine.objectModel!.licence).toContain('GPL-3.0');
  });
});

/** A float32 initializer. */
function floats(name: string, dims: number[], values: number[]): OnnxTensor {
  return { name, dataType: OnnxDataType.FLOAT, dims, raw: new Uint8Array(Float32Array.from(values).buffer) };
}

/**
 * A made-up own export of the YOLOv5 layout, input [1,3,32,32], output [1,512,6] (one class): each row is
 * `base + pixels * slope`, with the input's 3072 values (0..1) taken six at a time. On the warm-up's zero input
 * every row is (30, 30, 4, 4, 0, 0): centres far beyond 2, so the file writes input pixels. On a white image
 * every row is a sure object at (1.5, 1.5), 1 x 1: an image whose boxes all sit within 2 pixels of the corner.
 */
function pixelBoxModel(): Uint8Array {
  return encodeOnnxModel({
    producer: 'edgecv-test',
    opset: 13,
    graphName: 'pixel-boxes',
    nodes: [
      { name: 'rows', opType: 'Reshape', inputs: ['images', 'shape'], outputs: ['rows'], attributes: {} },
      { name: 'scaled', opType: 'Mul', inputs: ['rows', 'slope'], outputs: ['scaled'], attributes: {} },
      { name: 'output', opType: 'Add', inputs: ['scaled', 'base'], outputs: ['output'], attributes: {} },
    ],
    initializers: [
      { name: 'shape', dataType: OnnxDataType.INT64, dims: [3], raw: new Uint8Array(BigInt64Array.from([1n, 512n, 6n]).buffer) },
      floats('slope', [6], [-28.5, -28.5, -3, -3, 1, 1]),
      floats('base', [6], [30, 30, 4, 4, 0, 0]),
    ],
    inputs: [{ name: 'images', dataType: OnnxDataType.FLOAT, shape: [1, 3, 32, 32] }],
    outputs: [{ name: 'output', dataType: OnnxDataType.FLOAT, shape: [1, 512, 6] }],
  });
}

function whitePng(side: number): Buffer {
  const image = new PNG({ width: side, height: side });
  image.data.fill(255);
  return PNG.sync.write(image);
}

describe('an own YOLO model (--object-model /path/model.onnx)', () => {
  const tempDir = useTempDirs();

  it('reads whether the file gives pixel or 0..1 boxes once, at load, not from each image', async () => {
    const dir = tempDir();
    const model = join(dir, 'pixel-boxes.onnx');
    writeFileSync(model, pixelBoxModel());
    const labels = join(dir, 'labels.txt');
    writeFileSync(labels, 'dot\n');
    const engine = await Engine.open({
      workers: 1,
      poseModel: null,
      faceEmbedder: null,
      objectDetector: model,
      objectLabels: labels,
      objectInputSize: 32,
    });
    try {
      const { objects } = await engine.detectObjects(whitePng(32));
      // Input pixels, as the warm-up showed: (1.5, 1.5) 1 x 1 is [1, 1, 2, 2], not 32 times that.
      expect(objects).toHaveLength(1);
      expect(objects[0]).toMatchObject({ className: 'dot', score: 1 });
      objects[0]!.rect.forEach((v, k) => expect(Math.abs(v - [1, 1, 2, 2][k]!), `rect[${k}]`).toBeLessThan(0.01));
    } finally {
      await engine.close();
    }
  });

  it('suppresses overlapping boxes by the IoU its spec gives (YOLO_NMS_IOU from the host)', async () => {
    const dir = tempDir();
    const model = join(dir, 'pixel-boxes.onnx');
    writeFileSync(model, pixelBoxModel());
    const library = findOnnxRuntimeLibrary();
    const spec = (iouThreshold: number): NativeYoloDetectorSpec => ({
      kind: 'yolo',
      path: model,
      ortPath: model,
      runtime: 'auto',
      inputSize: 32,
      meanValue: 0,
      scale: 1 / 255,
      swapRB: true,
      layout: 'decoded',
      outputs: [],
      classes: 1,
      padValue: YOLO_PAD_VALUE,
      openInputSize: false,
      iouThreshold,
    });
    const found = async (iouThreshold: number) => {
      const native = loadNative().createEngine({
        workers: 1,
        threadsPerWorker: 1,
        backend: 'cpu',
        queueLimit: 1,
        idleCores: 'keep',
        ...('path' in library ? { onnxRuntimeLibrary: library.path } : {}),
        objectDetector: spec(iouThreshold),
      });
      try {
        return (await native.detectObjects(whitePng(32), { scoreThreshold: 0.5, maxObjects: 50, onPersonDetector: false })).objects.length;
      } finally {
        await native.close();
      }
    };
    // 512 rows, one box: each suppresses the next at any IoU threshold below 1, none at 1.
    expect(await found(YOLO_NMS_IOU)).toBe(1);
    expect(await found(1)).toBe(50);
  });

  it('runs the full-head export (YOLOv5 layout [1,N,85], boxes in 0..1) and agrees with the built-in yolov5s', async () => {
    const dir = tempDir();
    const labels = join(dir, 'labels.txt');
    // Own labels: the engine must name classes from the file, not from COCO.
    writeFileSync(labels, Array.from({ length: 80 }, (_, i) => `thing-${i}`).join('\n') + '\n');
    const own = await Engine.open({ workers: 1, poseModel: null, faceEmbedder: null, objectDetector: FULL_HEAD, objectLabels: labels });
    // the built-in at fp32: the own export is the same fp32 network (an own model always runs fp32); on OpenCV,
    // whose file is square like the export (the onnxruntime file runs a photo on its own aspect: open-input-size)
    const builtin = await Engine.open({
      workers: 1,
      precision: 'fp32',
      runtime: 'opencv',
      poseModel: null,
      faceEmbedder: null,
      objectDetector: 'yolov5s',
    });
    try {
      expect(own.objectModel).toMatchObject({ name: 'yolov5s-full.opencv.onnx', kind: 'yolo', inputSize: 640, classes: 80 });
      for (const file of ['darknet/dog.jpg', 'darknet/horses.jpg']) {
        const a = await own.detectObjects(photo(file), { scoreThreshold: THRESHOLD });
        const b = await builtin.detectObjects(photo(file), { scoreThreshold: THRESHOLD });
        expect(a.objects.length, file).toBeGreaterThan(2);
        expectSameBoxes(
          a.objects,
          b.objects.map((o) => ({ rect: o.rect, classId: o.classId, score: o.score })),
          0.05,
        );
        expect(a.objects.map((o) => o.className)).toEqual(b.objects.map((o) => `thing-${o.classId}`));
      }
    } finally {
      await own.close();
      await builtin.close();
    }
  });

  it('rejects a missing file, a file that is not ONNX, a model of another layout and labels that do not fit', async () => {
    const dir = tempDir();
    const open = (objectDetector: string, objectLabels?: string) =>
      Engine.open({ workers: 1, poseModel: null, faceEmbedder: null, objectDetector, ...(objectLabels ? { objectLabels } : {}) });
    await expect(open(join(dir, 'nope.onnx'))).rejects.toThrow(/object model file .*nope\.onnx cannot be read \(ENOENT\)/);
    const text = join(dir, 'text.onnx');
    writeFileSync(text, 'this is not a model, just some text long enough\n');
    await expect(open(text)).rejects.toThrow(/text\.onnx is not an ONNX model/);
    // An int8 QDQ file cut short: the engine reads it for int8 SiLUs to fuse (native/ops/int8_graph_fusion.h)
    // before onnxruntime loads it, and must then fail as plainly as onnxruntime does.
    const int8 = readFileSync(join(MODEL_DIR, 'yolov5s.int8.ort.onnx'));
    const cut = join(dir, 'cut.onnx');
    writeFileSync(cut, int8.subarray(0, Math.floor(int8.length * 0.6)));
    await expect(open(cut)).rejects.toThrow(/cut\.onnx: onnxruntime could not load it: .*Protobuf parsing failed/);
    // A real (standard) ONNX file, but centernet's two outputs are not the YOLOv5 layout.
    await expect(open(join(MODEL_DIR, 'centernet-320.ort.onnx'))).rejects.toThrow(/has 2 outputs, expected one \[1,N,5\+classes\]/);
    const three = join(dir, 'three.txt');
    writeFileSync(three, 'cat\ndog\n\n# comment\nbird\n');
    await expect(open(FULL_HEAD, three)).rejects.toThrow(/output is \[1,25200,85\] \(80 classes\), expected \[1,N,8\] for 3 labels/);
    await expect(open(FULL_HEAD, join(dir, 'missing.txt'))).rejects.toThrow(/labels file .*missing\.txt cannot be read/);
    const empty = join(dir, 'empty.txt');
    writeFileSync(empty, '\n# nothing\n');
    await expect(open(FULL_HEAD, empty)).rejects.toThrow(/has no labels/);
    await expect(Engine.open({ objectDetector: 'yolov5s', objectLabels: three })).rejects.toThrow(/only to an own model/);
    await expect(Engine.open({ objectDetector: 'yolov9' })).rejects.toThrow(/objectDetector must be null or one of .*yolov5s/);
  });
});

describe('edgecv serve --object-model', () => {
  const tempDir = useTempDirs();

  it('names the model, its input size and licence in the start-up log and /server/capabilities/, and answers /object/detect/ with it', async () => {
    const server = await startServerProcess(['--data-dir', tempDir(), '--workers', '1', '--object-model', 'yolov5s-320']);
    try {
      expect(server.output()).toMatch(/object model yolov5s-320 \(yolo, 320 px, 80 classes; weights licence: GPL-3\.0/);
      const agent = new https.Agent({ rejectUnauthorized: false });
      const caps = JSON.parse((await httpsRequest(`${server.url}server/capabilities/`, { agent })).text) as Record<string, unknown>;
      expect(caps['object_model']).toMatchObject({ name: 'yolov5s-320', kind: 'yolo', input_size: 320, classes: 80 });
      const res = await httpsRequest(`${server.url}object/detect/`, {
        agent,
        method: 'POST',
        headers: { 'content-type': 'image/jpeg' },
        body: photo('darknet/dog.jpg'),
      });
      const body = JSON.parse(res.text) as { success: string; objects: { class: string; confidence: string }[] };
      expect(res.status).toBe(200);
      expect(body.objects[0]).toMatchObject({ class: 'dog' });
      // printed just after the listening line, so here by now: on a CPU without VNNI, int8 models with 8-bit weights
      // run onnxruntime's exact kernels, and the log says so
      expect(server.output()).toMatch(/edgecv: models: .*objectDetector on onnxruntime \(int8[,)]/); // ', fused: ...' on AVX-512 VBMI CPUs
      expect(/this CPU has no VNNI: int8 models with 8-bit weights run onnxruntime's exact int8 kernels/.test(server.output())).toBe(
        !HAS_INT8_DOT_PRODUCT,
      );
    } finally {
      await server.stop();
    }
  });

  it('exits with a clear message when the own model file is missing', async () => {
    const dir = tempDir();
    await expect(startServerProcess(['--data-dir', dir, '--object-model', join(dir, 'missing.onnx')])).rejects.toThrow(
      /exited 1 before listening:[\s\S]*cannot start the engine: object model file .*missing\.onnx cannot be read \(ENOENT\)/,
    );
  });
});
