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
    // In doubt: the store got the change but did not answer in time; it may still apply it (whole), and then every
    // server follows. The client is told, so that it checks before enrolling the same photo again.
    const message = e.inDoubt
      ? 'the gallery store did not answer in time: the change may or may not be stored (check /trainer/subjects/ before retrying)'
      : 'the gallery store is unavailable, retry later';
    return new HttpError(503, message, { 'Retry-After': String(UPDATE_RETRY_AFTER_S) });
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
