// The middlewares' headers (security headers, trace id) reach every kind of answer with the values they had when
// set after the handler: answers built by the context, plain Responses, a route's own Cache-Control, errors.
import { Hono } from 'hono';
import { describe, expect, it } from 'vitest';
import { requestTrace, TRACE_HEADER } from '../src/server/request-trace.js';
import { SECURITY_HEADERS, securityHeaders } from '../src/server/security-headers.js';

function app(): Hono {
  const a = new Hono();
  a.use('*', requestTrace({}));
  a.use('*', securityHeaders());
  a.get('/json', (c) => c.json({ ok: true }));
  a.get('/plain', () => new Response('plain', { headers: { 'content-type': 'text/plain' } }));
  a.get('/own-cache', (c) => {
    c.header('Cache-Control', 'max-age=60');
    return c.text('cached');
  });
  a.get('/own-cache-plain', () => new Response('x', { headers: { 'Cache-Control': 'private' } }));
  a.get('/forged', () => new Response('x', { headers: { 'X-Content-Type-Options': 'sniff-away', [TRACE_HEADER]: 'forged' } }));
  a.get('/throws', () => {
    throw new Error('boom');
  });
  a.onError((_e, c) => c.json({ error: 'boom' }, 500));
  return a;
}

describe('middleware headers set before the answer', () => {
  it('reach answers built by the context and plain Responses alike', async () => {
    const a = app();
    for (const path of ['/json', '/plain', '/throws', '/missing']) {
      const res = await a.request(path);
      for (const [k, v] of Object.entries(SECURITY_HEADERS)) expect(res.headers.get(k), `${path} ${k}`).toBe(v);
      expect(res.headers.get('cache-control'), path).toBe('no-store');
      expect(res.headers.get(TRACE_HEADER), path).toMatch(/^[0-9a-f]{32}$/);
    }
    expect(await (await a.request('/json')).json()).toEqual({ ok: true });
    expect(await (await a.request('/plain')).text()).toBe('plain');
  });

  it("keep a route's own Cache-Control, and replace the others' values", async () => {
    const a = app();
    expect((await a.request('/own-cache')).headers.get('cache-control')).toBe('max-age=60');
    expect((await a.request('/own-cache-plain')).headers.get('cache-control')).toBe('private');
    const forged = await a.request('/forged');
    expect(forged.headers.get('x-content-type-options')).toBe('nosniff');
    expect(forged.headers.get(TRACE_HEADER)).not.toBe('forged');
    expect(forged.headers.get(TRACE_HEADER)).toMatch(/^[0-9a-f]{32}$/);
  });

  it('give each request its own trace id', async () => {
    const a = app();
    const ids = new Set<string | null>();
    for (let i = 0; i < 5; i++) ids.add((await a.request('/json')).headers.get(TRACE_HEADER));
    expect(ids.size).toBe(5);
  });
});
