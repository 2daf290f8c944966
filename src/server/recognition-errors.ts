// HTTP statuses of the recognition service's errors.

import { ImportError } from '../gallery/jsonl.js';
import { EnrolmentError, GalleryBusyError, GalleryEmptyError, SubjectError } from '../gallery/recognition-service.js';
import { GalleryStoreError } from '../gallery/types.js';
import { HttpError } from './errors.js';

/** Seconds a client is asked to wait during a training data update. */
export const UPDATE_RETRY_AFTER_S = 2;

/** Maps a recognition error to an HttpError; anything else is returned as is, for the app's error handler. */
export function recognitionHttpError(e: unknown): unknown {
  if (e instanceof GalleryBusyError) return new HttpError(503, e.message, { 'Retry-After': String(UPDATE_RETRY_AFTER_S) });
  if (e instanceof GalleryEmptyError) return new HttpError(409, e.message);
  if (e instanceof EnrolmentError || e instanceof SubjectError || e instanceof ImportError) return new HttpError(400, e.message);
  if (e instanceof GalleryStoreError) {
    console.error(`[edgecv] gallery store: ${e.message}`);
    return new HttpError(503, 'the gallery store is unavailable, retry later', { 'Retry-After': String(UPDATE_RETRY_AFTER_S) });
  }
  return e;
}

/** Runs a recognition-service call, its errors turned into HttpErrors. */
export async function recognitionCall<T>(work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (e) {
    throw recognitionHttpError(e);
  }
}
