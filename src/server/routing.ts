// Registers a resource: its handlers per method, the same path with and without a trailing slash, and a
// 405 (with Allow) for every other method. OPTIONS answers 204 with Allow.

import type { Handler, Hono } from 'hono';
import { HttpError } from './errors.js';

export type Method = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

/** '/a/b/' -> ['/a/b/', '/a/b'] */
export function slashVariants(path: string): string[] {
  const bare = path.replace(/\/+$/, '');
  return bare === '' ? ['/'] : [`${bare}/`, bare];
}

export function resource(app: Hono, path: string, handlers: Partial<Record<Method, Handler>>): void {
  const methods = Object.keys(handlers) as Method[];
  const allow = [...methods, ...(methods.includes('GET') ? ['HEAD'] : []), 'OPTIONS'].join(', ');
  for (const p of slashVariants(path)) {
    for (const m of methods) app.on(m, p, handlers[m]!);
    app.all(p, (c) => {
      if (c.req.method === 'OPTIONS') return c.body(null, 204, { Allow: allow });
      throw new HttpError(405, `method ${c.req.method} not allowed on ${path}; allowed: ${allow}`, { Allow: allow });
    });
  }
}
