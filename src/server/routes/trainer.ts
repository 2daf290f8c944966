// Enrolment: the gallery's routes. All but GET /trainer/subjects/ need the admin (requireAdmin, admin-auth.ts).
//   POST /trainer/add/      subject + image (multipart, urlencoded base64, or a raw image body with ?subject=)
//                           -> {"success":"true","subject":"alice","id":17,"samples":3,"rect":[l,t,r,b],"rects":[[l,t,r,b]],...times}
//                           a photo that would make a poor sample: 200 {"success":"false","reason":"No face detected"
//                           (or "More than 1 face", "Face too small: ...", "Face too blurred: ...": enrolment-check.ts),
//                           ...times}, the original training server's answer (its clients take any other status for
//                           a lost connection)
//   POST /trainer/train/    subject (owner_name, owner_id ignored) -> {"success":"true",...times}: the original
//                           server's retraining step; edgecv's gallery is up to date after every add, so it only
//                           checks the subject exists (404 otherwise; the original answered 400)
//   POST /trainer/predict/  the original server's path of /recognizer/predict/ (recognizer.ts, mounted in app.ts)
//   GET  /trainer/subjects/ -> {"success":"true","subjects":[{"subject":"alice","samples":3,"ids":[4,9,17]}]}
//   POST /trainer/remove/   subject, optional id (query, urlencoded, multipart or JSON)
//                           -> {"success":"true","subject":"alice","removed":[4,9,17]}; 404 when nothing matched
//   GET  /trainer/samples/, POST /trainer/move/: the face library (face-library.ts)
//   POST /trainer/import/   JSON lines (gallery/jsonl.ts); ?mode=append (default) or replace
//                           -> {"success":"true","added":55,"samples":55}
//   GET  /trainer/export/   JSON lines of every stored sample

import { Hono } from 'hono';
import { stream } from 'hono/streaming';
import { JSONL_MEDIA_TYPE } from '../../gallery/jsonl.js';
import { EnrolmentError, type RecognitionService } from '../../gallery/recognition-service.js';
import { requireAdmin } from '../admin-auth.js';
import { HttpError } from '../errors.js';
import { mediaType, readImageInput } from '../image-input.js';
import { elapsedMs } from '../inference-route.js';
import { recognitionCall, recognitionHttpError } from '../recognition-errors.js';
import { faceLibraryRoutes, sampleIdField } from './face-library.js';
import { checkFormFields, readFields } from './request-fields.js';

const JSONL_TYPES = new Set([JSONL_MEDIA_TYPE, 'application/jsonl', 'application/json-lines', 'application/x-jsonlines', 'text/plain']);

/** Mounted at /trainer. */
export function trainerRoutes(deps: { recognition: RecognitionService; adminKey?: string }): Hono {
  const admin = requireAdmin(deps.adminKey);
  const service = deps.recognition;

  return new Hono()
    .post('/add', admin, async (c) => {
      const t0 = performance.now();
      const { bytes, fields, form } = await readImageInput(c);
      if (form) checkFormFields(form, ['subject']);
      const subject = fields.get('subject') ?? c.req.query('subject');
      if (subject === undefined) throw new HttpError(400, "missing 'subject': send it as a form field, or as ?subject= with a raw image body");
      let r;
      try {
        r = await service.enrol(subject, bytes);
      } catch (e) {
        if (!(e instanceof EnrolmentError)) throw recognitionHttpError(e);
        const ms = elapsedMs(t0);
        return c.json({ success: 'false', reason: e.message, serverprocessingtime: ms, server_processing_time: ms });
      }
      const ms = elapsedMs(t0);
      return c.json({
        success: 'true',
        subject: r.subject,
        id: r.id,
        samples: r.samples,
        rect: r.rect,
        rects: [r.rect],
        serverprocessingtime: ms,
        server_processing_time: ms,
      });
    })
    .post('/train', admin, async (c) => {
      const t0 = performance.now();
      const subject = (await readFields(c, ['subject'])).get('subject');
      if (subject === undefined || subject === '') throw new HttpError(400, "missing 'subject'");
      if (!service.subjects().some((s) => s.subject === subject)) throw new HttpError(404, `no subject '${subject}'`);
      const ms = elapsedMs(t0);
      return c.json({ success: 'true', serverprocessingtime: ms, server_processing_time: ms });
    })
    .get('/subjects', (c) => c.json({ success: 'true', subjects: service.subjects() }))
    .post('/remove', admin, async (c) => {
      // A present id that is malformed is a 400 (readFields, sampleIdField), never "the whole subject".
      const fields = await readFields(c, ['subject', 'id']);
      const subject = fields.get('subject');
      if (subject === undefined) throw new HttpError(400, "missing 'subject'");
      const id = sampleIdField(fields.get('id'));
      const removed = await recognitionCall(() => service.remove(subject, id));
      if (removed.length === 0) {
        throw new HttpError(404, id === undefined ? `no subject '${subject}'` : `subject '${subject}' has no sample ${id}`);
      }
      return c.json({ success: 'true', subject, removed });
    })
    .route('/', faceLibraryRoutes({ service, admin }))
    .post('/import', admin, async (c) => {
      const type = mediaType(c.req.header('content-type'));
      if (!JSONL_TYPES.has(type)) throw new HttpError(415, `send the gallery as JSON lines (Content-Type ${JSONL_MEDIA_TYPE})`);
      const mode = c.req.query('mode') ?? 'append';
      if (mode !== 'append' && mode !== 'replace') throw new HttpError(400, "mode must be 'append' or 'replace'");
      let text: string;
      try {
        text = await c.req.text();
      } catch (e) {
        throw new HttpError(400, `could not read the request body: ${(e as Error).message}`);
      }
      const r = await recognitionCall(() => service.import(text, mode === 'replace'));
      return c.json({ success: 'true', added: r.added, samples: r.total });
    })
    .get('/export', admin, (c) => {
      c.header('Content-Type', JSONL_MEDIA_TYPE);
      c.header('Content-Disposition', 'attachment; filename="edgecv-gallery.jsonl"');
      return stream(c, async (s) => {
        for await (const line of service.exportLines()) await s.write(line);
      });
    });
}
