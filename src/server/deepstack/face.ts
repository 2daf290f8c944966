// DeepStack faces, on edgecv's engine and gallery (the same samples the /trainer routes manage):
//   POST /v1/vision/face[/]          image, min_confidence (default 0.55)
//        -> {"success":true,"predictions":[{"confidence":0.98,"x_min":..,"y_min":..,"x_max":..,"y_max":..}],"duration":0}
//   POST /v1/vision/face/recognize   image, min_confidence (default 0.67, on the similarity of similarity.ts)
//        -> {"success":true,"predictions":[{"userid":"alice","confidence":0.83,"x_min":..,...}],"duration":0}
//           every face, "userid":"unknown","confidence":0 when no enrolled subject passes
//   POST /v1/vision/face/register    userid + any number of image files under any part names (admin)
//        -> {"success":true,"message":"face added","duration":0}; every photo is kept as its own sample
//   POST /v1/vision/face/list        -> {"success":true,"faces":["alice","bob"],"duration":0}
//   POST /v1/vision/face/delete      userid (admin) -> {"success":true,"duration":0}, also for an unknown user

import type { Context, Hono } from 'hono';
import { EnrolmentError, type RecognitionService } from '../../gallery/recognition-service.js';
import { adminCheck } from '../admin-auth.js';
import { engineErrorCode, type FaceEngine } from '../engine-types.js';
import { HttpError } from '../errors.js';
import { observeInference } from '../prometheus.js';
import { recognitionCall, recognitionHttpError } from '../recognition-errors.js';
import { resource } from '../routing.js';
import { dsHandler, dsReply, INVALID_IMAGE, NO_IMAGE } from './reply.js';
import { formAdminKey, minConfidence, readDeepStackRequest, requestImage, userId, type DeepStackRequest } from './request.js';
import { DEEPSTACK_RECOGNITION_THRESHOLD, similarityFromDistance } from './similarity.js';

export const FACE_DETECTION_MIN_CONFIDENCE = 0.55;

type Box = [number, number, number, number];
const box = (r: Box) => ({ x_min: r[0], y_min: r[1], x_max: r[2], y_max: r[3] });

/** Enrols each photo as its own sample; photos without exactly one face are skipped, as DeepStack skips them. */
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
        firstFailure ??= e.reason === 'no-face' ? 'no face detected' : 'more than one face detected: register photos of this person alone';
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

export function registerDeepStackFaceRoutes(
  app: Hono,
  deps: {
    engine: FaceEngine;
    recognition?: RecognitionService;
    adminKey?: string;
    guard: (c: Context, req: DeepStackRequest) => void;
  },
): void {
  const { engine, guard } = deps;
  const requireAdmin = adminCheck(deps.adminKey);
  const service = (): RecognitionService => {
    if (!deps.recognition) throw new HttpError(403, 'face recognition is not enabled on this server');
    return deps.recognition;
  };
  /** Reads the form and checks the API key: the first step of every route. */
  const open = async (c: Context) => {
    const req = await readDeepStackRequest(c);
    guard(c, req);
    return req;
  };

  resource(app, '/v1/vision/face/', {
    POST: dsHandler(async (c) => {
      const req = await open(c);
      const image = requestImage(req);
      const result = await engine.detectFaces(image, { scoreThreshold: minConfidence(req, FACE_DETECTION_MIN_CONFIDENCE) });
      observeInference(engine.models?.faceDetector ?? 'face-detector', engine.backend().backend, result.timings);
      const predictions = [...result.faces].sort((a, b) => b.score - a.score).map((f) => ({ confidence: f.score, ...box(f.rect) }));
      return dsReply(c, { success: true, predictions });
    }),
  });

  resource(app, '/v1/vision/face/recognize', {
    POST: dsHandler(async (c) => {
      const req = await open(c);
      const image = requestImage(req);
      const threshold = minConfidence(req, DEEPSTACK_RECOGNITION_THRESHOLD);
      const recognition = service();
      const { faces, timings } = await recognitionCall(() => recognition.identify(image));
      observeInference(recognition.embedder.model, engine.backend().backend, timings);
      const predictions = faces.map((f) => {
        const similarity = f.match ? similarityFromDistance(f.match.distance) : 0;
        return f.match && similarity >= threshold
          ? { userid: f.match.subject, confidence: similarity, ...box(f.rect) }
          : { userid: 'unknown', confidence: 0, ...box(f.rect) };
      });
      return dsReply(c, { success: true, predictions });
    }),
  });

  resource(app, '/v1/vision/face/register', {
    POST: dsHandler(async (c) => {
      const req = await open(c);
      requireAdmin(c, formAdminKey(req));
      if (req.files.length === 0) throw new HttpError(400, NO_IMAGE);
      const subject = userId(req);
      await registerPhotos(service(), subject, req.files.map((f) => f.bytes));
      return dsReply(c, { success: true, message: 'face added' });
    }),
  });

  resource(app, '/v1/vision/face/list', {
    POST: dsHandler(async (c) => {
      await open(c);
      return dsReply(c, { success: true, faces: service().subjects().map((s) => s.subject) });
    }),
  });

  resource(app, '/v1/vision/face/delete', {
    POST: dsHandler(async (c) => {
      const req = await open(c);
      requireAdmin(c, formAdminKey(req));
      const subject = userId(req);
      const recognition = service();
      await recognitionCall(() => recognition.remove(subject));
      return dsReply(c, { success: true });
    }),
  });
}
