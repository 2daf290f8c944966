// Where two POST /pose/detect/ answers differ, for servers whose MoveNet runs at different precisions (x64 int8,
// arm64 fp32: test/arm64/server-arm64.arm64.ts). The answer lists a keypoint only at or above the keypoint
// threshold ([0, 0, 0] below it), so a keypoint scored near the threshold may be listed by one side only: that is
// the score tolerance crossing the threshold, not a different answer. A keypoint listed on one side only is
// allowed when its score is within the score tolerance of the threshold; one listed on both sides must agree
// within the tolerances.
import { POSE_DEFAULTS } from '../../src/engine/limits.js';

type Point = [number, number, number];
export interface PoseTolerance {
  /** keypoint scores */
  score: number;
  /** keypoint coordinates, px */
  px: number;
  /** the keypoint threshold both servers answered with */
  keypointThreshold?: number;
}

/** Empty when the answers agree within `tolerance`; else one line per difference. */
export function poseDifferences(a: Record<string, unknown>, b: Record<string, unknown>, tolerance: PoseTolerance): string[] {
  const threshold = tolerance.keypointThreshold ?? POSE_DEFAULTS.keypointThreshold;
  if (a['success'] !== b['success']) return [`success ${String(a['success'])} vs ${String(b['success'])}`];
  const [mine, theirs] = [(a['poses'] ?? []) as Point[][], (b['poses'] ?? []) as Point[][]];
  if (mine.length !== theirs.length) return [`${mine.length} poses vs ${theirs.length}`];
  return mine.flatMap((pose, p) => {
    if (pose.length !== theirs[p]!.length) return [`[${p}] ${pose.length} keypoints vs ${theirs[p]!.length}`];
    return pose.flatMap((m, k) => {
      const t = theirs[p]![k]!;
      const at = `[${p}][${k}] ${JSON.stringify(m)} vs ${JSON.stringify(t)}`;
      const [listedM, listedT] = [m[2] > 0, t[2] > 0];
      if (listedM !== listedT)
        return Math.max(m[2], t[2]) <= threshold + tolerance.score ? [] : [`${at}: listed on one side, far above the threshold`];
      if (!listedM) return [];
      const far = Math.abs(m[0] - t[0]) > tolerance.px || Math.abs(m[1] - t[1]) > tolerance.px || Math.abs(m[2] - t[2]) > tolerance.score;
      return far ? [at] : [];
    });
  });
}

/** How far apart two answers with the same poses are, for the log: the largest score and coordinate differences
 * of keypoints both list, and the keypoints one lists alone with the score it gives them. */
export function poseSpread(a: Record<string, unknown>, b: Record<string, unknown>): { score: number; px: number; oneSided: string[] } {
  const [mine, theirs] = [(a['poses'] ?? []) as Point[][], (b['poses'] ?? []) as Point[][]];
  const out = { score: 0, px: 0, oneSided: [] as string[] };
  mine.forEach((pose, p) =>
    pose.forEach((m, k) => {
      const t = theirs[p]?.[k];
      if (!t || m[2] > 0 !== t[2] > 0) {
        if (t) out.oneSided.push(`[${p}][${k}] ${Math.max(m[2], t[2])}`);
        return;
      }
      if (m[2] === 0) return;
      out.score = Math.max(out.score, Math.abs(m[2] - t[2]));
      out.px = Math.max(out.px, Math.abs(m[0] - t[0]), Math.abs(m[1] - t[1]));
    }),
  );
  return out;
}
