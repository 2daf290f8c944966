// The HTTP applications, without a socket: tests call app.request(), src/server/server.ts serves them. createApp()
// is the whole API (the HTTPS port); createDeepStackApp() only the DeepStack-compatible routes (--http-port).

import { Hono } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import type { ServerConfig } from '../config.js';
import type { RecognitionService } from '../gallery/recognition-service.js';
import type { FaceEngine, PoseObjectEngine } from './engine-types.js';
import { allowedMethods } from './allowed-methods.js';
import { requireUser } from './auth-guard.js';
import { refuseContentEncoding } from './content-encoding.js';
import { onError } from './error-handler.js';
import { errorResponse } from './errors.js';
import { bodyTooLargeMessage } from './http-guards.js';
import { deepStackRoutes } from './deepstack/index.js';
import type { OpsDeps } from './ops.js';
import { identifyClients } from './client-identity.js';
import { refuseForeignHosts, type HostCheck } from './host-check.js';
import { refuseForeignOrigins } from './origin-check.js';
import { countRequests } from './requests-in-flight.js';
import { requestPath, requestTrace } from './request-trace.js';
import { auditRoutes } from './routes/audit.js';
import { capabilitiesRoutes } from './routes/capabilities.js';
import { demoPage, demoScripts } from './routes/demo.js';
import type { DrainState } from './drain.js';
import { healthRoutes } from './routes/health.js';
import { detectorRoutes } from './routes/detector.js';
import { loginRoutes } from './routes/login.js';
import { metricsAppRoutes } from './routes/metrics-app.js';
import { objectRoutes } from './routes/objects.js';
import { POSE_MOUNTS, poseRoutes } from './routes/pose.js';
import { prometheusRoutes } from './routes/prometheus.js';
import { recognizerRoutes } from './routes/recognizer.js';
import { testRoutes } from './routes/test.js';
import { trainerRoutes } from './routes/trainer.js';
import { securityHeaders } from './security-headers.js';
import { usageRoutes } from './routes/usage.js';

export interface AppDeps {
  engine: FaceEngine & PoseObjectEngine;
  config: Pick<
    ServerConfig,
    'bodyLimit' | 'poseRequiresGpu' | 'poseMode' | 'adminKey' | 'apiKey' | 'metricsAccess' | 'deepstackEnrolmentKey' | 'allowedOrigins'
  >;
  /** Login, the metrics query and the audit trail; without it those routes are absent. */
  ops?: OpsDeps;
  /** Face recognition and its gallery; without it the /recognizer and /trainer routes are absent. */
  recognition?: RecognitionService;
  /** The shutdown state: readiness fails while draining. Without it the server never drains. */
  drain?: DrainState;
  /** Which Host names this server answers for (host-check.ts; serve: servedHosts()); without it, any. */
  hosts?: HostCheck;
  /** Balancers whose X-Forwarded-For names the client (--trusted-proxies; client-identity.ts). */
  trustedProxies?: ReadonlySet<string>;
}

/** GET /health/live and /health/ready, with or without a trailing slash: answered whatever the Host. */
const ANY_HOST_PATH = /^\/health\/(live|ready)\/?$/;

/**
 * The app around `api` (the routes, one sub-app per route file): the middleware every answer goes through (trace
 * id, metrics, audit line, the engine's count of requests in flight, security headers, body-size limit),
 * 405/OPTIONS for api's paths, JSON 404 and errors.
 * strict: false serves every route with and without a trailing slash. `page`: served outside the 405 handling.
 * The fleet console (src/console/app.ts) serves its routes through it too.
 */
export function serverApp(
  deps: Pick<AppDeps, 'config' | 'hosts' | 'trustedProxies'> & { ops?: Pick<OpsDeps, 'audit'>; engine?: FaceEngine },
  api: Hono,
  page?: Hono,
): Hono {
  const app = new Hono({ strict: false });
  const limit = deps.config.bodyLimit;

  // First, so that every answer (413s and 404s included) gets a tracid, request metrics and an audit line.
  app.use('*', requestTrace({ audit: deps.ops?.audit }));
  const serveRequest = deps.engine?.serveRequest?.bind(deps.engine);
  if (serveRequest) app.use('*', countRequests(serveRequest));
  app.use('*', securityHeaders());
  // whose turn an image job waits for (fair-engine.ts)
  app.use('*', identifyClients(deps.trustedProxies ?? new Set()));
  // a DNS-rebinding page names its own host: refused before any route or body. The health routes answer whatever
  // the Host (a balancer's or an orchestrator's check names what it likes; they tell nothing worth a rebinding).
  if (deps.hosts) {
    const refuse = refuseForeignHosts(deps.hosts);
    app.use('*', (c, next) => (ANY_HOST_PATH.test(c.req.path) ? next() : refuse(c, next)));
  }
  app.use('*', refuseContentEncoding());
  // before any body is read: a foreign page's POST is refused unread
  app.use('*', refuseForeignOrigins(deps.config.allowedOrigins));

  // Bodies over the limit: rejected by Content-Length up front, and counted while streaming otherwise.
  app.use(
    '*',
    bodyLimit({
      maxSize: limit,
      onError: (c) => errorResponse(c, 413, bodyTooLargeMessage(limit), { Connection: 'close' }),
    }),
  );
  app.use('*', allowedMethods(api));

  if (page) app.route('/', page);
  app.route('/', api);
  app.notFound((c) => errorResponse(c, 404, `no such path: ${requestPath(c)}`));
  app.onError(onError);
  return app;
}

export function createApp(deps: AppDeps): Hono {
  const { engine, config, ops, recognition } = deps;
  const api = new Hono()
    .route('/', demoScripts())
    .route('/test', testRoutes())
    .route('/health', healthRoutes(deps))
    .route('/server/capabilities', capabilitiesRoutes(deps))
    .route('/server/usage', usageRoutes(deps))
    .route('/detector', detectorRoutes(deps));
  if (recognition) {
    api.route('/recognizer', recognizerRoutes({ recognition, engine }));
    api.route('/trainer', trainerRoutes({ recognition, adminKey: config.adminKey }));
    // the original training server's /trainer/predict/ (multi_client.py, the Android app's update mode)
    api.route('/trainer', recognizerRoutes({ recognition, engine }));
  }
  const pose = poseRoutes(deps);
  for (const mount of POSE_MOUNTS) api.route(mount, pose);
  api.route('/object', objectRoutes(deps));
  api.route('/v1/vision', deepStackRoutes(deps));
  api.route('/metrics', prometheusRoutes({ access: config.metricsAccess, adminKey: config.adminKey }));
  if (ops) {
    api.route('/api/v1/login', loginRoutes(ops));
    api.use('/api/v1/auth/*', requireUser(ops.auth));
    api.route('/api/v1/auth/metrics/app', metricsAppRoutes(ops));
    if (ops.audit) api.route('/api/v1/auth/audit', auditRoutes({ audit: ops.audit, identity: ops.identity }));
  }
  return serverApp(deps, api, demoPage());
}

/** Only the DeepStack-compatible /v1/vision/* routes, for the plain-HTTP listener. */
export function createDeepStackApp(deps: AppDeps): Hono {
  // /health too: a balancer in front of this listener checks readiness on it
  return serverApp(deps, new Hono().route('/v1/vision', deepStackRoutes(deps)).route('/health', healthRoutes(deps)));
}
