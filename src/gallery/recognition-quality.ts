// What recognition will not put a name to: a face too small or too blurred to judge. Such a face is answered with
// the reason instead of its nearest subject (REST: success "false" and `reason`; DeepStack: "unknown" and `reason`).
// The thresholds are measured on degraded copies of the test photos (tools/sample-quality.ts, docs/gallery.md,
// "Recognition: a face too poor to judge").

import { calibratedDistance, type EmbeddedFace, type GalleryMatch } from '../engine/face-embedding.js';
import type { IdentifiedFace } from './recognition-types.js';

/**
 * A face box whose shorter side is under this many pixels is too small to judge: on the johns, faces of 24-27 px
 * still matched their person 82% of the time, faces of 28-35 px every time. Lower than enrolment's 36: a sample
 * must be good for every later photo, a query only for itself.
 */
export const MIN_JUDGED_FACE_SIDE = 28;
/**
 * A face less sharp than this (EmbeddedFace.sharpness, the engine's measure on the decoded photo, which reads about
 * 0.6 times the library's measure on the JPEG crop) is too blurred to judge: under 5, 65% matched; 5 to 8, 97%.
 */
export const MIN_JUDGED_SHARPNESS = 5;

/** Why the face cannot be judged, in the words enrolment refuses it with; null when it can. */
export function unjudgedReason(face: Pick<EmbeddedFace, 'rect' | 'sharpness'>): string | null {
  const [l, t, r, b] = face.rect;
  const side = Math.min(r - l, b - t);
  if (side < MIN_JUDGED_FACE_SIDE) return `Face too small: ${side} px, at least ${MIN_JUDGED_FACE_SIDE} px`;
  if (face.sharpness < MIN_JUDGED_SHARPNESS) {
    return `Face too blurred: sharpness ${Math.round(face.sharpness * 10) / 10}, at least ${MIN_JUDGED_SHARPNESS}`;
  }
  return null;
}

/** A face of a photo as identify() answers it: its nearest sample, or none with the reason it is not judged. */
export function identifiedFace(
  face: Pick<EmbeddedFace, 'rect' | 'sharpness'>,
  score: number,
  match: GalleryMatch | null,
  distanceScale: number,
): IdentifiedFace {
  const unjudged = unjudgedReason(face);
  return {
    rect: face.rect,
    score,
    unjudged,
    match:
      unjudged === null && match ? { subject: match.subject, sampleId: match.id, distance: calibratedDistance(match.cosine, distanceScale) } : null,
  };
}
