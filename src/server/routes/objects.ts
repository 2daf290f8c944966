// POST /object/detect/ : COCO objects.
//   found:   {"success":"true","serverprocessingtime":"12.345","server_processing_time":"12.345","gpu_support":false,"objects":[{"rect":[l,t,r,b],"class":"dog","confidence":"0.873"}, ...]}
//   nothing: {"success":"false","serverprocessingtime":"12.345","server_processing_time":"12.345","gpu_support":false}
// server_processing_time: the original server's spelling, the only one its multi_client.py reads.
//   errors:  {"success":"false","error":"...","gpu_support":false} for everything this sub-app's handler throws (its onError;
//            the 413 of the body-size middleware, 404 and 405 are answered outside it and keep the plain error shape)
// rect: integer image pixels, not clipped (negative where a box crosses the image edge).
// Optional parameter (query or form field): threshold (minimum score, 0..1).

import { Hono } from 'hono';
import { onGpu } from '../gpu-support.js';
import type { PoseObjectEngine } from '../engine-types.js';
import { requestError } from '../error-handler.js';
import { errorBody } from '../errors.js';
import { imageRoute } from '../inference-route.js';
import { unitParameter } from './detection-options.js';

export interface ObjectJson {
  rect: [number, number, number, number];
  class: string;
  /** A number in 0..1, 3 decimals, as a string. */
  confidence: string;
}

export interface ObjectResponse {
  success: 'true' | 'false';
  serverprocessingtime: string;
  server_processing_time: string;
  gpu_support: boolean;
  objects?: ObjectJson[];
}

/** Mounted at /object. */
export function objectRoutes(deps: { engine: PoseObjectEngine }): Hono {
  const { engine } = deps;
  const gpuSupport = () => onGpu(engine.backend(), ['objectDetector']);
  const app = new Hono().post(
    '/detect',
    imageRoute({
      engine,
      model: () => engine.models?.objects ?? 'objects',
      run: (c, { bytes, fields }) => engine.detectObjects(bytes, { scoreThreshold: unitParameter(c, fields, 'threshold') }),
      reply: (result, ms): ObjectResponse => {
        const objects = result.objects.map((o): ObjectJson => ({
          rect: o.rect.map(Math.round) as ObjectJson['rect'],
          class: o.className,
          confidence: o.score.toFixed(3),
        }));
        return objects.length > 0
          ? { success: 'true', serverprocessingtime: ms, server_processing_time: ms, gpu_support: gpuSupport(), objects }
          : { success: 'false', serverprocessingtime: ms, server_processing_time: ms, gpu_support: gpuSupport() };
      },
    }),
  );
  // Errors of this route carry gpu_support too.
  app.onError((err, c) => {
    const e = requestError(err, c);
    return c.json({ ...errorBody(e.message), gpu_support: gpuSupport() }, e.status, e.headers);
  });
  return app;
}
