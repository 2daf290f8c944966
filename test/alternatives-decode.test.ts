// The JS decoding of the "edgecv vs the Node alternatives" bench (testkit/alternative-decode.ts) against the
// addon's C++ decoding: both get the very same pixels (a real photo scaled so that its longer side is the model
// input, so the addon's letterbox resize is a copy), onnxruntime-node runs the same .ort.onnx file, and the
// boxes must agree. Without this the bench could compare edgecv against an alternative that does less work.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import * as ort from 'onnxruntime-node';
import { PNG } from 'pngjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  agreement,
  decodeFaces,
  decodeMoveNet,
  decodeYolo,
  letterbox,
  nms,
  toTensor,
  type Box,
  type Letterbox,
} from '../testkit/alternative-decode.js';
import { resizeNearestRgb } from '../testkit/photo-tensor.js';
import { decode } from '../testkit/vga-photos.js';
import type { ConvertedManifest } from '../models/model-manifest.js';
import { COCO_CLASSES, DETECT_DEFAULTS, Engine, OBJECT_DEFAULTS, POSE_DEFAULTS } from '../src/index.js';
import { DATA_DIR, ROOT } from './helpers.js';

const manifest = JSON.parse(readFileSync(join(ROOT, 'models', 'onnx', 'manifest.json'), 'utf8')) as ConvertedManifest;

/** test/data/<file> scaled (nearest) to width x height: the PNG for the engine, packed RGB for the JS side. */
function scaled(file: string, width: number, height: number): { png: Buffer; rgb: Uint8Array } {
  const rgb = resizeNearestRgb(decode(join(DATA_DIR, file)), width, height);
  const png = new PNG({ width, height });
  for (let i = 0; i < width * height; i++) {
    png.data.set(rgb.subarray(i * 3, i * 3 + 3), i * 4);
    png.data[i * 4 + 3] = 255;
  }
  return { png: PNG.sync.write(png), rgb };
}

/** Runs the model's .ort.onnx on the letterboxed pixels; outputs in manifest order. */
async function run(model: string, rgb: Uint8Array, box: Letterbox, pad: number): Promise<Float32Array[]> {
  const e = manifest.models[model]!;
  const session = await ort.InferenceSession.create(join(ROOT, 'models', 'onnx', e.ortFile), { intraOpNumThreads: 1 });
  try {
    const input = toTensor(rgb, box, { mean: e.input.mean, scale: e.input.scale, pad }, 'NCHW');
    const out = await session.run({ [e.input.name]: new ort.Tensor('float32', input, e.input.shape) });
    return e.outputs.map((o) => out[o.name]!.data as Float32Array);
  } finally {
    await session.release();
  }
}

function expectSameBoxes(edgecv: Box[], js: Box[], minIou: number): void {
  expect(edgecv.length).toBeGreaterThan(0);
  expect(js.map((b) => b.label).sort()).toEqual(edgecv.map((b) => b.label).sort());
  const a = agreement(edgecv, js);
  expect(a.matched).toBe(edgecv.length);
  expect(a.meanBestIou).toBeGreaterThanOrEqual(minIou);
}

