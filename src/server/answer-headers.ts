// Setting a middleware's headers without slowing the answer down. A header set on the context after the handler
// has answered makes Hono copy the answer into a new Response around its body stream, and @hono/node-server then
// streams that body instead of writing the string it had, which slows the answer (docs/performance.md, "Routes over
// HTTPS on loopback"). Headers set before the handler go into the answer that
// c.json()/c.body() build; only an answer built without the context (a plain `new Response`) needs them after.

import type { Context, Next } from 'hono';

/**
 * Runs `next` with `headers` set on the answer. Those named in `defaults` are left as the route set them when it
 * set them; the others always take the value given.
 */
export async function headersBeforeAnswer(c: Context, next: Next, headers: Record<string, string>, defaults: readonly string[] = []): Promise<void> {
  for (const [name, value] of Object.entries(headers)) c.header(name, value);
  await next();
  const answered = c.res.headers;
  for (const [name, value] of Object.entries(headers)) {
    const now = answered.get(name);
    if (now === value || (now !== null && defaults.includes(name))) continue;
    c.header(name, value);
  }
}
