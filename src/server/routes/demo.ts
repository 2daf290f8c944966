// GET / : the demo page (web/index.html), its scripts (web/demo.js, and web/library.js for the face library, served
// as they are: no build step) and /body25.js, an ES module made from the library's BODY_25_BONES so that the page
// draws the bones the server documents.

import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { Hono } from 'hono';
import { packageRoot } from '../../engine/native.js';
import { BODY_25_BONES } from '../../engine/pose.js';

export const WEB_DIR = path.join(packageRoot(), 'web');

const JS = 'text/javascript; charset=utf-8';

const HEADERS = { 'Cache-Control': 'no-cache' };

/**
 * The page's Content-Security-Policy: its own scripts only, its one inline <style> by hash, requests
 * and WebSockets to this server only, and no framing (clickjacking; X-Frame-Options for older browsers).
 */
export function demoPageSecurityHeaders(page: string): Record<string, string> {
  const styles = [...page.matchAll(/<style>([\s\S]*?)<\/style>/g)].map(
    (m) => `'sha256-${createHash('sha256').update(m[1]!, 'utf8').digest('base64')}'`,
  );
  const policy = [
    "default-src 'none'",
    "script-src 'self'",
    `style-src ${styles.length > 0 ? styles.join(' ') : "'none'"}`,
    "connect-src 'self'",
    "img-src 'self' data: blob:",
    "media-src 'self' blob: mediastream:",
    "base-uri 'none'",
    "form-action 'none'",
    "frame-ancestors 'none'",
  ].join('; ');
  return { 'Content-Security-Policy': policy, 'X-Frame-Options': 'DENY' };
}

/**
 * The page at /: mounted outside the API's 405 handling (allowed-methods.ts), so that any other method on / is a
 * 404, as it has always been. Read once: the files are small and never change while the server runs.
 */
export function demoPage(): Hono {
  const page = fs.readFileSync(path.join(WEB_DIR, 'index.html'), 'utf8');
  const headers = { ...HEADERS, ...demoPageSecurityHeaders(page) };
  return new Hono().get('/', (c) => c.html(page, 200, headers));
}

/** /demo.js, /library.js and /body25.js, mounted at /. */
export function demoScripts(): Hono {
  const script = fs.readFileSync(path.join(WEB_DIR, 'demo.js'), 'utf8');
  const library = fs.readFileSync(path.join(WEB_DIR, 'library.js'), 'utf8');
  const bones = `// made by the server from BODY_25_BONES (src/engine/pose.ts)\nexport const BODY_25_BONES = ${JSON.stringify(BODY_25_BONES)};\n`;
  const headers = { ...HEADERS, 'Content-Type': JS };
  return new Hono()
    .get('/demo.js', (c) => c.body(script, 200, headers))
    .get('/library.js', (c) => c.body(library, 200, headers))
    .get('/body25.js', (c) => c.body(bones, 200, headers));
}
