// GET / : the demo page (web/index.html), its script (web/demo.js, served as is: no build step) and /body25.js, an
// ES module made from the library's BODY_25_BONES so that the page draws the bones the server documents.

import fs from 'node:fs';
import path from 'node:path';
import type { Hono } from 'hono';
import { packageRoot } from '../../engine/native.js';
import { BODY_25_BONES } from '../../engine/pose.js';
import { resource } from '../routing.js';

export const WEB_DIR = path.join(packageRoot(), 'web');

const JS = 'text/javascript; charset=utf-8';

export function registerDemoRoutes(app: Hono): void {
  // read once: the page is small and never changes while the server runs
  const page = fs.readFileSync(path.join(WEB_DIR, 'index.html'), 'utf8');
  const script = fs.readFileSync(path.join(WEB_DIR, 'demo.js'), 'utf8');
  const bones = `// made by the server from BODY_25_BONES (src/pose.ts)\nexport const BODY_25_BONES = ${JSON.stringify(BODY_25_BONES)};\n`;
  const headers = { 'Cache-Control': 'no-cache' };
  app.get('/', (c) => c.html(page, 200, headers));
  resource(app, '/demo.js', { GET: (c) => c.body(script, 200, { ...headers, 'Content-Type': JS }) });
  resource(app, '/body25.js', { GET: (c) => c.body(bones, 200, { ...headers, 'Content-Type': JS }) });
}
