// The hand-checked object labels (testkit/labels/objects.json) and how detections and poses are scored against
// them: shared by the tests (object-labels, pose-object-engine) and the accuracy benches.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { DetectedObject } from '../src/index.js';
import { area, intersection, iou } from './boxes.js';

export type Rect = [number, number, number, number];

export interface LabelledBox {
  class: string;
  rect: Rect;
}

export interface LabelledPhoto {
  /** Every COCO object of a reasonable size is boxed: any other detection is unmatched. */
  complete: boolean;
  /** Every person is boxed (the pose set). */
  personsComplete: boolean;
  boxes: LabelledBox[];
  /** Ambiguous or tiny things: a detection mostly inside one is neither matched nor unmatched. */
  ignore?: Rect[];
  note?: string;
}

export interface ObjectLabels {
  photos: Record<string, LabelledPhoto>;
}

export const IOU_MATCH = 0.5;

export function loadObjectLabels(root: string): ObjectLabels {
  return JSON.parse(readFileSync(join(root, 'testkit', 'labels', 'objects.json'), 'utf8')) as ObjectLabels;
}

export interface PhotoScore {
  labelled: number;
  /** Labelled boxes matched one-to-one by a detection of the right class at IoU >= 0.5. */
  found: number;
  /** Labelled boxes whose best-scoring detection at IoU >= 0.5 (any class) has another class. */
  wrongTop: number;
  /** Detections matching no labelled box and no ignore region (counted on complete photos only). */
  unmatched: number;
  persons: number;
  personsFound: number;
}

/**
 * Scores one photo's detections (best first is not assumed). Matching is greedy by score, one detection per
 * labelled box, as in COCO/VOC evaluation: a second box on the same object is unmatched.
 */
export function scorePhoto(photo: LabelledPhoto, detections: readonly DetectedObject[], threshold: number): PhotoScore {
  const dets = detections.filter((d) => d.score >= threshold).sort((a, b) => b.score - a.score);
  const taken = new Set<number>();
  let unmatched = 0;
  for (const d of dets) {
    let best = -1;
    let bestIou = IOU_MATCH;
    photo.boxes.forEach((box, i) => {
      if (taken.has(i) || box.class !== d.className) return;
      const v = iou(box.rect, d.rect);
      if (v >= bestIou) {
        best = i;
        bestIou = v;
      }
    });
    if (best >= 0) taken.add(best);
    else if (!(photo.ignore ?? []).some((r) => intersection(r, d.rect) >= 0.5 * area(d.rect))) unmatched++;
  }
  let wrongTop = 0;
  for (const box of photo.boxes) {
    const top = dets.find((d) => iou(box.rect, d.rect) >= IOU_MATCH);
    if (top && top.className !== box.class) wrongTop++;
  }
  const persons = photo.boxes.map((b, i) => [b, i] as const).filter(([b]) => b.class === 'person');
  return {
    labelled: photo.boxes.length,
    found: taken.size,
    wrongTop,
    unmatched: photo.complete ? unmatched : 0,
    persons: photo.personsComplete ? persons.length : 0,
    personsFound: photo.personsComplete ? persons.filter(([, i]) => taken.has(i)).length : 0,
  };
}

export function sumScores(scores: PhotoScore[]): PhotoScore {
  const total: PhotoScore = { labelled: 0, found: 0, wrongTop: 0, unmatched: 0, persons: 0, personsFound: 0 };
  for (const s of scores) for (const k of Object.keys(total) as (keyof PhotoScore)[]) total[k] += s[k];
  return total;
}

export function labelsSummary(labels: ObjectLabels): string {
  const photos = Object.values(labels.photos);
  const boxes = photos.reduce((n, p) => n + p.boxes.length, 0);
  return `${boxes} boxes on ${photos.length} photos, ${photos.filter((p) => p.complete).length} labelled completely`;
}
