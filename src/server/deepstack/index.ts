// The DeepStack-compatible API (/v1/vision/*): what Frigate, Blue Iris, Home Assistant, Double Take and Agent DVR
// speak. Served on the HTTPS port with every other route, and alone on the plain-HTTP port (--http-port).

import type { Hono } from 'hono';
import type { ServerConfig } from '../../config.js';
import type { RecognitionService } from '../../gallery/recognition-service.js';
import type { FaceEngine, PoseObjectEngine } from '../engine-types.js';
import { registerDeepStackDetectionRoutes } from './detection.js';
import { registerDeepStackFaceRoutes } from './face.js';
import { apiKeyGuard } from './request.js';

export interface DeepStackDeps {
  engine: FaceEngine & PoseObjectEngine;
  config: Pick<ServerConfig, 'adminKey' | 'apiKey'>;
  recognition?: RecognitionService;
}

export function registerDeepStackRoutes(app: Hono, deps: DeepStackDeps): void {
  const guard = apiKeyGuard(deps.config.apiKey, deps.config.adminKey);
  registerDeepStackDetectionRoutes(app, { engine: deps.engine, guard });
  registerDeepStackFaceRoutes(app, { engine: deps.engine, recognition: deps.recognition, adminKey: deps.config.adminKey, guard });
}