describe('bench/alternatives JS decoding agrees with the addon', () => {
  let engine: Engine;
  beforeAll(async () => {
    // fp32: the JS decoders below run the fp32 files in onnxruntime-node (int8 is checked in int8-models.test.ts)
    engine = await Engine.open({
      workers: 1,
      threadsPerWorker: 1,
      precision: 'fp32',
      faceDetector: 'facemesh-detection-full',
      poseModel: 'movenet-multipose',
      objectDetector: 'yolov5s',
      faceEmbedder: null,
      warmUp: false, // nothing here is timed
    });
  });
  afterAll(async () => {
    await engine.close();
  });

  it('letterbox puts a 640x480 image in the middle of 640x640', () => {
    expect(letterbox(640, 480, 640)).toEqual({ size: 640, scale: 1, padX: 0, padY: 80, width: 640, height: 480 });
    expect(letterbox(500, 1000, 256)).toEqual({ size: 256, scale: 0.256, padX: 64, padY: 0, width: 128, height: 256 });
  });

  it('nms keeps the best of overlapping boxes per label, and boxes of other labels', () => {
    const boxes: Box[] = [
      { rect: [0, 0, 10, 10], score: 0.5, label: 'dog' },
      { rect: [1, 1, 11, 11], score: 0.9, label: 'dog' },
      { rect: [1, 1, 11, 11], score: 0.8, label: 'cat' },
      { rect: [50, 50, 60, 60], score: 0.4, label: 'dog' },
    ];
    expect(nms(boxes, 0.45).map((b) => [b.label, b.score])).toEqual([
      ['dog', 0.9],
      ['cat', 0.8],
      ['dog', 0.4],
    ]);
    expect(nms(boxes, 0.45, Infinity, false).map((b) => b.score)).toEqual([0.9, 0.4]);
  });

  it('yolov5s: the same objects in darknet/dog.jpg (640x480, letterboxed with 114)', async () => {
    const { png, rgb } = scaled('darknet/dog.jpg', 640, 480);
    const box = letterbox(640, 480, 640);
    const yolo = manifest.models['yolov5s']!['yolo'] as { strides: number[]; anchors: number[][] };
    const js = decodeYolo(await run('yolov5s', rgb, box, 114), yolo.strides, yolo.anchors, COCO_CLASSES, box, {
      scoreThreshold: OBJECT_DEFAULTS.scoreThreshold.yolo,
      maxObjects: OBJECT_DEFAULTS.maxObjects,
    });
    // edgecv's onnxruntime file runs a 640x480 photo on 640x480 (open-input-size.test.ts); the square letterbox the
    // JS side does is what its OpenCV file runs, same fp32 weights
    const square = await Engine.open({
      workers: 1,
      threadsPerWorker: 1,
      precision: 'fp32',
      runtime: 'opencv',
      objectDetector: 'yolov5s',
      poseModel: null,
      personDetector: null,
      faceEmbedder: null,
      warmUp: false,
    });
    const edgecv = (await square.detectObjects(png).finally(() => square.close())).objects.map((o) => ({
      rect: o.rect,
      score: o.score,
      label: o.className,
    }));
    expect(js.map((b) => b.label)).toContain('dog');
    expectSameBoxes(edgecv, js, 0.98);
  });

  it('movenet-multipose: the same person in darknet/person.jpg (256x170)', async () => {
    const { png, rgb } = scaled('darknet/person.jpg', 256, 170);
    const box = letterbox(256, 170, 256);
    const js = decodeMoveNet(
      ((o) => ({ centre: o[0]!, boxScale: o[1]!, boxOffset: o[2]!, heatmap: o[3]!, regress: o[4]!, offset: o[5]! }))(
        await run('movenet-multipose', rgb, box, 0),
      ),
      box,
      {
        scoreThreshold: POSE_DEFAULTS.scoreThreshold,
        maxPoses: POSE_DEFAULTS.maxPoses,
      },
    );
    const edgecv = (await engine.detectPoses(png, { mode: 'whole' })).poses;
    expectSameBoxes(
      edgecv.map((p) => ({ rect: p.box, score: p.score, label: 'person' })),
      js,
      0.98,
    );
    // The keypoints too: the nose of the best person within a pixel.
    const nose = edgecv[0]!.keypoints[0]!;
    expect(Math.hypot(js[0]!.keypoints[0]![0] - nose.x, js[0]!.keypoints[0]![1] - nose.y)).toBeLessThan(1);
  });

  it('facemesh-detection-full: the same faces in a dlib group photo (192x144)', async () => {
    const { png, rgb } = scaled('dlib/faces/2008_002506.jpg', 192, 144);
    const box = letterbox(192, 144, 192);
    const e = manifest.models['facemesh-detection-full']!;
    const [scores, boxes] = await run('facemesh-detection-full', rgb, box, 0);
    const layers = (e['detector'] as { anchorLayers: { stride: number; anchors: number }[] }).anchorLayers;
    const js = decodeFaces(scores!, boxes!, layers, box, {
      scoreThreshold: DETECT_DEFAULTS.scoreThreshold,
      iouThreshold: DETECT_DEFAULTS.iouThreshold,
    });
    const edgecv = (await engine.detectFaces(png, { tiles: 0 })).faces.map((f) => ({ rect: f.rect, score: f.score, label: 'face' }));
    // The addon merges overlapping candidates by weighted NMS and rounds to whole pixels; JS keeps the best one.
    expectSameBoxes(edgecv, js, 0.9);
  });
});
