// GET /server/capabilities/ : what this server can do.

import type { Hono } from 'hono';
import type { FaceEngine } from '../engine-types.js';
import { resource } from '../routing.js';

export function registerCapabilitiesRoutes(app: Hono, deps: { engine: FaceEngine }): void {
  resource(app, '/server/capabilities/', {
    GET: (c) => c.json({ success: 'true', gpu_support: deps.engine.backend().backend === 'cuda' }),
  });
}
