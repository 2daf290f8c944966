// `edgecv serve`: open the engine, load TLS, listen, and shut down cleanly on SIGINT/SIGTERM.

import type { ServerConfig } from '../config.js';
import type { BackendInfo, StartupPhase } from '../engine/types.js';
import { isLoopback } from './admin-auth.js';
import { anyOnGpu, onGpu } from './gpu-support.js';
import { openRecognition } from '../gallery/open.js';
import { createApp, createDeepStackApp } from './app.js';
import { engineOptionsFromConfig } from './engine-options.js';
import { DEFAULT_DRAIN_DELAY_MS, DEFAULT_DRAIN_TIMEOUT_MS, DrainState } from './drain.js';
import { parseTrustedProxies } from './client-identity.js';
import { withFairShares } from './fair-engine.js';
import { servedHosts } from './host-check.js';
import { openOps, type OpsRuntime } from './ops.js';
import { unwatchEngine, unwatchGallery, watchEngine, watchGallery } from './prometheus.js';
import { startServer, type RunningServer } from './server.js';
import { loadTls, TlsError } from './tls.js';
import { webSocketOptionsFromConfig } from './websocket-limits.js';

/** What serve prints about the --http-port listener: what it serves and, for every route beyond loopback, a warning. */
export function plainListenerNote(config: Pick<ServerConfig, 'host' | 'httpRoutes'>, url: string): { log: string; warning?: string } {
  if (config.httpRoutes !== 'all') return { log: `edgecv: DeepStack API (/v1/vision/*) over plain HTTP on ${url}` };
  const log = `edgecv: every route (WebSockets included) over plain HTTP on ${url}`;
  if (config.host === 'localhost' || isLoopback(config.host)) return { log };
  return {
    log,
    warning:
      `edgecv: WARNING: --http-routes all on ${config.host}: logins, keys and gallery changes travel unencrypted on ` +
      `${url}; serve it on --host 127.0.0.1 behind a TLS-terminating balancer, or firewall the port`,
  };
}

type OpenedEngine = Awaited<ReturnType<(typeof import('../engine/engine.js'))['Engine']['open']>>;
type Recognition = Awaited<ReturnType<typeof openRecognition>>;

/** What the server runs on, opened in order; each failure closes what was opened before it. */
interface Parts {
  tls: Awaited<ReturnType<typeof loadTls>>;
  engine: OpenedEngine;
  ops: OpsRuntime;
  recognition: Recognition;
}

interface Listeners {
  running: RunningServer;
  plain?: RunningServer;
}

/** Each phase of the engine's start as it ends (a slow board or emulation takes minutes: which phase, and why). */
function logPhase(phase: StartupPhase): void {
  console.log(`edgecv: start-up: ${phase.name} in ${Math.round(phase.ms)} ms (${phase.detail})`);
}

/** Opens TLS, the engine, the ops stores and the gallery; null (after logging why) when one cannot be. */
async function openParts(config: ServerConfig): Promise<Parts | null> {
  let tls;
  try {
    tls = await loadTls(config);
  } catch (e) {
    console.error(`edgecv: ${e instanceof TlsError ? e.message : (e as Error).stack}`);
    return null;
  }
  if (tls.source === 'generated') console.log(`edgecv: created a self-signed TLS certificate in ${tls.certPath}`);

  const { Engine } = await import('../engine/engine.js');
  let engine;
  try {
    // every image job of a request waits its client's turn for a worker (fair-engine.ts)
    engine = withFairShares(await Engine.open({ ...engineOptionsFromConfig(config), onStartupPhase: logPhase }));
  } catch (e) {
    console.error(`edgecv: cannot start the engine: ${(e as Error).message}`);
    return null;
  }

  let ops: OpsRuntime;
  try {
    ops = openOps(config);
  } catch (e) {
    console.error(`edgecv: cannot open the metrics store, users or audit log in ${config.dataDir}: ${(e as Error).message}`);
    await engine.close();
    return null;
  }

  let recognition;
  try {
    recognition = await openRecognition(engine, config);
  } catch (e) {
    console.error(`edgecv: cannot open the gallery: ${(e as Error).message}`);
    await ops.close();
    await engine.close();
    return null;
  }
  // The gallery loads (and re-embeds after a model change) in the background: predictions answer 503 meanwhile.
  recognition.ready.catch((e: unknown) => console.error(`edgecv: loading the gallery failed: ${(e as Error).message}`));
  return { tls, engine, ops, recognition };
}

