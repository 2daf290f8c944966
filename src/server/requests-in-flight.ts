// Tells the engine how many requests the server is serving (Engine.serveRequest): a short inference borrows the
// idle cores only while its request is the only one, so that a lone request gets every core and concurrent ones
// leave the event loop's core to their TLS and JSON (native/runtime/idle_cores.h).
import type { MiddlewareHandler } from 'hono';
import type { Engine } from '../engine/engine.js';

/** `serveRequest`: the engine's Engine.serveRequest, bound. */
export function countRequests(serveRequest: Engine['serveRequest']): MiddlewareHandler {
  return async (_c, next) => {
    const done = serveRequest();
    try {
      await next();
    } finally {
      done();
    }
  };
}
