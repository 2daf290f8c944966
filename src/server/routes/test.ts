// GET/HEAD /test/ : connectivity check.

import type { Hono } from 'hono';
import { resource } from '../routing.js';

export function registerTestRoutes(app: Hono): void {
  resource(app, '/test/', {
    GET: (c) => c.json({ success: 'true' }),
  });
}