/** The HTTPS listener, and the plain-HTTP one with --http-port. */
async function listen(config: ServerConfig, parts: Parts, drain: DrainState): Promise<Listeners> {
  const { engine, ops, recognition, tls } = parts;
  // both listeners answer only for this server's own names (DNS rebinding: host-check.ts)
  const hosts = servedHosts(config.host, config.allowedHosts);
  const deps = { engine, config, ops: ops.ops, recognition, drain, hosts, trustedProxies: parseTrustedProxies(config.trustedProxies) };
  const guards = {
    bodyLimit: config.bodyLimit,
    audit: ops.ops.audit,
    headersTimeoutMs: config.headersTimeout,
    handshakeTimeoutMs: config.handshakeTimeout,
    requestTimeoutMs: config.requestTimeout,
    minBodyBytesPerSec: config.minBodyRate,
  };
  // one socket budget for every listener that serves the WebSocket routes: descriptors are the process's
  const webSocket = { ...webSocketOptionsFromConfig(config), hosts };
  console.log(`edgecv: ${webSocket.note}`);
  const running = await startServer({
    app: createApp(deps),
    tls,
    port: config.port,
    host: config.host,
    guards,
    webSocketMaxPayload: config.bodyLimit,
    webSocket,
  });
  if (config.httpPort === undefined) return { running };
  try {
    // DeepStack clients speak plain HTTP on a LAN: by default only the /v1/vision/* routes, without TLS.
    // --http-routes all: every route and the /ws/* sockets, for the original server's clients (http://, ws://).
    const all = config.httpRoutes === 'all';
    const plain = await startServer({
      app: all ? createApp(deps) : createDeepStackApp(deps),
      port: config.httpPort,
      host: config.host,
      guards,
      ...(all ? { webSocketMaxPayload: config.bodyLimit, webSocket } : {}),
    });
    return { running, plain };
  } catch (e) {
    await running.close();
    throw e;
  }
}

/**
 * Arms SIGINT/SIGTERM: the drain. Readiness fails and answers say Connection: close at once; the listeners stay
 * open drainDelay ms (a balancer's health check sees the failure first), then close and give the requests in
 * flight what is left of drainTimeout (counted from the signal); then the gallery, its index and the last metrics
 * sample are saved. Resolves with the exit code once stopped.
 */
function armShutdown(config: ServerConfig, parts: Parts, listeners: Listeners, drain: DrainState): Promise<number> {
  const { engine, ops, recognition } = parts;
  const { running, plain } = listeners;
  return new Promise<number>((resolve) => {
    let stopping = false;
    const stop = (signal: NodeJS.Signals) => {
      if (stopping) {
        console.error(`edgecv: ${signal} again, exiting now`);
        process.exit(1);
      }
      stopping = true;
      const startedAt = Date.now();
      const delayMs = config.drainDelay ?? DEFAULT_DRAIN_DELAY_MS;
      const timeoutMs = config.drainTimeout ?? DEFAULT_DRAIN_TIMEOUT_MS;
      console.log(`edgecv: ${signal}, draining (listener closes in ${delayMs} ms, requests in flight get up to ${timeoutMs} ms)`);
      drain.begin();
      running.drain();
      plain?.drain();
      void (async () => {
        let code = 0;
        try {
          if (delayMs > 0) await new Promise((r) => setTimeout(r, Math.min(delayMs, timeoutMs)));
          const graceMs = Math.max(timeoutMs - (Date.now() - startedAt), 0);
          await Promise.all([running.close(graceMs), plain?.close(graceMs)]);
          unwatchGallery(recognition);
          await recognition.close();
          // the sink's last send gets what is left of the drain timeout, then is ended
          await ops.close(Math.max(timeoutMs - (Date.now() - startedAt), 0));
          unwatchEngine(engine);
          await engine.close();
        } catch (e) {
          console.error(`edgecv: error while shutting down: ${(e as Error).message}`);
          code = 1;
        }
        process.off('SIGINT', stop);
        process.off('SIGTERM', stop);
        console.log('edgecv: stopped');
        resolve(code);
      })();
    };
    process.on('SIGINT', stop);
    process.on('SIGTERM', stop);
  });
}

