// POST /object/detect/ : COCO objects.
//   found:   {"success":"true","serverprocessingtime":"12.345","gpu_support":false,"objects":[{"rect":[l,t,r,b],"class":"dog","confidence":"0.873"}, ...]}
//   nothing: {"success":"false","serverprocessingtime":"12.345","gpu_support":false}
//   errors:  {"success":"false","error":"...","gpu_support":false} for everything this handler sees (the 413 of the
//            body-size middleware, 404 and 405 are answered before it and keep the plain error shape)
// rect: integer image pixels, not clipped (negative where a box crosses the image edge).
// Optional parameter (query or form field): threshold (minimum score, 0..1).

import type { Context, Hono } from 'hono';
import type { PoseObjectEngine } from '../engine-types.js';
import { errorBody, toHttpError } from '../errors.js';
import { readImageInput } from '../image-input.js';
import { observeInference } from '../prometheus.js';
import { resource } from '../routing.js';
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
  gpu_support: boolean;
  objects?: ObjectJson[];
}

export function registerObjectRoutes(app: Hono, deps: { engine: PoseObjectEngine }): void {
  const detect = async (c: Context) => {
    const gpuSupport = deps.engine.backend().backend === 'cuda';
    try {
      const t0 = performance.now();
      const { bytes, fields } = await readImageInput(c);
      const result = await deps.engine.detectObjects(bytes, { scoreThreshold: unitParameter(c, fields, 'threshold') });
      observeInference(deps.engine.models?.objects ?? 'objects', deps.engine.backend().backend, result.timings);
      const objects = result.objects.map(
        (o): ObjectJson => ({
          rect: o.rect.map(Math.round) as ObjectJson['rect'],
          class: o.className,
          confidence: o.score.toFixed(3),
        }),
      );
      const ms = (performance.now() - t0).toFixed(3);
      const body: ObjectResponse =
        objects.length > 0
          ? { success: 'true', serverprocessingtime: ms, gpu_support: gpuSupport, objects }
          : { success: 'false', serverprocessingtime: ms, gpu_support: gpuSupport };
      return c.json(body);
    } catch (e) {
      const error = toHttpError(e);
      if (error.status >= 500 && error.status !== 503) console.error(`[edgecv] POST ${c.req.path} failed:`, e);
      return c.json({ ...errorBody(error.message), gpu_support: gpuSupport }, error.status, error.headers);
    }
  };
  resource(app, '/object/detect/', { POST: detect });
}
