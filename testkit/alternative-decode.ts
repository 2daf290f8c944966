// The pre- and post-processing a Node developer writes in JS around a bare runtime (onnxruntime-node,
// opencv4nodejs's cv.dnn, TF.js): letterbox geometry, and decoding the raw heads of the three models into boxes
// with NMS. It mirrors what the addon does in C++ (native/models/face_detector.cc, pose_estimator.cc, yolo_detector.cc)
// on purpose: this is the code edgecv spares its user, and the alternatives must give comparable answers.
import { iou } from './boxes.js';

/** [left, top, right, bottom] in image pixels, a score, and a label (class name, 'face' or 'person'). */
export interface Box {
  rect: [number, number, number, number];
  score: number;
  label: string;
}

/** Where the image lies inside the square model input: input = image * scale + pad. */
export interface Letterbox {
  size: number;
  scale: number;
  padX: number;
  padY: number;
  /** The resized image inside the input. */
  width: number;
  height: number;
}

/** Fit width x height into size x size, centred (the addon's letterbox). */
export function letterbox(width: number, height: number, size: number): Letterbox {
  const fit = Math.min(size / width, size / height);
  const w = Math.max(1, Math.min(size, Math.round(width * fit)));
  const h = Math.max(1, Math.min(size, Math.round(height * fit)));
  return { size, scale: width >= height ? w / width : h / height, padX: (size - w) >> 1, padY: (size - h) >> 1, width: w, height: h };
}

/** Packed RGB pixels of the resized image -> float input (pixel - mean) * scale, padded, NCHW or NHWC. */
export function toTensor(rgb: Uint8Array, box: Letterbox, norm: { mean: number; scale: number; pad: number }, layout: 'NCHW' | 'NHWC'): Float32Array {
  const { size, width, height, padX, padY } = box;
  const plane = size * size;
  const out = new Float32Array(3 * plane).fill((norm.pad - norm.mean) * norm.scale);
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      const src = (y * width + x) * 3;
      const at = (y + padY) * size + x + padX;
      for (let c = 0; c < 3; c++) {
        const v = (rgb[src + c]! - norm.mean) * norm.scale;
        if (layout === 'NCHW') out[c * plane + at] = v;
        else out[at * 3 + c] = v;
      }
    }
  }
  return out;
}

function sigmoid(x: number): number {
  return 1 / (1 + Math.exp(-x));
}

/** Greedy NMS, best first; per label when `perLabel`. */
export function nms(boxes: Box[], iouThreshold: number, limit = Infinity, perLabel = true): Box[] {
  const sorted = [...boxes].sort((a, b) => b.score - a.score);
  const kept: Box[] = [];
  for (const c of sorted) {
    if (kept.length >= limit) break;
    if (!kept.some((k) => (!perLabel || k.label === c.label) && iou(k.rect, c.rect) > iouThreshold)) kept.push(c);
  }
  return kept;
}

function toImage(box: Letterbox, l: number, t: number, r: number, b: number): [number, number, number, number] {
  return [(l - box.padX) / box.scale, (t - box.padY) / box.scale, (r - box.padX) / box.scale, (b - box.padY) / box.scale];
}

/**
 * MediaPipe face detector (BlazeFace family): one logit and a 16-float regressor row per SSD anchor, anchors
 * at the cell centres of each anchor layer; offsets in input pixels.
 */
export function decodeFaces(
  scores: Float32Array,
  regressors: Float32Array,
  layers: readonly { stride: number; anchors: number }[],
  box: Letterbox,
  opts: { scoreThreshold: number; iouThreshold: number },
): Box[] {
  const S = box.size;
  const out: Box[] = [];
  let i = 0;
  for (const layer of layers) {
    const grid = Math.ceil(S / layer.stride);
    for (let gy = 0; gy < grid; gy++) {
      for (let gx = 0; gx < grid; gx++) {
        for (let a = 0; a < layer.anchors; a++, i++) {
          const score = sigmoid(Math.max(-100, Math.min(100, scores[i]!)));
          if (score < opts.scoreThreshold) continue;
          const r = regressors.subarray(i * 16, i * 16 + 4);
          const cx = r[0]! + ((gx + 0.5) / grid) * S;
          const cy = r[1]! + ((gy + 0.5) / grid) * S;
          out.push({ rect: toImage(box, cx - r[2]! / 2, cy - r[3]! / 2, cx + r[2]! / 2, cy + r[3]! / 2), score, label: 'face' });
        }
      }
    }
  }
  return nms(out, opts.iouThreshold);
}

/** YOLOv5 v6 heads before the sigmoid, NHWC [1,H,W,anchors*(5+classes)]; class-aware NMS 0.45 as YOLOv5 does. */
export function decodeYolo(
  heads: Float32Array[],
  strides: readonly number[],
  anchors: readonly (readonly number[])[],
  classes: readonly string[],
  box: Letterbox,
  opts: { scoreThreshold: number; maxObjects: number },
): Box[] {
  const row = 5 + classes.length;
  const out: Box[] = [];
  heads.forEach((data, i) => {
    const stride = strides[i]!;
    const cells = box.size / stride;
    const n = anchors[i]!.length / 2;
    for (let gy = 0; gy < cells; gy++) {
      for (let gx = 0; gx < cells; gx++) {
        for (let a = 0; a < n; a++) {
          const p = ((gy * cells + gx) * n + a) * row;
          const obj = sigmoid(data[p + 4]!);
          if (obj < opts.scoreThreshold) continue;
          let best = 0;
          for (let c = 1; c < classes.length; c++) if (data[p + 5 + c]! > data[p + 5 + best]!) best = c;
          const score = obj * sigmoid(data[p + 5 + best]!);
          if (score < opts.scoreThreshold) continue;
          const cx = (sigmoid(data[p]!) * 2 - 0.5 + gx) * stride;
          const cy = (sigmoid(data[p + 1]!) * 2 - 0.5 + gy) * stride;
          const w = (sigmoid(data[p + 2]!) * 2) ** 2 * anchors[i]![2 * a]!;
          const h = (sigmoid(data[p + 3]!) * 2) ** 2 * anchors[i]![2 * a + 1]!;
          out.push({ rect: toImage(box, cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2), score, label: classes[best]! });
        }
      }
    }
  });
  return nms(out, 0.45, opts.maxObjects);
}

