// The address a client is counted by, for limits per client (failed logins, WebSocket sockets): an IPv4 address
// as itself (IPv4-mapped IPv6 too), an IPv6 address by its /64, which one host or one customer holds whole.

import net from 'node:net';

export function addressGroup(address: string | undefined): string {
  const a = address ?? '';
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(a);
  if (mapped) return mapped[1]!;
  if (!net.isIPv6(a)) return a;
  const [head = '', tail = ''] = a.split('::', 2);
  const groups = (s: string) => (s === '' ? [] : s.split(':'));
  const headGroups = groups(head);
  const tailGroups = a.includes('::') ? groups(tail) : [];
  // An IPv4 tail (::ffff:0:1.2.3.4, 64:ff9b::1.2.3.4) stands for two groups.
  if (tailGroups.at(-1)?.includes('.')) tailGroups.push('0');
  const full = a.includes('::') ? [...headGroups, ...Array<string>(8 - headGroups.length - tailGroups.length).fill('0'), ...tailGroups] : headGroups;
  return `${full
    .slice(0, 4)
    .map((g) => Number.parseInt(g, 16).toString(16))
    .join(':')}::/64`;
}
