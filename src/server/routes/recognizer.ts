// POST /recognizer/predict/ (also /trainer/predict/, the original training server's path): who is the first face
// (highest detection score) in the photo?
//   match:   {"success":"true","subject":"alice","confidence":"57.31","rect":[l,t,r,b],
//             "serverprocessingtime":"12.345","server_processing_time":"12.345"}
//   no face: {"success":"false","serverprocessingtime":"12.345","server_processing_time":"12.345"}
//   a face too small or too blurred to judge (src/gallery/recognition-quality.ts): no name, the reason and the face:
//            {"success":"false","reason":"Face too small: 24 px, at least 28 px","rect":[l,t,r,b],"serverprocessingtime":...}
// confidence: the calibrated distance to the nearest enrolled sample, 2 decimals; 0 = identical, lower is better;
// the nearest subject is always returned, and 105 is the equal-error-rate threshold (clients call more "Unknown").
// Errors: 409 nobody enrolled, 503 + Retry-After during a training data update, and the image errors of detection.

import { Hono } from 'hono';
import type { RecognitionService } from '../../gallery/recognition-service.js';
import type { FaceEngine } from '../engine-types.js';
import { imageRoute } from '../inference-route.js';
import { recognitionCall } from '../recognition-errors.js';

export interface PredictResponse {
  success: 'true' | 'false';
  subject?: string;
  confidence?: string;
  rect?: [number, number, number, number];
  /** With success "false": why the face found is not judged (too small, too blurred). */
  reason?: string;
  serverprocessingtime: string;
  server_processing_time: string;
}

/** Mounted at /recognizer and /trainer. */
export function recognizerRoutes(deps: { recognition: RecognitionService; engine: FaceEngine }): Hono {
  const { recognition, engine } = deps;
  return new Hono().post(
    '/predict',
    imageRoute({
      engine,
      model: () => recognition.embedder.model,
      run: (_c, { bytes }) => recognitionCall(() => recognition.predict(bytes)),
      reply: (prediction, ms): PredictResponse =>
        prediction.face && prediction.unjudged !== null
          ? { success: 'false', reason: prediction.unjudged, rect: prediction.face.rect, serverprocessingtime: ms, server_processing_time: ms }
          : prediction.face
            ? {
                success: 'true',
                subject: prediction.subject,
                confidence: prediction.distance.toFixed(2),
                rect: prediction.face.rect,
                serverprocessingtime: ms,
                server_processing_time: ms,
              }
            : { success: 'false', serverprocessingtime: ms, server_processing_time: ms },
    }),
  );
}
