// DNS rebinding. A page of rebind.example whose name then resolves to 127.0.0.1 (or to this server's LAN
// address) is same-origin with this server in the victim's browser: its requests carry Origin and Host
// rebind.example, pass the Origin check, and, sent from the edge machine itself, are loopback (the admin
// without --admin-key). What gives it away is the Host header: the name the browser thinks it talks to.
// Every request, and every WebSocket upgrade, whose Host is not one of this server's names is refused
// (as nginx's refusing default server or Jupyter's local_hostnames do): localhost, the addresses it
// listens on (every interface's when it listens on all), its host name, and the names of --allowed-hosts.
// Any IP address passes, in any literal form (`127.1`, `[0:0:0:0:0:0:0:1]`): only a DNS name can be rebound.

import { isIP } from 'node:net';
import os from 'node:os';
import type { MiddlewareHandler } from 'hono';
import { HttpError } from './errors.js';
import { canonicalIpHost } from './host-literal.js';

/** Whether a Host header names this server. */
export type HostCheck = (hostHeader: string | undefined) => boolean;

/** How long the interfaces' addresses are reused before they are read again (DHCP may change them). */
const ADDRESSES_TTL_MS = 10_000;

/** The name of a Host header, without port, brackets or a final dot, lower case. */
export function hostName(header: string): string {
  let host = header.trim().toLowerCase();
  if (host.startsWith('[')) host = host.slice(1, host.indexOf(']') < 0 ? undefined : host.indexOf(']'));
  else if (host.indexOf(':') === host.lastIndexOf(':')) host = host.replace(/:\d*$/, '');
  return host.replace(/\.$/, '');
}

const HOST_NAME = /^(?=.{1,253}$)([a-z0-9_]([a-z0-9_-]{0,61}[a-z0-9_])?)(\.[a-z0-9_]([a-z0-9_-]{0,61}[a-z0-9_])?)*$/;

/**
 * The names of --allowed-hosts / EDGECV_ALLOWED_HOSTS: comma-separated host names or addresses (no scheme,
 * no port), or `*` for any Host (the check off, e.g. behind a balancer that rewrites Host). Throws for
 * anything else, so that a typo does not silently refuse every client.
 */
export function parseAllowedHosts(list: string | undefined): string[] | '*' {
  if (list === undefined) return [];
  const entries = list
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
  if (entries.includes('*')) return '*';
  return entries.map((entry) => {
    const name = hostName(entry);
    const colons = entry.split(':').length - 1;
    const withPort = entry.startsWith('[') ? !entry.endsWith(']') : colons === 1;
    const ipv6 = colons >= 2 && /^[0-9a-f:.]+$/.test(name);
    if (withPort || entry.includes('/') || !(HOST_NAME.test(name) || ipv6)) {
      throw new Error(
        `invalid --allowed-hosts entry ${JSON.stringify(entry)}: expected a host name or address without scheme or port, e.g. edgecv.example.com, or *`,
      );
    }
    return name;
  });
}

function interfaceAddresses(): string[] {
  return Object.values(os.networkInterfaces())
    .flatMap((list) => list ?? [])
    .map((a) => a.address.toLowerCase().replace(/%.*$/, ''));
}

/** The Host check of a server listening on `listenHost`, with the names of --allowed-hosts besides its own. */
export function servedHosts(listenHost: string, allowedHosts: string | undefined): HostCheck {
  const extra = parseAllowedHosts(allowedHosts);
  if (extra === '*') return () => true;
  const fixed = new Set(['localhost', '127.0.0.1', '::1', os.hostname().toLowerCase(), hostName(listenHost), ...extra]);
  const everyInterface = listenHost === '0.0.0.0' || listenHost === '::';
  let addresses: Set<string> = new Set();
  let readAt = -Infinity;
  return (header) => {
    // HTTP/1.0 without Host: no browser sends that
    if (header === undefined || header.trim() === '') return true;
    const name = hostName(header);
    // an address is never a rebinding page's Host (that is the page's own DNS name), and a container's published
    // port is reached by the host machine's address, which is not one of the container's
    if (fixed.has(name) || name.endsWith('.localhost') || isIP(name) !== 0 || canonicalIpHost(header) !== undefined) return true;
    if (!everyInterface) return false;
    if (Date.now() - readAt > ADDRESSES_TTL_MS) {
      addresses = new Set(interfaceAddresses());
      readAt = Date.now();
    }
    return addresses.has(name);
  };
}

export function foreignHostMessage(header: string | undefined): string {
  return `this server does not answer for the host name ${JSON.stringify(hostName(header ?? ''))}: add it with --allowed-hosts (EDGECV_ALLOWED_HOSTS)`;
}

/** 421 Misdirected Request for a Host that is not one of this server's names, before anything else is read. */
export function refuseForeignHosts(check: HostCheck): MiddlewareHandler {
  return async (c, next) => {
    const host = c.req.header('host');
    if (!check(host)) throw new HttpError(421, foreignHostMessage(host));
    await next();
  };
}
