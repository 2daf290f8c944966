// DeepStack faces, on edgecv's engine and gallery (the same samples the /trainer routes manage):
//   POST /v1/vision/face[/]          image, min_confidence (default 0.55)
//        -> {"success":true,"predictions":[{"confidence":0.98,"x_min":..,"y_min":..,"x_max":..,"y_max":..}],"duration":0}
//   POST /v1/vision/face/recognize   image, min_confidence (default 0.67, on the similarity of similarity.ts)
//        -> {"success":true,"predictions":[{"userid":"alice","confidence":0.83,"x_min":..,...}],"duration":0}
//           every face, "userid":"unknown","confidence":0 when no enrolled subject passes; a face too small or too
//           blurred to judge is "unknown" with a "reason" (src/gallery/recognition-quality.ts)
//   POST /v1/vision/face/register    userid + any number of image files under any part names (API key: index.ts)
//        -> {"success":true,"message":"face added","duration":0}; every photo is kept as its own sample
//   POST /v1/vision/face/list        -> {"success":true,"faces":["alice","bob"],"duration":0}
//   POST /v1/vision/face/delete      userid (API key) -> {"success":true,"duration":0}, also for an unknown user
//   POST /v1/vision/face/match       image1, image2 -> {"success":true,"similarity":0.83,...} (face-match.ts)
// The routes that run a model also answer CodeProject.AI's inferenceMs and processMs (timing.ts).

import { Hono, type MiddlewareHandler } from 'hono';
import { EnrolmentError, type RecognitionService } from '../../gallery/recognition-service.js';
import { engineErrorCode, type FaceEngine } from '../engine-types.js';
import { HttpError } from '../errors.js';
import { observed } from '../inference-route.js';
import { recognitionCall, recognitionHttpError } from '../recognition-errors.js';
import { faceMatch } from './face-match.js';
import { dsReply, INVALID_IMAGE, NO_IMAGE } from './reply.js';
import { minConfidence, requestImage, userId, type DeepStackEnv } from './request.js';
import { DEEPSTACK_RECOGNITION_THRESHOLD, similarityFromDistance } from './similarity.js';
import { codeProjectTimes, modelMs } from './timing.js';

export const FACE_DETECTION_MIN_CONFIDENCE = 0.55;

type Box = [number, number, number, number];
const box = (r: Box) => ({ x_min: r[0], y_min: r[1], x_max: r[2], y_max: r[3] });

/**
 * Enrols each photo as its own sample; photos without exactly one face, or with a face too small or too blurred
 * (EnrolmentError), are skipped, as DeepStack skips faceless ones.
 */
async function registerPhotos(service: RecognitionService, subject: string, photos: Buffer[]): Promise<number> {
  let added = 0;
  let firstFailure: string | undefined;
  for (const photo of photos) {
    try {
      await service.enrol(subject, photo);
      added++;
    } catch (e) {
      const code = engineErrorCode(e);
      if (e instanceof EnrolmentError) {
        firstFailure ??=
          e.reason === 'no-face'
            ? 'no face detected'
            : e.reason === 'multiple-faces'
              ? 'more than one face detected: register photos of this person alone'
              : e.message;
      } else if (code === 'INVALID_IMAGE' || code === 'UNSUPPORTED_FORMAT') {
        firstFailure ??= INVALID_IMAGE;
      } else {
        throw recognitionHttpError(e);
      }
    }
  }
  if (added === 0) throw new HttpError(400, firstFailure ?? NO_IMAGE);
  return added;
}

/** Mounted at /v1/vision; `open` reads the request and checks the API key (request.ts). */
export function deepStackFaceRoutes(deps: {
  engine: FaceEngine;
  recognition?: RecognitionService;
  /** The key check of register and delete (enrolmentGuard, request.ts). */
  enrolment: MiddlewareHandler;
  open: MiddlewareHandler;
}): Hono<DeepStackEnv> {
  const { engine, open } = deps;
  const admin = deps.enrolment;
  const service = (): RecognitionService => {
    if (!deps.recognition) throw new HttpError(403, 'face recognition is not enabled on this server');
    return deps.recognition;
  };

  return new Hono<DeepStackEnv>()
    .post('/face', open, async (c) => {
      const t0 = performance.now();
      const req = c.get('deepstack');
      const image = requestImage(req);
      const model = engine.models?.faceDetector ?? 'face-detector';
      const result = await observed(engine, model, engine.detectFaces(image, { scoreThreshold: minConfidence(req, FACE_DETECTION_MIN_CONFIDENCE) }));
      const predictions = [...result.faces].sort((a, b) => b.score - a.score).map((f) => ({ confidence: f.score, ...box(f.rect) }));
      return dsReply(c, { success: true, predictions, ...codeProjectTimes(t0, modelMs(result.timings)) });
    })
    .post('/face/recognize', open, async (c) => {
      const t0 = performance.now();
      const req = c.get('deepstack');
      const image = requestImage(req);
      const threshold = minConfidence(req, DEEPSTACK_RECOGNITION_THRESHOLD);
      const recognition = service();
      const { faces, timings } = await observed(
        engine,
        recognition.embedder.model,
        recognitionCall(() => recognition.identify(image)),
      );
      const predictions = faces.map((f) => {
        // a face too poor to judge: "unknown" as DeepStack answers it, and why (an added field)
        if (f.unjudged !== null) return { userid: 'unknown', confidence: 0, ...box(f.rect), reason: f.unjudged };
        const similarity = f.match ? similarityFromDistance(f.match.distance) : 0;
        return f.match && similarity >= threshold
          ? { userid: f.match.subject, confidence: similarity, ...box(f.rect) }
          : { userid: 'unknown', confidence: 0, ...box(f.rect) };
      });
      return dsReply(c, { success: true, predictions, ...codeProjectTimes(t0, modelMs(timings)) });
    })
    .post('/face/register', open, admin, async (c) => {
      const req = c.get('deepstack');
      if (req.files.length === 0) throw new HttpError(400, NO_IMAGE);
      const subject = userId(req);
      await registerPhotos(
        service(),
        subject,
        req.files.map((f) => f.bytes),
      );
      return dsReply(c, { success: true, message: 'face added' });
    })
    .post('/face/match', open, (c) => faceMatch(c, engine, service()))
    .post('/face/list', open, (c) =>
      dsReply(c, {
        success: true,
        faces: service()
          .subjects()
          .map((s) => s.subject),
      }),
    )
    .post('/face/delete', open, admin, async (c) => {
      const subject = userId(c.get('deepstack'));
      const recognition = service();
      await recognitionCall(() => recognition.remove(subject));
      return dsReply(c, { success: true });
    });
}
