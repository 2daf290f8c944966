// POST /recognizer/predict/ : who is the first face (highest detection score) in the photo?
//   match:   {"success":"true","subject":"alice","confidence":"57.31","rect":[l,t,r,b],
//             "serverprocessingtime":"12.345","server_processing_time":"12.345"}
//   no face: {"success":"false","serverprocessingtime":"12.345"}
// confidence: the calibrated distance to the nearest enrolled sample, 2 decimals; 0 = identical, lower is better;
// the nearest subject is always returned, and 105 is the equal-error-rate threshold (clients call more "Unknown").
// Errors: 409 nobody enrolled, 503 + Retry-After during a training data update, and the image errors of detection.

import type { Hono } from 'hono';
import type { RecognitionService } from '../../gallery/recognition-service.js';
import type { FaceEngine } from '../engine-types.js';
import { readImageInput } from '../image-input.js';
import { observeInference } from '../prometheus.js';
import { recognitionHttpError } from '../recognition-errors.js';
import { resource } from '../routing.js';

export interface PredictResponse {
  success: 'true' | 'false';
  subject?: string;
  confidence?: string;
  rect?: [number, number, number, number];
  serverprocessingtime: string;
  server_processing_time?: string;
}

export function registerRecognizerRoutes(app: Hono, deps: { recognition: RecognitionService; engine: FaceEngine }): void {
  resource(app, '/recognizer/predict/', {
    POST: async (c) => {
      const t0 = performance.now();
      const { bytes } = await readImageInput(c);
      let prediction;
      try {
        prediction = await deps.recognition.predict(bytes);
      } catch (e) {
        throw recognitionHttpError(e);
      }
      observeInference(deps.recognition.embedder.model, deps.engine.backend().backend, prediction.timings);
      const ms = (performance.now() - t0).toFixed(3);
      const body: PredictResponse = prediction.face
        ? {
            success: 'true',
            subject: prediction.subject,
            confidence: prediction.distance.toFixed(2),
            rect: prediction.face.rect,
            serverprocessingtime: ms,
            server_processing_time: ms,
          }
        : { success: 'false', serverprocessingtime: ms };
      return c.json(body);
    },
  });
}
