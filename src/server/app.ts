// The HTTP application, without a socket: tests call app.request(), src/server/server.ts serves it over TLS.

import { Hono } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import type { ServerConfig } from '../config.js';
import type { FaceEngine, PoseObjectEngine } from './engine-types.js';
import { errorResponse, onError } from './errors.js';
import { registerCapabilitiesRoutes } from './routes/capabilities.js';
import { registerDetectorRoutes } from './routes/detector.js';
import { registerObjectRoutes } from './routes/objects.js';
import { registerPoseRoutes } from './routes/pose.js';
import { registerTestRoutes } from './routes/test.js';

export interface AppDeps {
  engine: FaceEngine & PoseObjectEngine;
  config: Pick<ServerConfig, 'bodyLimit' | 'poseRequiresGpu'>;
}

export function createApp(deps: AppDeps): Hono {
  const app = new Hono();
  const limit = deps.config.bodyLimit;

  // Bodies over the limit: rejected by Content-Length up front, and counted while streaming otherwise.
  app.use(
    '*',
    bodyLimit({
      maxSize: limit,
      onError: (c) =>
        errorResponse(c, 413, `request body larger than the limit of ${limit} bytes`, { Connection: 'close' }),
    }),
  );

  registerTestRoutes(app);
  registerCapabilitiesRoutes(app, deps);
  registerDetectorRoutes(app, deps);
  registerPoseRoutes(app, deps);
  registerObjectRoutes(app, deps);

  app.notFound((c) => errorResponse(c, 404, `no such path: ${c.req.path}`));
  app.onError(onError);
  return app;
}
