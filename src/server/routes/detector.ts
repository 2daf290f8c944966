// POST /detector/detect/ : face rectangles.
//   faces:    {"success":"true","serverprocessingtime":"12.345","server_processing_time":"12.345","rects":[[l,t,r,b],...]}
//   no faces: {"success":"false","serverprocessingtime":"12.345","server_processing_time":"12.345"}
// serverprocessingtime: milliseconds from the handler starting on the request (body reading included)
// to the answer, 3 decimals, as a string.

import type { Hono } from 'hono';
import type { FaceEngine } from '../engine-types.js';
import { readImageInput } from '../image-input.js';
import { observeInference } from '../prometheus.js';
import { resource } from '../routing.js';

export interface DetectResponse {
  success: 'true' | 'false';
  serverprocessingtime: string;
  server_processing_time: string;
  rects?: [number, number, number, number][];
}

export function registerDetectorRoutes(app: Hono, deps: { engine: FaceEngine }): void {
  resource(app, '/detector/detect/', {
    POST: async (c) => {
      const t0 = performance.now();
      const { bytes } = await readImageInput(c);
      const result = await deps.engine.detectFaces(bytes);
      observeInference(deps.engine.models?.faceDetector ?? 'face-detector', deps.engine.backend().backend, result.timings);
      // The engine already gives integer rects clipped to the image.
      const rects = result.faces.map((f) => f.rect);
      const ms = (performance.now() - t0).toFixed(3);
      const body: DetectResponse =
        rects.length > 0
          ? { success: 'true', serverprocessingtime: ms, server_processing_time: ms, rects }
          : { success: 'false', serverprocessingtime: ms, server_processing_time: ms };
      return c.json(body);
    },
  });
}
