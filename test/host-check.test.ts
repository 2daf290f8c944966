// DNS rebinding: a request or WebSocket upgrade whose Host is not one of the server's
// names is refused with 421 before any route, over a real socket; its own names (localhost, its addresses,
// its host name, --allowed-hosts) pass, with or without a port; --allowed-hosts is checked at start.

import http from 'node:http';
import os from 'node:os';
import { Hono } from 'hono';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError, parseServerConfig } from '../src/config.js';
import { DEFAULT_BODY_LIMIT } from '../src/engine/limits.js';
import { serverApp } from '../src/server/app.js';
import { hostName, servedHosts } from '../src/server/host-check.js';
import { startServer, type RunningServer } from '../src/server/server.js';

let running: RunningServer;
beforeAll(async () => {
  const hosts = servedHosts('127.0.0.1', 'edgecv.example,10.9.8.7');
  const api = new Hono().get('/trainer/export', (c) => c.json({ exported: true }));
  const app = serverApp({ config: { bodyLimit: DEFAULT_BODY_LIMIT }, hosts }, api);
  running = await startServer({ app, port: 0, host: '127.0.0.1', webSocketMaxPayload: DEFAULT_BODY_LIMIT, webSocket: { hosts } });
});
afterAll(async () => {
  await running?.close(100);
});

function ask(host: string, extra: Record<string, string> = {}): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port: running.port, path: '/trainer/export/', headers: { host, ...extra } }, (res) => {
      let body = '';
      res.on('data', (d) => (body += d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', reject);
    req.setTimeout(5000, () => req.destroy(new Error('no answer')));
    req.end();
  });
}

describe('the Host check', () => {
  it("a rebinding page's request (its own Host and Origin, sent to 127.0.0.1) is refused with 421", async () => {
    const res = await ask('rebind.example:8080', { origin: 'http://rebind.example:8080' });
    expect(res.status).toBe(421);
    expect(JSON.parse(res.body)).toEqual({ success: 'false', error: expect.stringMatching(/"rebind\.example".*--allowed-hosts/) });
  });

  it("the server's own names pass, with or without a port", async () => {
    const port = running.port;
    for (const host of [
      `127.0.0.1:${port}`,
      `localhost:${port}`,
      'localhost',
      'app.localhost',
      `[::1]:${port}`,
      'edgecv.example',
      'EDGECV.example.:8008',
      '10.9.8.7',
      os.hostname(),
    ]) {
      expect([host, (await ask(host)).status]).toEqual([host, 200]);
    }
    for (const host of ['edgecv.example.evil', 'example.10.9.8.7', 'edgecv', 'localhost.evil'])
      expect([host, (await ask(host)).status]).toEqual([host, 421]);
  });

  it("any IP address passes (only a DNS name can be rebound; a container is reached by its host's address)", async () => {
    for (const host of [
      '127.0.0.2',
      '10.9.8.70:80',
      '192.0.2.10:8008',
      '[2001:db8::1]:8008',
      '[0:0:0:0:0:0:0:1]',
      '[0:0:0:0:0:0:0:1]:8008',
      '[::ffff:127.0.0.1]',
      '[::ffff:127.0.0.1]:8008',
      '[::FFFF:7F00:1]',
      '[::]',
      '[fe80::1%25eth0]:80',
      '127.1',
      '0x7f.1:8008',
      '2130706433',
    ])
      expect([host, (await ask(host)).status]).toEqual([host, 200]);
    // the WebSocket upgrade's check (no HTTP listener in front of it) takes them alike; a name is still a name
    const check = servedHosts('127.0.0.1', undefined);
    for (const host of ['127.1', '0x7f.1:8008', '[0:0:0:0:0:0:0:1]', '[::ffff:127.0.0.1]:8008']) expect([host, check(host)]).toEqual([host, true]);
    for (const host of ['1.2.3.4.evil', '127.1.evil', '0x7f.evil']) expect([host, check(host)]).toEqual([host, false]);
  });

  it('a WebSocket upgrade with a foreign Host is refused with 421', async () => {
    const status = await new Promise<number>((resolve, reject) => {
      const req = http.request({
        host: '127.0.0.1',
        port: running.port,
        path: '/ws/detector/detect',
        headers: {
          host: 'rebind.example',
          connection: 'Upgrade',
          upgrade: 'websocket',
          'sec-websocket-version': '13',
          'sec-websocket-key': 'dGhlIHNhbXBsZSBub25jZQ==',
        },
      });
      req.on('response', (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      });
      req.on('upgrade', (_res, socket) => {
        socket.destroy();
        resolve(101);
      });
      req.on('error', reject);
      req.setTimeout(5000, () => req.destroy(new Error('no answer')));
      req.end();
    });
    expect(status).toBe(421);
  });

  it('listening on every interface, every interface address is a name of the server', () => {
    const check = servedHosts('0.0.0.0', undefined);
    const addresses = Object.values(os.networkInterfaces())
      .flatMap((l) => l ?? [])
      .map((a) => (a.family === 'IPv6' ? `[${a.address.replace(/%.*$/, '')}]:8008` : `${a.address}:8008`));
    for (const a of addresses) expect([a, check(a)]).toEqual([a, true]);
    expect(check('rebind.example')).toBe(false);
    expect(servedHosts('0.0.0.0', '*')('rebind.example')).toBe(true);
    expect(hostName('[FE80::1]:8008')).toBe('fe80::1');
  });

  it('--allowed-hosts takes names and addresses without scheme or port, or *', () => {
    expect(parseServerConfig(['--allowed-hosts', 'edgecv.example, 10.0.0.5,::1']).allowedHosts).toBe('edgecv.example, 10.0.0.5,::1');
    expect(parseServerConfig([], { EDGECV_ALLOWED_HOSTS: '*' }).allowedHosts).toBe('*');
    for (const bad of ['https://edgecv.example', 'edgecv.example:8008', 'a b', 'x/y']) {
      expect(() => parseServerConfig(['--allowed-hosts', bad])).toThrow(ConfigError);
    }
  });
});
