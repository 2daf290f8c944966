// The DeepStack-compatible API (/v1/vision/*): what Frigate, Blue Iris, Home Assistant, Double Take and Agent DVR
// speak. Served on the HTTPS port with every other route, and alone on the plain-HTTP port (--http-port).

import { Hono } from 'hono';
import type { ServerConfig } from '../../config.js';
import type { RecognitionService } from '../../gallery/recognition-service.js';
import type { FaceEngine, PoseObjectEngine } from '../engine-types.js';
import { deepStackDetectionRoutes } from './detection.js';
import { deepStackFaceRoutes } from './face.js';
import { dsErrorReply } from './reply.js';
import { enrolmentGuard, openDeepStackRequest } from './request.js';

export interface DeepStackDeps {
  engine: FaceEngine & PoseObjectEngine;
  config: Pick<ServerConfig, 'adminKey' | 'apiKey' | 'deepstackEnrolmentKey'>;
  recognition?: RecognitionService;
}

/** Mounted at /v1/vision. Every error its handlers and middleware throw answers in the DeepStack shape. */
export function deepStackRoutes(deps: DeepStackDeps): Hono {
  const open = openDeepStackRequest(deps.config.apiKey, deps.config.adminKey);
  const app = new Hono()
    .route('/', deepStackDetectionRoutes({ engine: deps.engine, open }))
    .route('/', deepStackFaceRoutes({ engine: deps.engine, recognition: deps.recognition, enrolment: enrolmentGuard(deps.config), open }));
  app.onError(dsErrorReply);
  return app;
}
