// YOLO on its image's own aspect (models/convert/open-input-size.ts): the onnxruntime files of yolov5s (the
// objects model) leave the input height and width open, so a 640x480 photo runs on 640x480 instead of a padded
// 640x640. yolov5s-320 (the pose route's person detector, small images' objects) stays square: on the photo's
// aspect it added 4 stray poses at int8 and 2 at fp32 on the labelled pose set (docs/performance.md). Checked with
// onnxruntime-node on the converted files (the same outputs at the square, the right grids at another size) and
// with the real addon (boxes on a rectangle where the square OpenCV file puts them).
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import * as ort from 'onnxruntime-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Engine, type DetectedObject } from '../src/index.js';
import { openInputSize } from '../models/convert/open-input-size.js';
import { OnnxDataType, type OnnxModel } from '../models/convert/onnx-writer.js';
import { iou } from '../testkit/boxes.js';
import { loadObjectLabels, scorePhoto, sumScores } from '../testkit/object-labels.js';
import { VGA_SCENE_PHOTO, vgaJpeg } from '../testkit/vga-photos.js';
import { photo, ROOT } from './helpers.js';

const MODELS = join(ROOT, 'models', 'onnx');
const converted = JSON.parse(readFileSync(join(MODELS, 'manifest.json'), 'utf8')) as {
  models: Record<string, { ortFile: string; openInputSize?: boolean; int8?: { ortFile: string } }>;
};

/** A deterministic input of that size (values in 0..1). */
function input(h: number, w: number): ort.Tensor {
  const data = new Float32Array(3 * h * w);
  for (let i = 0; i < data.length; i++) data[i] = ((i * 2654435761) % 1000) / 1000;
  return new ort.Tensor('float32', data, [1, 3, h, w]);
}

let rect: Engine; // onnxruntime: the open file, 640x480
let square: Engine; // OpenCV: the square file, same fp32 weights

// Before onnxruntime-node's own sessions: the addon's onnxruntime environment (global thread pools) must be the
// first one made in the process, as in the server, where onnxruntime-node is never loaded.
beforeAll(async () => {
  // No warm-up: nothing here is timed.
  const only = {
    workers: 1,
    precision: 'fp32',
    objectDetector: 'yolov5s',
    personDetector: null,
    poseModel: null,
    faceEmbedder: null,
    warmUp: false,
  } as const;
  rect = await Engine.open({ ...only, runtime: 'onnxruntime' });
  square = await Engine.open({ ...only, runtime: 'opencv' });
}, 120_000);

afterAll(async () => {
  await Promise.all([rect?.close(), square?.close()]);
});

describe('YOLO files with an open input size', () => {
  it('refuses a graph with an operation bound to the converted size', () => {
    const model: OnnxModel = {
      producer: 'test',
      opset: 11,
      graphName: 'g',
      nodes: [{ name: 'r', opType: 'Reshape', inputs: ['x', 'shape'], outputs: ['r'], attributes: {} }],
      initializers: [],
      inputs: [{ name: 'x', dataType: OnnxDataType.FLOAT, shape: [1, 3, 32, 32] }],
      outputs: [{ name: 'r', dataType: OnnxDataType.FLOAT, shape: [1, 3072] }],
    };
    expect(() => openInputSize(model, new Map())).toThrow(/r \(Reshape\) may depend on the input size/);
    const relu = {
      ...model,
      nodes: [{ ...model.nodes[0]!, opType: 'Relu', inputs: ['x'] }],
      outputs: [{ name: 'r', dataType: OnnxDataType.FLOAT, shape: [1, 32, 32, 3] }],
    };
    expect(openInputSize(relu, new Map()).inputs[0]!.shape).toEqual([1, 3, 'height', 'width']);
  });

  it('yolov5s-320 stays square', () => {
    expect(converted.models['yolov5s-320']!.openInputSize).toBeUndefined();
  });

  for (const name of ['yolov5s']) {
    it(`${name}: the int8 and fp32 onnxruntime files run any multiple of 32, with grids of input / stride`, async () => {
      const entry = converted.models[name]!;
      expect(entry.openInputSize).toBe(true);
      for (const file of [entry.ortFile, entry.int8!.ortFile]) {
        const session = await ort.InferenceSession.create(join(MODELS, file), { intraOpNumThreads: 2 });
        try {
          const feed = (h: number, w: number) => ({ [session.inputNames[0]!]: input(h, w) });
          const square = await session.run(feed(320, 320));
          expect(session.outputNames.map((o) => square[o]!.dims.slice(1, 3))).toEqual([
            [40, 40],
            [20, 20],
            [10, 10],
          ]);
          const wide = await session.run(feed(192, 320));
          expect(session.outputNames.map((o) => wide[o]!.dims.slice(1, 3))).toEqual([
            [24, 40],
            [12, 20],
            [6, 10],
          ]);
        } finally {
          await session.release();
        }
      }
    });
  }
});

describe('objects on a rectangle', () => {
  it('finds the same objects in the same places as the square file, on a 4:3 photo and on a tall one', async () => {
    for (const bytes of [vgaJpeg(ROOT, VGA_SCENE_PHOTO), photo('darknet/person.jpg'), photo('dlib/faces/2008_001009.jpg')]) {
      const a = (await rect.detectObjects(bytes)).objects;
      const b = (await square.detectObjects(bytes)).objects;
      expect(a.length).toBeGreaterThan(0);
      // each confident square box has a rectangle box of its class over it, and the other way round
      const covered = (from: DetectedObject[], by: DetectedObject[]) =>
        from.filter((o) => o.score >= 0.5).every((o) => by.some((p) => p.className === o.className && iou(p.rect, o.rect) >= 0.85));
      expect(covered(b, a)).toBe(true);
      expect(covered(a, b)).toBe(true);
    }
  });

  it('finds on the labelled object set what the square file finds, within a box', async () => {
    const found = { rect: [] as ReturnType<typeof scorePhoto>[], square: [] as ReturnType<typeof scorePhoto>[] };
    for (const [file, labelled] of Object.entries(loadObjectLabels(ROOT).photos)) {
      found.rect.push(scorePhoto(labelled, (await rect.detectObjects(photo(file), { maxObjects: 1000 })).objects, 0));
      found.square.push(scorePhoto(labelled, (await square.detectObjects(photo(file), { maxObjects: 1000 })).objects, 0));
    }
    const [r, q] = [sumScores(found.rect), sumScores(found.square)];
    console.log(
      `labelled objects, yolov5s fp32: on the photo's aspect ${r.found}/${r.labelled} found, ${r.wrongTop} wrong, ${r.unmatched} unmatched; square ${q.found}/${q.labelled}, ${q.wrongTop}, ${q.unmatched}`,
    );
    expect(r.found).toBeGreaterThanOrEqual(q.found - 1);
    expect(r.wrongTop).toBeLessThanOrEqual(q.wrongTop + 1);
    expect(r.unmatched).toBeLessThanOrEqual(q.unmatched + 1);
  });
});