/**
 * MoveNet MultiPose heads (NHWC, grid = input / 4): centre peaks (5x5 max), each person's box from the box
 * heads, each keypoint the heatmap peak nearest its regressed position inside the box; person score = centre
 * score x mean of the keypoint scores above 0.127. Returns the person boxes (keypoints are decoded too, as a
 * caller needs them, and count towards the score).
 */
export function decodeMoveNet(
  heads: {
    centre: Float32Array;
    boxScale: Float32Array;
    boxOffset: Float32Array;
    heatmap: Float32Array;
    regress: Float32Array;
    offset: Float32Array;
  },
  box: Letterbox,
  opts: { scoreThreshold: number; maxPoses: number },
): (Box & { keypoints: [number, number, number][] })[] {
  const g = box.size / 4;
  const cells = g * g;
  const K = 17;
  const centre = Float32Array.from(heads.centre, sigmoid);
  const peaks: { score: number; cell: number }[] = [];
  for (let y = 0; y < g; y++) {
    for (let x = 0; x < g; x++) {
      let max = 0;
      for (let yy = Math.max(0, y - 2); yy <= Math.min(g - 1, y + 2); yy++) {
        for (let xx = Math.max(0, x - 2); xx <= Math.min(g - 1, x + 2); xx++) max = Math.max(max, centre[yy * g + xx]!);
      }
      const v = centre[y * g + x]!;
      peaks.push({ score: Math.abs(v - max) < 1.013279e-6 ? v : 0, cell: y * g + x });
    }
  }
  peaks.sort((a, b) => b.score - a.score || a.cell - b.cell);
  const people = peaks.slice(0, Math.min(opts.maxPoses, cells)).map(({ score, cell }) => {
    const cy = Math.floor(cell / g);
    const cx = cell % g;
    const sy = Math.max(0, heads.boxScale[2 * cell]!);
    const sx = Math.max(0, heads.boxScale[2 * cell + 1]!);
    const oy = cy + heads.boxOffset[2 * cell]!;
    const ox = cx + heads.boxOffset[2 * cell + 1]!;
    const clamp = (v: number) => Math.min(g, Math.max(0, v));
    const regressed = Array.from(
      { length: K },
      (_, j) => [cy + heads.regress[cell * 2 * K + 2 * j]!, cx + heads.regress[cell * 2 * K + 2 * j + 1]!] as const,
    );
    return { score, ymin: clamp(oy - sy / 2), xmin: clamp(ox - sx / 2), ymax: clamp(oy + sy / 2), xmax: clamp(ox + sx / 2), regressed };
  });
  const heat = Float32Array.from(heads.heatmap, sigmoid);
  const spread = 0.30004883 * g;
  const weighted = (c: (typeof people)[number], y: number, x: number, j: number) => {
    if (y < c.ymin || y >= c.ymax || x < c.xmin || x >= c.xmax) return 0;
    const [ry, rx] = c.regressed[j]!;
    return heat[(y * g + x) * K + j]! * Math.exp(-((y - ry) ** 2 + (x - rx) ** 2) / spread);
  };
  const poses: (Box & { keypoints: [number, number, number][] })[] = [];
  for (const c of people) {
    const keypoints: [number, number, number][] = [];
    let sum = 0;
    let valid = 0;
    for (let j = 0; j < K; j++) {
      let best = -1;
      let bestCell = 0;
      for (let y = 0; y < g; y++) {
        for (let x = 0; x < g; x++) {
          const w = weighted(c, y, x, j);
          if (w > best) {
            best = w;
            bestCell = y * g + x;
          }
        }
      }
      const by = Math.floor(bestCell / g);
      const bx = bestCell % g;
      const score = Math.max(0, ...people.map((o) => weighted(o, by, bx, j)));
      const ky = (by + heads.offset[bestCell * 2 * K + 2 * j]!) * 4;
      const kx = (bx + heads.offset[bestCell * 2 * K + 2 * j + 1]!) * 4;
      keypoints.push([(kx - box.padX) / box.scale, (ky - box.padY) / box.scale, score]);
      if (score > 0.12695312) {
        sum += score;
        valid++;
      }
    }
    const score = (c.score * sum) / Math.max(1, valid);
    if (!(score >= opts.scoreThreshold) || c.score <= 0) continue;
    poses.push({ rect: toImage(box, c.xmin * 4, c.ymin * 4, c.xmax * 4, c.ymax * 4), score, label: 'person', keypoints });
  }
  return poses.sort((a, b) => b.score - a.score);
}

/** How far an alternative's boxes agree with edgecv's: counts, and each edgecv box's best IoU among same-label boxes. */
export function agreement(reference: Box[], other: Box[]): { count: number; matched: number; meanBestIou: number } {
  const best = reference.map((r) => Math.max(0, ...other.filter((o) => o.label === r.label).map((o) => iou(r.rect, o.rect))));
  return {
    count: other.length,
    matched: best.filter((v) => v >= 0.5).length,
    meanBestIou: best.length ? best.reduce((a, b) => a + b, 0) / best.length : other.length ? 0 : 1,
  };
}
