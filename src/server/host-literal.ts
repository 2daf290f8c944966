// An IP-literal Host header in its canonical form. `[0:0:0:0:0:0:0:1]`, `[::ffff:127.0.0.1]` or `127.1` name an
// address as surely as `[::1]` or `127.0.0.1` (only a DNS name can be rebound: host-check.ts), but
// @hono/node-server refuses a Host that its URL parser writes differently ("Invalid host header", a bare 400).
// The guard in front of it (http-guards.ts) gives it the form that parser writes.

import { isIP } from 'node:net';

/** A Host's port (`:8008`) after an IPv4 address or a bracketed IPv6 one. */
const PORT = /^(?:\[[^\]]*\]|[^:[\]]*):(\d+)$/;

/**
 * The canonical form of a Host header that is an IP literal (`[::1]:8008`, `127.0.0.1`); undefined for anything
 * else (a DNS name, a malformed Host: left to the checks that follow). An IPv6 zone (`%25eth0`, a URL cannot
 * carry one) is dropped: it only names one of this machine's interfaces.
 */
export function canonicalIpHost(host: string | undefined): string | undefined {
  // a name (a letter first: localhost, edgecv.example) is never an IP literal: no URL parse on every request
  if (host === undefined || !/^\s*[[0-9]/.test(host)) return undefined;
  const zoneless = host.trim().replace(/%[^\]]*\]/, ']');
  let hostname: string;
  try {
    hostname = new URL(`http://${zoneless}`).hostname;
  } catch {
    return undefined;
  }
  if (isIP(hostname.replace(/^\[|\]$/g, '')) === 0) return undefined;
  const port = PORT.exec(zoneless)?.[1];
  return port === undefined ? hostname : `${hostname}:${port}`;
}
