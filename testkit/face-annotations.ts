// Face-box ground truth from dlib's examples/faces (imglab XML) and the matching used to
// score a detector on it: shared by the face-detection test and `npm run bench`.
import { readFileSync } from 'node:fs';
import { iou } from './boxes.js';

export type Rect = [number, number, number, number];

export interface AnnotatedImage {
  file: string;
  boxes: Rect[];
}

/** Parses dlib imglab XML: <image file='..'><box top left width height/>...</image>. */
export function parseImglabXml(path: string): AnnotatedImage[] {
  const xml = readFileSync(path, 'latin1');
  const images: AnnotatedImage[] = [];
  for (const m of xml.matchAll(/<image file='([^']+)'[^>]*>([\s\S]*?)<\/image>/g)) {
    const boxes: Rect[] = [];
    for (const b of m[2].matchAll(/<box top='(-?\d+)' left='(-?\d+)' width='(\d+)' height='(\d+)'/g)) {
      const [top, left, width, height] = b.slice(1, 5).map(Number);
      boxes.push([left, top, left + width, top + height]);
    }
    images.push({ file: m[1], boxes });
  }
  return images;
}

export interface MatchResult {
  truePositives: number;
  falsePositives: number;
  falseNegatives: number;
  /** IoU of each matched pair. */
  ious: number[];
}

/** Greedy one-to-one matching of detections (in the detector's order) to ground truth at an IoU threshold. */
export function matchDetections(detections: Rect[], truth: Rect[], minIou: number): MatchResult {
  const used = new Set<number>();
  const ious: number[] = [];
  let falsePositives = 0;
  for (const d of detections) {
    let best = -1;
    let bestIou = 0;
    truth.forEach((t, i) => {
      const v = iou(d, t);
      if (!used.has(i) && v > bestIou) {
        best = i;
        bestIou = v;
      }
    });
    if (best >= 0 && bestIou >= minIou) {
      used.add(best);
      ious.push(bestIou);
    } else {
      falsePositives++;
    }
  }
  return { truePositives: ious.length, falsePositives, falseNegatives: truth.length - ious.length, ious };
}

export function addMatches(a: MatchResult, b: MatchResult): MatchResult {
  return {
    truePositives: a.truePositives + b.truePositives,
    falsePositives: a.falsePositives + b.falsePositives,
    falseNegatives: a.falseNegatives + b.falseNegatives,
    ious: [...a.ious, ...b.ious],
  };
}
