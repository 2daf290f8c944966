// Cross-site requests. Without --admin-key a loopback client is the admin, and a browser on
// the edge machine is a loopback client: a page from anywhere could post a form (no CORS preflight for
// multipart, urlencoded or text/plain) to /trainer/remove/ or /v1/vision/face/delete and change the gallery.
// Browsers name the page that sent a request in its Origin header; every request that is not a plain read
// (GET, HEAD, OPTIONS) from an origin that is neither this server's own nor on the allow-list
// (--allowed-origins) is refused with 403 before its body is read. Clients that send no Origin (every camera,
// NVR and script tried) are not browsers running someone else's page and keep working.

import type { MiddlewareHandler } from 'hono';
import { HttpError } from './errors.js';

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/** scheme://host[:port], lower case, without the default port: how browsers write an Origin. */
function normalOrigin(text: string): string | null {
  let url: URL;
  try {
    url = new URL(text.trim());
  } catch {
    return null;
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return null;
  // new URL() drops a default port and lower-cases the host
  return `${url.protocol}//${url.host}`;
}

/**
 * The origins of --allowed-origins / EDGECV_ALLOWED_ORIGINS: a comma-separated list of http(s)://host[:port].
 * Throws for anything else (a path, a wildcard), so that a typo does not silently allow nothing (config.ts checks
 * the option at start).
 */
export function parseAllowedOrigins(list: string | undefined): string[] {
  if (list === undefined) return [];
  return list
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '')
    .map((s) => {
      const origin = normalOrigin(s);
      const url = origin === null ? null : new URL(s);
      if (url === null || origin === null || url.pathname !== '/' || url.search !== '' || url.hash !== '' || url.username !== '' || s.endsWith('/')) {
        throw new Error(`invalid --allowed-origins entry ${JSON.stringify(s)}: expected scheme://host[:port], e.g. https://nvr.example:8443`);
      }
      return origin;
    });
}

/**
 * Whether a request with this Origin header may change state. `host` is the request's Host header: the
 * server's own origin (its pages, e.g. the demo page) is https://<host> or http://<host>. No Origin at all (not a
 * browser, or a browser's same-origin GET) passes; "null" (sandboxed frames, file: pages) never does.
 * Also for the WebSocket upgrade (websocket.ts), which browsers send with an Origin whatever the page.
 */
export function isAllowedOrigin(origin: string | undefined, host: string | undefined, allowed: readonly string[]): boolean {
  if (origin === undefined) return true;
  const normal = normalOrigin(origin);
  if (normal === null) return false;
  if (host !== undefined && host !== '') {
    const own = host.trim().toLowerCase();
    if (normal === normalOrigin(`https://${own}`) || normal === normalOrigin(`http://${own}`)) return true;
  }
  return allowed.includes(normal);
}

/** 403 for a request that is not a plain read and comes from a foreign origin's page. */
export function refuseForeignOrigins(allowedOrigins: string | undefined): MiddlewareHandler {
  const allowed = parseAllowedOrigins(allowedOrigins);
  return async (c, next) => {
    if (!SAFE_METHODS.has(c.req.method)) {
      const origin = c.req.header('origin');
      if (!isAllowedOrigin(origin, c.req.header('host'), allowed)) {
        throw new HttpError(
          403,
          `requests from pages of ${JSON.stringify(origin)} are not allowed: only this server's own pages and --allowed-origins may send them`,
        );
      }
    }
    await next();
  };
}
