// The HTTP applications, without a socket: tests call app.request(), src/server/server.ts serves them. createApp()
// is the whole API (the HTTPS port); createDeepStackApp() only the DeepStack-compatible routes (--http-port).

import { Hono } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import type { ServerConfig } from '../config.js';
import type { RecognitionService } from '../gallery/recognition-service.js';
import type { FaceEngine, PoseObjectEngine } from './engine-types.js';
import { requireUser } from './auth-guard.js';
import { clientAbortError } from './client-abort.js';
import { refuseContentEncoding } from './content-encoding.js';
import { errorResponse, onError } from './errors.js';
import { bodyTooLargeMessage } from './http-guards.js';
import { registerDeepStackRoutes } from './deepstack/index.js';
import type { OpsDeps } from './ops.js';
import { requestTrace } from './request-trace.js';
import { registerAuditRoutes } from './routes/audit.js';
import { registerCapabilitiesRoutes } from './routes/capabilities.js';
import { registerDemoRoutes } from './routes/demo.js';
import { registerDetectorRoutes } from './routes/detector.js';
import { registerLoginRoutes } from './routes/login.js';
import { registerMetricsAppRoutes } from './routes/metrics-app.js';
import { registerObjectRoutes } from './routes/objects.js';
import { registerPoseRoutes } from './routes/pose.js';
import { registerPrometheusRoutes } from './routes/prometheus.js';
import { registerRecognizerRoutes } from './routes/recognizer.js';
import { registerTestRoutes } from './routes/test.js';
import { registerTrainerRoutes } from './routes/trainer.js';
import { securityHeaders } from './security-headers.js';
import { registerUsageRoutes } from './routes/usage.js';

export interface AppDeps {
  engine: FaceEngine & PoseObjectEngine;
  config: Pick<ServerConfig, 'bodyLimit' | 'poseRequiresGpu' | 'poseMode' | 'adminKey' | 'apiKey' | 'metricsAccess'>;
  /** Login, the metrics query and the audit trail; without it those routes are absent. */
  ops?: OpsDeps;
  /** Face recognition and its gallery; without it the /recognizer and /trainer routes are absent. */
  recognition?: RecognitionService;
}

/** An app with the middleware every answer goes through: trace id, metrics, audit line, body-size limit. */
function baseApp(deps: Pick<AppDeps, 'config' | 'ops'>): Hono {
  const app = new Hono();
  const limit = deps.config.bodyLimit;

  // First, so that every answer (413s and 404s included) gets a tracid, request metrics and an audit line.
  app.use('*', requestTrace({ audit: deps.ops?.audit }));
  app.use('*', securityHeaders());
  app.use('*', refuseContentEncoding());

  // Bodies over the limit: rejected by Content-Length up front, and counted while streaming otherwise.
  app.use(
    '*',
    bodyLimit({
      maxSize: limit,
      onError: (c) =>
        errorResponse(c, 413, bodyTooLargeMessage(limit), { Connection: 'close' }),
    }),
  );
  return app;
}

function finish(app: Hono): Hono {
  app.notFound((c) => errorResponse(c, 404, `no such path: ${c.req.path}`));
  // A body read that failed because the client left (or was cut for slowness) is the client's doing.
  app.onError((err, c) => onError(clientAbortError(c) ?? err, c));
  return app;
}

export function createApp(deps: AppDeps): Hono {
  const app = baseApp(deps);
  const ops = deps.ops;

  registerDemoRoutes(app);
  registerTestRoutes(app);
  registerCapabilitiesRoutes(app, deps);
  registerUsageRoutes(app, deps);
  registerDetectorRoutes(app, deps);
  if (deps.recognition) {
    registerRecognizerRoutes(app, { recognition: deps.recognition, engine: deps.engine });
    registerTrainerRoutes(app, { recognition: deps.recognition, adminKey: deps.config.adminKey });
  }
  registerPoseRoutes(app, deps);
  registerObjectRoutes(app, deps);
  registerDeepStackRoutes(app, deps);
  registerPrometheusRoutes(app, { access: deps.config.metricsAccess, adminKey: deps.config.adminKey });
  if (ops) {
    registerLoginRoutes(app, ops);
    app.use('/api/v1/auth/*', requireUser(ops.auth));
    registerMetricsAppRoutes(app, ops);
    if (ops.audit) registerAuditRoutes(app, { audit: ops.audit, identity: ops.identity });
  }
  return finish(app);
}

/** Only the DeepStack-compatible /v1/vision/* routes, for the plain-HTTP listener. */
export function createDeepStackApp(deps: AppDeps): Hono {
  const app = baseApp(deps);
  registerDeepStackRoutes(app, deps);
  return finish(app);
}
