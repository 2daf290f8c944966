// The DeepStack face-recognition "confidence": a calibrated score in 0..1 that clients compare with min_confidence
// (DeepStack's default 0.67; deepstack-python, and so Home Assistant's face integration, always sends 0.45).
// edgecv's calibrated distance is d = (1 - cosine) x distanceScale, with EER_DISTANCE (105) at the equal-error
// rate. The confidence is a logistic curve in d (docs/clients.md):
//   confidence = 1 / (1 + (0.33 / 0.67) x exp((d - 105) / w))
// - at d = 105 it is exactly 0.67, so DeepStack's default threshold keeps edgecv's equal-error trade-off, and
//   every match accepted at 0.67 today (d <= 105) still is;
// - w is the width of the overlap of the two distance distributions on the calibration set (dlib's johns, the
//   set that fixed the distance scale): pooled variance / (impostor mean - genuine mean) of the pair distances,
//   the slope of the log-likelihood ratio of two equal-variance normal fits. tools/deepstack-confidence.ts
//   derives it and measures the curve on people outside that set.
// Both constants are calibrated distances, so a new embedder calibrated to the same scale (105 = EER) keeps them.
// It replaced a straight line through (0, 1) and (105, 0.67), under which strangers were named at 0.45 (docs/clients.md).

import { EER_DISTANCE } from '../../engine/face-embedding.js';

export { EER_DISTANCE };

/** DeepStack's default recognition threshold: the confidence at EER_DISTANCE. */
export const DEEPSTACK_RECOGNITION_THRESHOLD = 0.67;

/** w: calibrated-distance width of the confidence curve (tools/deepstack-confidence.ts derives it: 3.3). */
export const CONFIDENCE_WIDTH = 3.3;

/** The DeepStack confidence of a match at calibrated distance `distance`: 0.67 at EER_DISTANCE, falling with d. */
export function similarityFromDistance(distance: number): number {
  const odds = (1 - DEEPSTACK_RECOGNITION_THRESHOLD) / DEEPSTACK_RECOGNITION_THRESHOLD;
  return 1 / (1 + odds * Math.exp((distance - EER_DISTANCE) / CONFIDENCE_WIDTH));
}

/** The calibrated distance at which the confidence is `confidence` (0 < confidence < 1): the inverse curve. */
export function distanceAtConfidence(confidence: number): number {
  const odds = (1 - DEEPSTACK_RECOGNITION_THRESHOLD) / DEEPSTACK_RECOGNITION_THRESHOLD;
  return EER_DISTANCE + CONFIDENCE_WIDTH * Math.log((1 - confidence) / confidence / odds);
}
