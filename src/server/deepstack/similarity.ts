// The DeepStack face-recognition "confidence": a similarity in 0..1, higher is more alike, that clients compare
// with min_confidence (default 0.67). edgecv's calibrated distance is d = (1 - cosine) x 273.18, and 105 is its
// equal-error-rate threshold. The similarity is the straight line through (d = 0, 1) and (d = 105, 0.67):
//   similarity = max(0, 1 - 0.33 x d / 105)
// so that similarity 0.67 sits exactly where distance 105 sits, and DeepStack's default threshold gets edgecv's
// equal-error-rate trade-off.

import { EER_DISTANCE } from '../../engine/face-embedding.js';

export { EER_DISTANCE };

/** DeepStack's default recognition threshold. */
export const DEEPSTACK_RECOGNITION_THRESHOLD = 0.67;

export function similarityFromDistance(distance: number): number {
  return Math.max(0, 1 - ((1 - DEEPSTACK_RECOGNITION_THRESHOLD) * distance) / EER_DISTANCE);
}
