// How poses are scored against the labelled person boxes (testkit/object-labels.ts): shared by the
// pose tests and the pose accuracy bench.
//
// A pose belongs to a person when it has at least MIN_KEYPOINTS confident keypoints (score >= the route's
// keypoint threshold) and most of them lie inside the person's box (grown by 10% on each side: wrists and
// ankles stick out of tight boxes). Each person takes at most one pose, greedily by that share.
import { POSE_DEFAULTS, type Pose } from '../src/index.js';
import { iou } from './boxes.js';
import type { LabelledPhoto, Rect } from './object-labels.js';

export const MIN_KEYPOINTS = 5;
export const SMALL_PERSON_PX = 120;

function grown(r: Rect, by: number): Rect {
  const dx = (r[2] - r[0]) * by;
  const dy = (r[3] - r[1]) * by;
  return [r[0] - dx, r[1] - dy, r[2] + dx, r[3] + dy];
}

const inside = (r: Rect, x: number, y: number) => x >= r[0] && x <= r[2] && y >= r[1] && y <= r[3];

export interface PoseScore {
  persons: number;
  posed: number;
  small: number;
  smallPosed: number;
  /** Poses (with enough keypoints) that belong to no labelled person and lie on no ignore region. */
  extra: number;
}

/** Scores the first `limit` poses (best first) against one photo's person boxes. */
export function scorePoses(photo: LabelledPhoto, poses: readonly Pose[], limit: number): PoseScore {
  const persons = photo.boxes.filter((b) => b.class === 'person').map((b) => b.rect);
  const candidates = poses
    .slice(0, limit)
    .map((p) => p.keypoints.filter((k) => k.score >= POSE_DEFAULTS.keypointThreshold))
    .map((kps, i) => ({ kps, box: poses[i]!.box }))
    .filter((p) => p.kps.length >= MIN_KEYPOINTS);
  const pairs: { pose: number; person: number; share: number; overlap: number }[] = [];
  candidates.forEach((p, pose) => {
    persons.forEach((rect, person) => {
      const g = grown(rect, 0.1);
      const share = p.kps.filter((k) => inside(g, k.x, k.y)).length / p.kps.length;
      if (share > 0.5) pairs.push({ pose, person, share, overlap: iou(p.box, rect) });
    });
  });
  pairs.sort((a, b) => b.share - a.share || b.overlap - a.overlap);
  const posedPersons = new Set<number>();
  const usedPoses = new Set<number>();
  for (const p of pairs) {
    if (posedPersons.has(p.person) || usedPoses.has(p.pose)) continue;
    posedPersons.add(p.person);
    usedPoses.add(p.pose);
  }
  const isSmall = (r: Rect) => r[3] - r[1] < SMALL_PERSON_PX;
  let extra = 0;
  candidates.forEach((p, i) => {
    if (usedPoses.has(i)) return;
    const onIgnore = (photo.ignore ?? []).some((r) => p.kps.filter((k) => inside(r, k.x, k.y)).length > p.kps.length / 2);
    if (!onIgnore) extra++;
  });
  return {
    persons: persons.length,
    posed: posedPersons.size,
    small: persons.filter(isSmall).length,
    smallPosed: [...posedPersons].filter((i) => isSmall(persons[i]!)).length,
    extra,
  };
}