/** The start-up lines about the models, the listeners and the CPU. */
function logStarted(config: ServerConfig, parts: Parts, listeners: Listeners): void {
  const { engine, tls } = parts;
  if (config.poseRequiresGpu && !onGpu(engine.backend(), ['poseEstimator'])) {
    console.log('edgecv: --pose-requires-gpu and no GPU: /pose/detect/ answers 501');
  }
  const objectModel = engine.objectModel;
  if (objectModel) {
    console.log(
      `edgecv: object model ${objectModel.name} (${objectModel.kind}, ${objectModel.inputSize} px, ${objectModel.classes} classes; weights licence: ${objectModel.licence})`,
    );
  }
  const { persons } = engine.models;
  if (persons !== null && persons !== objectModel?.name) console.log(`edgecv: pose finds people with ${persons}`);
  const info = engine.backend();
  const { backend, device, runtimes, precisions, precisionTimings, fusedOps, onnxRuntime, onnxRuntimeMissing } = info;
  if (listeners.plain) {
    const note = plainListenerNote(config, listeners.plain.url);
    console.log(note.log);
    if (note.warning) console.warn(note.warning);
  }
  if (config.noWarmUp) console.log("edgecv: start-up: no warm-up (--no-warm-up): each route's first request at a new input shape is slower");
  console.log(`edgecv: listening on ${listeners.running.url} (${backend} ${device}; certificate ${tls.certPath})`);
  const models = Object.entries(runtimes).map(([role, runtime]) => {
    const ops = fusedOps[role];
    const fused =
      ops && ops.siluLookups + ops.upsamples + ops.concats > 0
        ? `, fused: ${ops.siluLookups} SiLU lookups, ${ops.upsamples} upsamplings, ${ops.concats} concats`
        : '';
    return `${role} on ${runtime} (${precisions[role] ?? 'fp32'}${fused})`;
  });
  console.log(
    `edgecv: models: ${models.join(', ')}; ` +
      (onnxRuntime
        ? `onnxruntime ${onnxRuntime.version} from ${onnxRuntime.path}`
        : `onnxruntime not loaded (${onnxRuntimeMissing ?? 'not asked for'})`),
  );
  logGpu(info);
  if (precisionTimings) {
    const timed = Object.entries(precisionTimings).map(
      ([role, t]) => `${role} ${t.chosen} (int8 ${t.int8Ms.toFixed(1)} ms, fp32 ${t.fp32Ms.toFixed(1)} ms)`,
    );
    console.log(
      `edgecv: precision auto, the faster file of each model on this CPU (median of ${Math.min(...Object.values(precisionTimings).map((t) => t.runs))}+ runs on one worker): ${timed.join(', ')}`,
    );
  }
  if (onnxRuntime && !onnxRuntime.int8DotProduct && Object.values(precisions).includes('int8')) {
    console.log(
      "edgecv: this CPU has no VNNI: int8 models with 8-bit weights run onnxruntime's exact int8 kernels, slower than with VNNI (docs/int8.md)",
    );
  }
}

/** Where each net runs with backend gpu or auto, and why (docs/gpu.md). */
function logGpu({ gpu, gpuChecks, devices }: BackendInfo): void {
  if (!gpu || (!gpu.found && !gpuChecks)) return;
  const adapter = gpu.found
    ? `${gpu.vendor} ${gpu.device} (${gpu.type}${gpu.software ? ', software' : ''}; ${gpu.api}; driver ${gpu.driver || 'unnamed'})`
    : 'none';
  console.log(`edgecv: GPU: ${adapter}${gpu.usable ? '' : `: not used, ${gpu.why}`}`);
  for (const [net, check] of Object.entries(gpuChecks ?? {})) {
    console.log(`edgecv: GPU check: ${net} on the ${check.device === 'gpu' ? 'GPU' : 'CPU'}: ${check.reason}`);
  }
  if (gpuChecks && !anyOnGpu({ backend: 'cpu', devices })) console.log('edgecv: every net runs on the CPU');
}

/** Runs the server until SIGINT/SIGTERM. Resolves with the process exit code. */
export async function runServe(config: ServerConfig): Promise<number> {
  const parts = await openParts(config);
  if (!parts) return 1;
  const drain = new DrainState();
  let listeners: Listeners;
  try {
    listeners = await listen(config, parts, drain);
  } catch (e) {
    console.error(`edgecv: cannot listen on ${config.host}: ${(e as Error).message}`);
    await parts.recognition.close();
    await parts.ops.close();
    await parts.engine.close();
    return 1;
  }
  parts.ops.start(listeners.running.server, ...(listeners.plain ? [listeners.plain.server] : []));
  watchEngine(parts.engine);
  watchGallery(parts.recognition);
  // the drain is armed before the server says it listens: a SIGTERM right after that line is drained, not fatal
  const stopped = armShutdown(config, parts, listeners, drain);
  logStarted(config, parts, listeners);
  return stopped;
}
