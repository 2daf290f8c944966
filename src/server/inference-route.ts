// Running a model for a route. observed(): the model's stage timings go to Prometheus
// (edgecv_inference_stage_seconds) under its name and the engine's backend. imageRoute(): the REST image routes'
// handler: read the image (image-input.ts), run the model, answer the route's JSON with serverprocessingtime.

import type { Context, Handler } from 'hono';
import type { FaceEngine } from './engine-types.js';
import { readImageInput, type ImageInput } from './image-input.js';
import { observeInference } from './prometheus.js';

type BackendSource = Pick<FaceEngine, 'backend'>;

/** Awaits one model run and records its stage timings under `model` and `engine`'s backend. */
export async function observed<R extends { timings: object }>(engine: BackendSource, model: string, run: Promise<R>): Promise<R> {
  const result = await run;
  observeInference(model, engine.backend().backend, result.timings);
  return result;
}

/** Milliseconds since `t0` (performance.now()), 3 decimals, as a string: serverprocessingtime. */
export function elapsedMs(t0: number): string {
  return (performance.now() - t0).toFixed(3);
}

export interface ImageRoute<R extends { timings: object }> {
  engine: BackendSource;
  /** The model's name in the metrics. */
  model: () => string;
  run: (c: Context, input: ImageInput) => Promise<R>;
  /** The JSON answer; `ms`: from the handler starting on the request (body reading included) to now. */
  reply: (result: R, ms: string) => object;
}

export function imageRoute<R extends { timings: object }>(route: ImageRoute<R>): Handler {
  return async (c) => {
    const t0 = performance.now();
    const input = await readImageInput(c);
    const result = await observed(route.engine, route.model(), route.run(c, input));
    return c.json(route.reply(result, elapsedMs(t0)));
  };
}
