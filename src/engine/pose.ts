// Pose layouts: the 17 COCO keypoints MoveNet gives, and the 25-point OpenPose BODY_25 layout the HTTP API
// answers in, with the bones and colours clients draw it with.

/** MoveNet's keypoints, in its output order (COCO). "left"/"right" are the person's own sides. */
export const COCO_KEYPOINTS = [
  'nose',
  'left_eye',
  'right_eye',
  'left_ear',
  'right_ear',
  'left_shoulder',
  'right_shoulder',
  'left_elbow',
  'right_elbow',
  'left_wrist',
  'right_wrist',
  'left_hip',
  'right_hip',
  'left_knee',
  'right_knee',
  'left_ankle',
  'right_ankle',
] as const;
export type CocoKeypointName = (typeof COCO_KEYPOINTS)[number];

/** OpenPose BODY_25, by index. */
export const BODY_25_KEYPOINTS = [
  'nose',
  'neck',
  'right_shoulder',
  'right_elbow',
  'right_wrist',
  'left_shoulder',
  'left_elbow',
  'left_wrist',
  'mid_hip',
  'right_hip',
  'right_knee',
  'right_ankle',
  'left_hip',
  'left_knee',
  'left_ankle',
  'right_eye',
  'left_eye',
  'right_ear',
  'left_ear',
  'left_big_toe',
  'left_small_toe',
  'left_heel',
  'right_big_toe',
  'right_small_toe',
  'right_heel',
] as const;
export type Body25KeypointName = (typeof BODY_25_KEYPOINTS)[number];

/** [x, y, confidence]; [0, 0, 0] for a point that was not detected or that the model does not give. */
export type Body25Point = [number, number, number];

/**
 * The 24 bones clients draw, as BODY_25 index pairs, each with its colour (hex RGB, no '#'). A bone with either
 * end at [0, 0, 0] is not drawn. (The original server's table lists 25 colours for these 24 pairs; the 25th,
 * 00ffff, belongs to no bone and is left out.)
 */
export const BODY_25_BONES: readonly { readonly pair: readonly [number, number]; readonly color: string }[] = [
  { pair: [1, 8], color: 'ff0055' },
  { pair: [1, 2], color: 'ff0000' },
  { pair: [1, 5], color: 'ff5500' },
  { pair: [2, 3], color: 'ffaa00' },
  { pair: [3, 4], color: 'ffff00' },
  { pair: [5, 6], color: 'aaff00' },
  { pair: [6, 7], color: '55ff00' },
  { pair: [8, 9], color: '00ff00' },
  { pair: [9, 10], color: 'ff0000' },
  { pair: [10, 11], color: '00ff55' },
  { pair: [8, 12], color: '00ffaa' },
  { pair: [12, 13], color: '00ffff' },
  { pair: [13, 14], color: '00aaff' },
  { pair: [1, 0], color: '0055ff' },
  { pair: [0, 15], color: '0000ff' },
  { pair: [15, 17], color: 'ff00aa' },
  { pair: [0, 16], color: 'aa00ff' },
  { pair: [16, 18], color: 'ff00ff' },
  { pair: [14, 19], color: '5500ff' },
  { pair: [19, 20], color: '0000ff' },
  { pair: [14, 21], color: '0000ff' },
  { pair: [11, 22], color: '0000ff' },
  { pair: [22, 23], color: '00ffff' },
  { pair: [11, 24], color: '00ffff' },
];

const COCO_INDEX = Object.fromEntries(COCO_KEYPOINTS.map((name, i) => [name, i])) as Record<CocoKeypointName, number>;

/**
 * BODY_25 from 17 COCO keypoints given as flat [x, y, score] triples. A keypoint scoring below
 * `threshold` becomes [0, 0, 0]; neck and mid hip are the midpoints of the shoulders and of the hips when both
 * are detected, with the lower of the two scores; the feet (19-24) are never given by MoveNet.
 */
export function cocoToBody25(keypoints: ArrayLike<number>, threshold: number): Body25Point[] {
  const point = (name: CocoKeypointName): Body25Point => {
    const i = 3 * COCO_INDEX[name];
    const score = keypoints[i + 2]!;
    return score >= threshold && score > 0 ? [keypoints[i]!, keypoints[i + 1]!, score] : [0, 0, 0];
  };
  const midpoint = (a: Body25Point, b: Body25Point): Body25Point =>
    a[2] > 0 && b[2] > 0 ? [(a[0] + b[0]) / 2, (a[1] + b[1]) / 2, Math.min(a[2], b[2])] : [0, 0, 0];
  return BODY_25_KEYPOINTS.map((name): Body25Point => {
    switch (name) {
      case 'neck':
        return midpoint(point('left_shoulder'), point('right_shoulder'));
      case 'mid_hip':
        return midpoint(point('left_hip'), point('right_hip'));
      case 'left_big_toe':
      case 'left_small_toe':
      case 'left_heel':
      case 'right_big_toe':
      case 'right_small_toe':
      case 'right_heel':
        return [0, 0, 0];
      default:
        return point(name);
    }
  });
}
