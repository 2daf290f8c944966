// DeepStack object detection:
//   POST /v1/vision/detection      image, min_confidence (default 0.40), limit (default 20)
//   POST /v1/vision/custom/<model> the same, with a model by name (404 for a name the server does not have)
//   POST /v1/vision/custom/list    -> {"success":true,"models":["yolov5s"],"duration":0}
// -> {"success":true,"predictions":[{"label":"dog","confidence":0.87,"x_min":..,"y_min":..,"x_max":..,"y_max":..}],
//     "inferenceMs":23,"processMs":25,"duration":0}   (CodeProject.AI's timing fields: timing.ts)
// Predictions are sorted by confidence, highest first (Frigate stops at the first one under its threshold and has
// room for 20), boxes are integer pixels of the posted image clipped to it, labels are COCO names in lower case
// with spaces ("traffic light").

import { Hono, type Context, type MiddlewareHandler } from 'hono';
import { ENGINE_RANGES } from '../../engine/limits.js';
import type { ObjectDetection } from '../../engine/types.js';
import type { PoseObjectEngine } from '../engine-types.js';
import { HttpError } from '../errors.js';
import { observed } from '../inference-route.js';
import { customModels, hasObjectModel, type ObjectModelRun } from './models.js';
import { dsReply } from './reply.js';
import { limitField, minConfidence, requestImage, type DeepStackEnv } from './request.js';
import { codeProjectTimes, modelMs } from './timing.js';

// maxLimit: what the engine accepts as maxObjects.
export const DETECTION_DEFAULTS = { minConfidence: 0.4, limit: 20, maxLimit: ENGINE_RANGES.maxObjects.max } as const;

export interface ObjectPrediction {
  label: string;
  confidence: number;
  x_min: number;
  y_min: number;
  x_max: number;
  y_max: number;
}

const clip = (v: number, max: number) => Math.min(max, Math.max(0, Math.round(v)));

export function objectPredictions(result: ObjectDetection, limit: number): ObjectPrediction[] {
  return [...result.objects]
    .sort((a, b) => b.score - a.score)
    .slice(0, limit)
    .map((o) => ({
      label: o.className,
      confidence: o.score,
      x_min: clip(o.rect[0], result.width),
      y_min: clip(o.rect[1], result.height),
      x_max: clip(o.rect[2], result.width),
      y_max: clip(o.rect[3], result.height),
    }));
}

/** Mounted at /v1/vision; `open` reads the request and checks the API key (request.ts). */
export function deepStackDetectionRoutes(deps: { engine: PoseObjectEngine; open: MiddlewareHandler }): Hono<DeepStackEnv> {
  const { engine, open } = deps;

  const detect = async (c: Context<DeepStackEnv>, model: string, run: ObjectModelRun) => {
    const t0 = performance.now();
    const req = c.get('deepstack');
    const image = requestImage(req);
    const scoreThreshold = minConfidence(req, DETECTION_DEFAULTS.minConfidence);
    const limit = limitField(req, DETECTION_DEFAULTS.limit, DETECTION_DEFAULTS.maxLimit);
    const result = await observed(engine, model, run(image, { scoreThreshold, maxObjects: limit }));
    return dsReply(c, { success: true, predictions: objectPredictions(result, limit), ...codeProjectTimes(t0, modelMs(result.timings)) });
  };

  return (
    new Hono<DeepStackEnv>()
      .post('/detection', open, (c) => {
        if (!hasObjectModel(engine)) throw new HttpError(403, 'object detection is not enabled on this server');
        return detect(c, engine.models?.objects ?? 'objects', (image, opts) => engine.detectObjects(image, opts));
      })
      // Before /custom/:model, which would otherwise take "list" for a model name.
      .post('/custom/list', open, (c) => dsReply(c, { success: true, models: [...customModels(engine).keys()] }))
      .post('/custom/:model', open, (c) => {
        const name = c.req.param('model');
        if (!/^[A-Za-z0-9._-]{1,128}$/.test(name)) throw new HttpError(400, 'invalid model name');
        const run = customModels(engine).get(name);
        if (!run) throw new HttpError(404, `no custom model '${name}' on this server: POST /v1/vision/custom/list lists them`);
        return detect(c, name, run);
      })
  );
}
