// The failed-login limiter on its own clock: per (address, username), per address (IPv6 by /64), per username
// across addresses, the window, success taking a try back, and bounded memory. The race through a real HTTPS
// server is in metrics-server.test.ts ('login').

import { describe, expect, it } from 'vitest';
import { FailedLoginLimiter } from '../src/auth/login-limiter.js';

const T = 1_000_000;

/** Tries `n` logins that all fail; returns how many were let through. */
function failMany(limiter: FailedLoginLimiter, address: string, username: string, n: number, now = T): number {
  let admitted = 0;
  for (let i = 0; i < n; i++) if (limiter.admit(address, username, now).attempt) admitted++;
  return admitted;
}

describe('FailedLoginLimiter', () => {
  it('lets perUser tries through per (address, username), then says how long to wait', () => {
    const limiter = new FailedLoginLimiter({ perUser: 3, perAddress: 5, perUsername: 100, windowMs: 1000 });
    expect(failMany(limiter, '1.2.3.4', 'alice', 10)).toBe(3);
    expect(limiter.admit('1.2.3.4', 'alice', T).retryAfterSeconds).toBe(1);
    expect(limiter.admit('5.6.7.8', 'alice', T).attempt).toBeDefined(); // another address
    expect(failMany(limiter, '1.2.3.4', 'bob', 1)).toBe(1);
    expect(failMany(limiter, '1.2.3.4', 'carol', 1)).toBe(1);
    expect(limiter.admit('1.2.3.4', 'dave', T).retryAfterSeconds).toBe(1); // 5 tries from the address in all
    expect(limiter.admit('1.2.3.4', 'alice', T + 1001).attempt).toBeDefined(); // the window has passed
  });

  it('stops guesses at one username spread over many addresses', () => {
    const limiter = new FailedLoginLimiter({ perUser: 5, perAddress: 20, perUsername: 20 });
    let admitted = 0;
    for (let a = 1; a <= 40; a++) admitted += failMany(limiter, `127.0.0.${a}`, 'alice', 5);
    expect(admitted).toBe(20);
    expect(limiter.admit('10.9.9.9', 'alice', T).retryAfterSeconds).toBeGreaterThan(0);
    expect(limiter.admit('10.9.9.9', 'bob', T).attempt).toBeDefined();
  });

  it('counts IPv6 clients by their /64 (address-group.test.ts)', () => {
    const limiter = new FailedLoginLimiter({ perUser: 100, perAddress: 20, perUsername: 1000 });
    let admitted = 0;
    for (let i = 1; i <= 50; i++) admitted += failMany(limiter, `2001:db8:1:2::${i.toString(16)}`, `user${i}`, 1);
    expect(admitted).toBe(20);
    expect(limiter.admit('2001:db8:1:3::1', 'user1', T).attempt).toBeDefined(); // another /64
  });

  it('takes a successful try back: a right password does not use up the limit', () => {
    const limiter = new FailedLoginLimiter({ perUser: 2, perAddress: 3, perUsername: 3 });
    for (let i = 0; i < 10; i++) limiter.admit('1.2.3.4', 'alice', T).attempt!.succeeded();
    expect(failMany(limiter, '1.2.3.4', 'alice', 5)).toBe(2);
    expect(failMany(limiter, '1.2.3.4', 'bob', 5)).toBe(1); // the address's third try
  });

  it('keeps bounded memory whatever it is sent', () => {
    const limiter = new FailedLoginLimiter({ perUser: 5, perAddress: 20, perUsername: 20, maxKeys: 1000 });
    for (let i = 0; i < 5000; i++) limiter.admit(`10.0.${i >> 8}.${i & 255}`, `user${i}`, T);
    expect(limiter.size).toBeLessThanOrEqual(1000);
  });
});
