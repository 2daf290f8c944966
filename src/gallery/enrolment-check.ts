// What enrolment refuses: a photo that would make a poor sample. It must show exactly one face, at least
// MIN_FACE_SIDE pixels and at least MIN_SHARPNESS sharp (sample-quality.ts; docs/gallery.md, "Enrolment quality").

import type { EmbeddedFace, FaceEmbeddingResult } from '../engine/face-embedding.js';
import { MIN_FACE_SIDE, MIN_SHARPNESS, sampleQuality, type SampleQuality } from './sample-quality.js';

/** Why a photo would make a poor sample. */
export type EnrolmentRefusal = 'no-face' | 'multiple-faces' | 'too-small' | 'too-blurred';

/** The answer's `reason` (the first two are the original training server's words). */
const REFUSALS: Record<EnrolmentRefusal, string> = {
  'no-face': 'No face detected',
  'multiple-faces': 'More than 1 face',
  'too-small': 'Face too small',
  'too-blurred': 'Face too blurred',
};

/** The photo cannot be enrolled (EnrolmentRefusal); `detail` gives the measure and its threshold. */
export class EnrolmentError extends Error {
  override name = 'EnrolmentError';
  constructor(
    readonly reason: EnrolmentRefusal,
    detail?: string,
  ) {
    super(detail ? `${REFUSALS[reason]}: ${detail}` : REFUSALS[reason]);
  }
}

type Embedded = FaceEmbeddingResult & { face: EmbeddedFace; embedding: Float32Array };

/**
 * Throws EnrolmentError unless the embedded photo (made with keepCrop) would make a good sample; returns it with
 * the quality of its crop (null without one), which the face library lists.
 */
export function checkEnrolmentPhoto(r: FaceEmbeddingResult): { embedded: Embedded; quality: SampleQuality | null } {
  if (r.faces.length === 0 || !r.face || !r.embedding) throw new EnrolmentError('no-face');
  if (r.faces.length > 1) throw new EnrolmentError('multiple-faces');
  const [l, t, right, bottom] = r.face.rect;
  const side = Math.min(right - l, bottom - t);
  if (side < MIN_FACE_SIDE) throw new EnrolmentError('too-small', `${side} px, at least ${MIN_FACE_SIDE} px`);
  const quality = r.crop ? sampleQuality(r.crop.jpeg, r.crop.rect) : null;
  const sharpness = quality?.sharpness;
  if (sharpness !== undefined && sharpness < MIN_SHARPNESS)
    throw new EnrolmentError('too-blurred', `sharpness ${sharpness}, at least ${MIN_SHARPNESS}`);
  return { embedded: r as Embedded, quality };
}
