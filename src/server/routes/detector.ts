// POST /detector/detect/ : face rectangles.
//   faces:    {"success":"true","serverprocessingtime":"12.345","server_processing_time":"12.345","rects":[[l,t,r,b],...]}
//   no faces: {"success":"false","serverprocessingtime":"12.345","server_processing_time":"12.345"}
// serverprocessingtime: milliseconds from the handler starting on the request (body reading included)
// to the answer, 3 decimals, as a string.

import type { Hono } from 'hono';
import type { FaceEngine, Rect } from '../engine-types.js';
import { readImageInput } from '../image-input.js';
import { resource } from '../routing.js';

export interface DetectResponse {
  success: 'true' | 'false';
  serverprocessingtime: string;
  server_processing_time: string;
  rects?: [number, number, number, number][];
}

function clamp(v: number, max: number): number {
  return Math.min(Math.max(Math.round(v), 0), max);
}

/** Integer [l,t,r,b] inside the image. */
export function toIntRect(rect: Rect, width: number, height: number): [number, number, number, number] {
  const [l = 0, t = 0, r = 0, b = 0] = rect;
  return [clamp(l, width), clamp(t, height), clamp(r, width), clamp(b, height)];
}

export function registerDetectorRoutes(app: Hono, deps: { engine: FaceEngine }): void {
  resource(app, '/detector/detect/', {
    POST: async (c) => {
      const t0 = performance.now();
      const { bytes } = await readImageInput(c);
      const result = await deps.engine.detectFaces(bytes);
      const rects = result.faces.map((f) => toIntRect(f.rect, result.width, result.height));
      const ms = (performance.now() - t0).toFixed(3);
      const body: DetectResponse =
        rects.length > 0
          ? { success: 'true', serverprocessingtime: ms, server_processing_time: ms, rects }
          : { success: 'false', serverprocessingtime: ms, server_processing_time: ms };
      return c.json(body);
    },
  });
}
