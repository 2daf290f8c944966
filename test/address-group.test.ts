// The address a client is counted by (src/address-group.ts), which the login limiter and the WebSocket
// socket caps share: IPv4 as itself (IPv4-mapped too), IPv6 by its /64.

import { describe, expect, it } from 'vitest';
import { addressGroup } from '../src/address-group.js';

describe('addressGroup', () => {
  it('counts an IPv4 address as itself (also IPv4-mapped) and an IPv6 address by its /64', () => {
    expect(addressGroup('192.0.2.7')).toBe('192.0.2.7');
    expect(addressGroup('10.1.2.3')).toBe('10.1.2.3');
    expect(addressGroup('::ffff:192.0.2.7')).toBe('192.0.2.7');
    expect(addressGroup('::ffff:10.1.2.3')).toBe('10.1.2.3');
    expect(addressGroup('2001:db8:1:2:aaaa::1')).toBe('2001:db8:1:2::/64');
    expect(addressGroup('2001:db8:1:2:bbbb:cccc:dddd:eeee')).toBe('2001:db8:1:2::/64');
    expect(addressGroup('2001:db8:1:2:ffff:ffff:ffff:fffe')).toBe('2001:db8:1:2::/64');
    expect(addressGroup('2001:0db8:0001:0002::9')).toBe('2001:db8:1:2::/64');
    expect(addressGroup('2001:db8::1')).toBe('2001:db8:0:0::/64');
    expect(addressGroup('2001:db8:1:3::1')).not.toBe(addressGroup('2001:db8:1:2::1'));
    expect(addressGroup('::1')).toBe('0:0:0:0::/64');
    expect(addressGroup('64:ff9b::1.2.3.4')).toBe('64:ff9b:0:0::/64');
  });
});
