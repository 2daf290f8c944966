// POST /detector/detect/ : face rectangles.
//   faces:    {"success":"true","serverprocessingtime":"12.345","server_processing_time":"12.345","rects":[[l,t,r,b],...]}
//   no faces: {"success":"false","serverprocessingtime":"12.345","server_processing_time":"12.345"}
// serverprocessingtime: milliseconds from the handler starting on the request (body reading included)
// to the answer, 3 decimals, as a string (inference-route.ts).

import { Hono } from 'hono';
import type { FaceEngine } from '../engine-types.js';
import { imageRoute } from '../inference-route.js';

export interface DetectResponse {
  success: 'true' | 'false';
  serverprocessingtime: string;
  server_processing_time: string;
  rects?: [number, number, number, number][];
}

/** Mounted at /detector. */
export function detectorRoutes(deps: { engine: FaceEngine }): Hono {
  const { engine } = deps;
  return new Hono().post(
    '/detect',
    imageRoute({
      engine,
      model: () => engine.models?.faceDetector ?? 'face-detector',
      run: (_c, { bytes }) => engine.detectFaces(bytes),
      reply: (result, ms): DetectResponse => {
        // The engine already gives integer rects clipped to the image.
        const rects = result.faces.map((f) => f.rect);
        return rects.length > 0
          ? { success: 'true', serverprocessingtime: ms, server_processing_time: ms, rects }
          : { success: 'false', serverprocessingtime: ms, server_processing_time: ms };
      },
    }),
  );
}
