// YOLOv5 heads decoded in plain JS, and two answers compared box by box: for measuring how far an int8 file's
// answers move between CPUs (tools/int8-cpu-spread.ts, test/int8-cross-cpu.test.ts), apart from the engine's own
// decode (native/models/yolo_detector.cc), which the route tests check.

/** A YOLO entry of models/onnx/manifest.json (src/engine/manifest.ts checks it for the engine). */
export interface YoloSpec {
  strides: number[];
  anchors: number[][];
  classes: number;
}

/** One output as onnxruntime gives it: data and dims. */
export interface OutputTensor {
  data: Float32Array;
  dims: readonly number[];
}

export interface Box {
  classId: number;
  score: number;
  /** [left, top, right, bottom] in input pixels */
  rect: [number, number, number, number];
}

/** Two answers' boxes are the same detection at this IoU and class. */
const IOU_SAME_BOX = 0.5;
const NMS_IOU = 0.45;

const sigmoid = (x: number) => 1 / (1 + Math.exp(-x));

export function iou(a: Box['rect'], b: Box['rect']): number {
  const w = Math.min(a[2], b[2]) - Math.max(a[0], b[0]);
  const h = Math.min(a[3], b[3]) - Math.max(a[1], b[1]);
  if (w <= 0 || h <= 0) return 0;
  const inter = w * h;
  return inter / ((a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter);
}

/** YOLOv5 heads ([1,H,W,A*(5+C)] NHWC, before the sigmoid) to boxes at `threshold`, then class-aware NMS. */
export function decodeYolo(heads: readonly OutputTensor[], yolo: YoloSpec, threshold: number): Box[] {
  const boxes: Box[] = [];
  const per = 5 + yolo.classes;
  heads.forEach(({ data, dims }, l) => {
    const [, h, w, channels] = dims as [number, number, number, number];
    const stride = yolo.strides[l]!;
    const anchors = channels / per;
    for (let cell = 0; cell < h * w; cell++) {
      for (let a = 0; a < anchors; a++) {
        const o = (cell * anchors + a) * per;
        const objectness = sigmoid(data[o + 4]!);
        if (objectness < threshold) continue;
        let classId = 0;
        for (let c = 1; c < yolo.classes; c++) if (data[o + 5 + c]! > data[o + 5 + classId]!) classId = c;
        const score = objectness * sigmoid(data[o + 5 + classId]!);
        if (score < threshold) continue;
        const cx = (sigmoid(data[o]!) * 2 - 0.5 + (cell % w)) * stride;
        const cy = (sigmoid(data[o + 1]!) * 2 - 0.5 + Math.floor(cell / w)) * stride;
        const bw = (sigmoid(data[o + 2]!) * 2) ** 2 * yolo.anchors[l]![a * 2]!;
        const bh = (sigmoid(data[o + 3]!) * 2) ** 2 * yolo.anchors[l]![a * 2 + 1]!;
        boxes.push({ classId, score, rect: [cx - bw / 2, cy - bh / 2, cx + bw / 2, cy + bh / 2] });
      }
    }
  });
  boxes.sort((x, y) => y.score - x.score);
  const kept: Box[] = [];
  for (const b of boxes) if (!kept.some((k) => k.classId === b.classId && iou(k.rect, b.rect) > NMS_IOU)) kept.push(b);
  return kept;
}

export interface BoxComparison {
  /** Boxes of the reference. */
  reference: number;
  /** Boxes in one answer and not in the other (same class, IoU >= 0.5): a changed label counts twice. */
  flips: number;
  /** Over the boxes found in both. */
  maxScoreChange: number;
  maxBoxShift: number;
}

export function compareBoxes(reference: readonly Box[], got: readonly Box[]): BoxComparison {
  const result: BoxComparison = { reference: reference.length, flips: 0, maxScoreChange: 0, maxBoxShift: 0 };
  const unmatched = new Set(got.keys());
  for (const r of reference) {
    const i = [...unmatched].find((j) => got[j]!.classId === r.classId && iou(got[j]!.rect, r.rect) >= IOU_SAME_BOX);
    if (i === undefined) {
      result.flips++;
      continue;
    }
    unmatched.delete(i);
    result.maxScoreChange = Math.max(result.maxScoreChange, Math.abs(got[i]!.score - r.score));
    result.maxBoxShift = Math.max(result.maxBoxShift, ...r.rect.map((v, c) => Math.abs(v - got[i]!.rect[c]!)));
  }
  result.flips += unmatched.size;
  return result;
}
