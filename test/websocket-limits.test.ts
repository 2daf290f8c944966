// WebSocket caps (src/server/websocket-limits.ts): how sockets are counted (IPv6 by /64), the descriptor limit read
// from /proc, and, on a real `edgecv serve` under a 4,096-descriptor limit (prlimit), that one client opening idle
// sockets as fast as it can leaves new HTTPS clients their answers (before: 4,065 idle sockets and every new TLS
// handshake failed).

import fs from 'node:fs';
import https from 'node:https';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { descriptorLimit, descriptorReserve, SocketBudget, socketCapInAll, webSocketOptionsFromConfig } from '../src/server/websocket-limits.js';
import { useTempDirs } from './helpers.js';
import { startServerProcess, type ServerProcess } from '../testkit/server-process.js';

const newTmpDir = useTempDirs();

describe('socket counting', () => {
  it('reads the soft descriptor limit from /proc and keeps a reserve out of the cap in all', () => {
    const dir = newTmpDir('edgecv-limits-');
    const file = path.join(dir, 'limits');
    fs.writeFileSync(
      file,
      'Limit                     Soft Limit           Hard Limit           Units\nMax open files            4096                 8192                 files\n',
    );
    expect(descriptorLimit(file)).toBe(4096);
    expect(descriptorLimit(path.join(dir, 'missing'))).toBeNull();
    expect(descriptorReserve(4096)).toBe(1024);
    expect(descriptorReserve(600)).toBe(256);
    expect(socketCapInAll(4096, 4096)).toBe(3072);
    expect(socketCapInAll(100, 4096)).toBe(100);
    expect(socketCapInAll(4096, 200)).toBe(0);
    expect(socketCapInAll(4096, null)).toBe(4096);
    // this process: a number (Linux)
    expect(descriptorLimit()).toBeGreaterThan(0);
  });

  it('takes the options of edgecv serve: caps, idle time, the REST body rate and time, allowed origins', () => {
    const ws = webSocketOptionsFromConfig({
      wsMaxSockets: 10,
      wsMaxSocketsPerAddress: 3,
      wsIdleTimeout: 1500,
      minBodyRate: 2048,
      requestTimeout: 30_000,
      allowedOrigins: 'https://nvr.example:8443',
    });
    expect(ws.limits).toMatchObject({ maxSockets: 10, maxSocketsPerAddress: 3, idleTimeoutMs: 1500, minFrameBytesPerSec: 2048, maxFrameMs: 30_000 });
    expect([ws.budget.maxInAll, ws.budget.maxPerAddress]).toEqual([10, 3]);
    expect(ws.allowedOrigins).toEqual(['https://nvr.example:8443']);
    expect(ws.note).toBe('WebSockets: at most 10 open, 3 per address, closed after 1.5 s idle');
    const defaults = webSocketOptionsFromConfig({});
    expect(defaults.budget.maxPerAddress).toBe(64);
    expect(defaults.budget.maxInAll).toBe(socketCapInAll(4096));
  });

  it('refuses past the cap per address and in all, and takes a place back on give', () => {
    const budget = new SocketBudget(3, 2);
    expect(budget.take('a')).toBeNull();
    expect(budget.take('a')).toBeNull();
    expect(budget.take('a')).toBe('address');
    expect(budget.take('b')).toBeNull();
    expect(budget.take('c')).toBe('all');
    budget.give('a');
    expect(budget.open).toBe(2);
    expect(budget.take('c')).toBeNull();
    expect(budget.take('c')).toBe('all');
  });
});

describe('a server under a 4,096-descriptor limit', () => {
  let server: ServerProcess;
  beforeAll(async () => {
    server = await startServerProcess(
      // the per-address cap out of the way: the cap in all, from the descriptor limit, is what is tested
      ['--data-dir', newTmpDir('edgecv-fd-'), '--workers', '1', '--ws-max-sockets-per-address', '100000', '--no-warm-up'],
      120_000,
      ['prlimit', '--nofile=4096:4096'],
    );
  });
  afterAll(async () => {
    await server?.stop();
  });

  it('keeps answering new HTTPS clients while one client opens idle WebSockets as fast as it can', async () => {
    const url = new URL(server.url);
    expect(server.output()).toMatch(/WebSockets: at most 3072 open \(4096 asked; the descriptor limit 4096/);
    /** GET /health/live on a new connection (a new TLS handshake): the status, or the error. */
    const newClient = () =>
      new Promise<string>((resolve) => {
        const req = https.get(new URL('/health/live', url), { agent: false, rejectUnauthorized: false, timeout: 10_000 }, (res) => {
          res.resume();
          res.on('end', () => resolve(String(res.statusCode)));
        });
        req.on('timeout', () => req.destroy(new Error('timeout')));
        req.on('error', (e: NodeJS.ErrnoException) => resolve(e.code ?? e.message));
      });

    const sockets: WebSocket[] = [];
    const refusals: Record<string, number> = {};
    let attempts = 0;
    let stop = false;
    const open = () =>
      new Promise<void>((resolve) => {
        const ws = new WebSocket(`wss://127.0.0.1:${url.port}/ws/detector/detect`, { rejectUnauthorized: false });
        ws.on('error', () => {});
        ws.once('open', () => {
          sockets.push(ws);
          resolve();
        });
        ws.once('unexpected-response', (_req, res) => {
          refusals[res.statusCode ?? 0] = (refusals[res.statusCode ?? 0] ?? 0) + 1;
          res.resume();
          resolve();
        });
        ws.once('close', () => resolve());
      });
    // 64 upgrades in flight at a time, until 100 are refused or 4,200 were tried (past the 4,096 descriptors)
    const flooder = async () => {
      while (!stop && attempts < 4200 && (refusals[503] ?? 0) < 100) {
        attempts++;
        await open();
      }
    };
    const probes: string[] = [];
    const prober = (async () => {
      while (!stop) {
        probes.push(await newClient());
        await new Promise((r) => setTimeout(r, 100));
      }
    })();
    const deadline = setTimeout(() => (stop = true), 90_000);
    await Promise.all(Array.from({ length: 64 }, flooder));
    const after: string[] = [];
    for (let i = 0; i < 20; i++) after.push(await newClient());
    stop = true;
    clearTimeout(deadline);
    await prober;
    console.log(
      `${attempts} upgrades tried: ${sockets.length} open, refused ${JSON.stringify(refusals)}; new HTTPS clients: ${probes.length} during, ${after.length} after, answers ${JSON.stringify([...probes, ...after].reduce<Record<string, number>>((a, s) => ({ ...a, [s]: (a[s] ?? 0) + 1 }), {}))}`,
    );
    try {
      expect(refusals).toMatchObject({ 503: expect.any(Number) });
      expect(sockets.length).toBeLessThanOrEqual(3072);
      expect(sockets.length).toBeGreaterThan(2500);
      // every new HTTPS client was answered, during the flood and with every socket held
      expect(probes.filter((s) => s !== '200')).toEqual([]);
      expect(probes.length).toBeGreaterThan(5);
      expect(after).toEqual(after.map(() => '200'));
      expect(server.child.exitCode).toBeNull();
    } finally {
      for (const ws of sockets) ws.terminate();
    }
  });
});
