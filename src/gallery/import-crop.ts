// An imported face crop checked as enrolment would have made it: a JPEG whose header and container read, with
// the face box inside it, at most STORED_CROP_MAX_SIDE pixels a side and STORED_CROP_MAX_BYTES long. A 5.8 MB
// crop was kept as sent, and the library then sent it (and decoded it for its quality) on every listing.

import { checkImageContainer } from '../engine/image-container.js';
import { tryReadImageHeader } from '../engine/image-header.js';
import type { Rect } from './types.js';

/** The longest side of a crop enrolment keeps (StoredCrop::kMaxSide, native/jobs/face_embed_job.h). */
export const STORED_CROP_MAX_SIDE = 448;
/**
 * The most bytes a kept crop may have: its raw pixels (448 x 448 x 3). Enrolment's quality-92 JPEGs are far under
 * it; a JPEG over it carries something other than the face (metadata, padding).
 */
export const STORED_CROP_MAX_BYTES = STORED_CROP_MAX_SIDE * STORED_CROP_MAX_SIDE * 3;

/**
 * 'ok': keep it as it is; 'too large': cut again from it (the face box is in it) as enrolment cuts a photo.
 * Throws an Error saying what is wrong with a crop that cannot be used: not a JPEG, a broken header, a face box
 * outside it.
 */
export function checkImportCrop(crop: Buffer, rect: Rect): 'ok' | 'too large' {
  const header = tryReadImageHeader(crop);
  if (!header || header.format !== 'jpeg') throw new Error("'crop' is not a JPEG (its header does not read as one)");
  try {
    checkImageContainer(crop, header); // segment lengths and a scan, without decoding
  } catch (e) {
    throw new Error(`'crop': ${(e as Error).message}`);
  }
  const [l, t, r, b] = rect;
  if (l < 0 || t < 0 || r > header.width || b > header.height) {
    throw new Error(`'crop_rect' [${rect.join(',')}] is not inside the ${header.width}x${header.height} crop`);
  }
  const tooLarge = Math.max(header.width, header.height) > STORED_CROP_MAX_SIDE || crop.length > STORED_CROP_MAX_BYTES;
  return tooLarge ? 'too large' : 'ok';
}
