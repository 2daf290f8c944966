// The HTTP application, without a socket: tests call app.request(), src/server/server.ts serves it over TLS.

import { Hono } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import type { ServerConfig } from '../config.js';
import type { RecognitionService } from '../gallery/recognition-service.js';
import type { FaceEngine } from './engine-types.js';
import { errorResponse, onError } from './errors.js';
import { registerCapabilitiesRoutes } from './routes/capabilities.js';
import { registerDetectorRoutes } from './routes/detector.js';
import { registerRecognizerRoutes } from './routes/recognizer.js';
import { registerTestRoutes } from './routes/test.js';
import { registerTrainerRoutes } from './routes/trainer.js';

export interface AppDeps {
  engine: FaceEngine;
  config: Pick<ServerConfig, 'bodyLimit' | 'adminKey'>;
  /** Face recognition and its gallery; without it the /recognizer and /trainer routes are absent. */
  recognition?: RecognitionService;
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
  if (deps.recognition) {
    registerRecognizerRoutes(app, { recognition: deps.recognition });
    registerTrainerRoutes(app, { recognition: deps.recognition, adminKey: deps.config.adminKey });
  }

  app.notFound((c) => errorResponse(c, 404, `no such path: ${c.req.path}`));
  app.onError(onError);
  return app;
}
