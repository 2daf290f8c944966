// Who a request comes from, for the workers' fair shares (fair-scheduler.ts): its address (an IPv6 /64 counting as
// one, address-group.ts), or, when the peer is a balancer named in --trusted-proxies, the client address that
// balancer put last in X-Forwarded-For (each trusted hop is skipped, right to left). The key is kept for the
// request's whole async flow (AsyncLocalStorage), so that the engine calls a route makes, however deep, are
// counted for that client. WebSocket frames carry their upgrade request's socket and X-Forwarded-For.

import { AsyncLocalStorage } from 'node:async_hooks';
import net from 'node:net';
import type { MiddlewareHandler } from 'hono';
import { addressGroup } from '../address-group.js';

const current = new AsyncLocalStorage<string>();

/** The client the running request comes from; `fallback` outside any request (start-up, re-embedding). */
export function currentClient(fallback = 'server'): string {
  return current.getStore() ?? fallback;
}

/**
 * The addresses of --trusted-proxies (EDGECV_TRUSTED_PROXIES): comma-separated IP addresses; throws for anything
 * else (a host name would need a lookup per request and can change).
 */
export function parseTrustedProxies(list: string | undefined): Set<string> {
  const out = new Set<string>();
  for (const entry of (list ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '')) {
    if (net.isIP(entry) === 0) throw new Error(`invalid --trusted-proxies entry ${JSON.stringify(entry)}: expected an IP address, e.g. 10.0.0.2`);
    out.add(unmapped(entry.toLowerCase()));
  }
  return out;
}

function unmapped(address: string): string {
  return address.startsWith('::ffff:') && net.isIPv4(address.slice(7)) ? address.slice(7) : address;
}

/** The client key of a request from `peer` carrying `forwardedFor` (its X-Forwarded-For). */
export function clientKey(peer: string, forwardedFor: string | undefined, trusted: ReadonlySet<string>): string {
  let address = unmapped(peer.toLowerCase());
  if (trusted.has(address) && forwardedFor !== undefined) {
    const hops = forwardedFor.split(',').map((s) => unmapped(s.trim().toLowerCase()));
    for (let i = hops.length - 1; i >= 0; i--) {
      if (net.isIP(hops[i]!) === 0) break; // a hop that is no address: stop at the last one known good
      address = hops[i]!;
      if (!trusted.has(address)) break;
    }
  }
  return addressGroup(address);
}

/** Runs the rest of the request as its client's ('' peer: an in-process request, app.request()). */
export function identifyClients(trusted: ReadonlySet<string>): MiddlewareHandler {
  return (c, next) => {
    const env = c.env as { incoming?: { socket?: { remoteAddress?: string } } } | undefined;
    const peer = env?.incoming?.socket?.remoteAddress ?? '';
    return current.run(clientKey(peer, c.req.header('x-forwarded-for'), trusted), next);
  };
}
