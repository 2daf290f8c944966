// The face library's /trainer routes (mounted by trainer.ts; both need the admin):
//   GET  /trainer/samples/  ?subject=[&limit=50][&after=<id>] -> {"success":"true","subject":"alice","samples":[{"id":4,
//                           "created":"<ISO>","crop":"<base64 JPEG>","crop_rect":[l,t,r,b],"quality":{"face_side":96,
//                           "sharpness":212.4}}],"total":3000,"limit":50,"next_after":57}: one page, in id order;
//                           next_after is the next page's `after` (null: the last page). 404 for a subject without samples
//   POST /trainer/move/     subject, id, to (query, urlencoded, multipart or JSON)
//                           -> {"success":"true","subject":"alice","id":4,"to":"bob"}; 404 when subject has no sample id
// Deleting one sample is POST /trainer/remove/ with its id (trainer.ts).

import { Hono, type MiddlewareHandler } from 'hono';
import { DEFAULT_PAGE_LIMIT, MAX_PAGE_LIMIT } from '../../gallery/library-page.js';
import type { LibrarySample, RecognitionService } from '../../gallery/recognition-service.js';
import { HttpError } from '../errors.js';
import { recognitionCall } from '../recognition-errors.js';
import { readFields } from './request-fields.js';

export interface LibrarySampleJson {
  id: number;
  /** When it was enrolled (ISO 8601, UTC), as /trainer/export/ writes it. */
  created: string;
  /** The kept face crop, base64 JPEG (at most 448 px a side); null when the server keeps no crops. */
  crop: string | null;
  /** The face box inside the crop. */
  crop_rect: [number, number, number, number] | null;
  /** face_side: the face box's shorter side in the crop; sharpness: variance of the Laplacian (sample-quality.ts). */
  quality: { face_side: number; sharpness: number } | null;
}

export function librarySample(s: LibrarySample): LibrarySampleJson {
  return {
    id: s.id,
    created: new Date(s.createdAt).toISOString(),
    crop: s.crop ? s.crop.toString('base64') : null,
    crop_rect: s.cropRect,
    quality: s.quality ? { face_side: s.quality.faceSide, sharpness: s.quality.sharpness } : null,
  };
}

/** The optional `id` field: a sample id (a positive integer); 400 otherwise. */
export function sampleIdField(text: string | undefined): number | undefined {
  if (text === undefined) return undefined;
  const trimmed = text.trim();
  if (!/^\d{1,15}$/.test(trimmed)) throw new HttpError(400, "'id' must be a sample id (a positive integer)");
  return Number(trimmed);
}

/** The listing's `limit` query field: 1..MAX_PAGE_LIMIT, DEFAULT_PAGE_LIMIT when absent; 400 otherwise. */
function pageLimit(text: string | undefined): number {
  if (text === undefined) return DEFAULT_PAGE_LIMIT;
  const n = /^\d{1,6}$/.test(text.trim()) ? Number(text.trim()) : NaN;
  if (!(n >= 1 && n <= MAX_PAGE_LIMIT)) throw new HttpError(400, `'limit' must be a whole number from 1 to ${MAX_PAGE_LIMIT}`);
  return n;
}

/** The listing's `after` query field: a sample id (the previous page's next_after), 0 when absent; 400 otherwise. */
function pageAfter(text: string | undefined): number {
  if (text === undefined) return 0;
  if (!/^\d{1,15}$/.test(text.trim())) throw new HttpError(400, "'after' must be a sample id (the previous page's next_after)");
  return Number(text.trim());
}

export function faceLibraryRoutes(deps: { service: RecognitionService; admin: MiddlewareHandler }): Hono {
  const { service, admin } = deps;
  return new Hono()
    .get('/samples', admin, async (c) => {
      const subject = c.req.query('subject');
      if (subject === undefined) throw new HttpError(400, "missing 'subject': GET /trainer/samples/?subject=<name>");
      const limit = pageLimit(c.req.query('limit'));
      const after = pageAfter(c.req.query('after'));
      const page = await recognitionCall(() => service.samplesOf(subject, { after, limit }));
      if (page.total === 0) throw new HttpError(404, `no subject '${subject}'`);
      return c.json({ success: 'true', subject, samples: page.samples.map(librarySample), total: page.total, limit, next_after: page.next });
    })
    .post('/move', admin, async (c) => {
      const fields = await readFields(c, ['subject', 'id', 'to']);
      const subject = fields.get('subject');
      const to = fields.get('to');
      const id = sampleIdField(fields.get('id'));
      if (subject === undefined) throw new HttpError(400, "missing 'subject' (the sample's subject now)");
      if (id === undefined) throw new HttpError(400, "missing 'id' (the sample to move)");
      if (to === undefined || to === '') throw new HttpError(400, "missing 'to' (the subject to give the sample to)");
      const moved = await recognitionCall(() => service.move(subject, id, to));
      if (!moved) throw new HttpError(404, `subject '${subject}' has no sample ${id}`);
      return c.json({ success: 'true', subject, id, to });
    });
}
