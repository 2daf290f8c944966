// The console's record of logins: every request, a failed login included, leaves an audit
// line in <data-dir>/audit/audit.log and is counted in GET /metrics (served to loopback only), as serve's are.

import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AuditLog } from '../src/audit/audit-log.js';
import { AuthService } from '../src/auth/auth-service.js';
import { addUser } from '../src/auth/users.js';
import { createConsoleApp } from '../src/console/app.js';
import { FleetMetrics } from '../src/console/fleet-metrics.js';
import { InfluxClient, parseInfluxUrl } from '../src/metrics/influx-client.js';
import { startServer, type RunningServer } from '../src/server/server.js';
import { useTempDirs } from './helpers.js';

const tmpDir = useTempDirs();
let dir: string;
let running: RunningServer;
let audit: AuditLog;
let metrics: FleetMetrics;
beforeAll(async () => {
  dir = tmpDir('edgecv-console-audit-');
  await addUser(dir, 'alice', 'alice-secret-12', ['acme']);
  audit = new AuditLog(dir);
  // never asked: the test logs in only
  metrics = new FleetMetrics(new Map([['eu', new InfluxClient(parseInfluxUrl('http://127.0.0.1:9/edgecv'))]]));
  const app = createConsoleApp({ auth: new AuthService(dir), metrics, audit });
  running = await startServer({ app, port: 0, host: '127.0.0.1' });
});
afterAll(async () => {
  await running?.close(100);
  metrics?.close();
  audit?.close();
});

function request(method: string, pathname: string, body?: unknown): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      { host: '127.0.0.1', port: running.port, method, path: pathname, headers: body ? { 'content-type': 'application/json' } : {} },
      (res) => {
        let text = '';
        res.on('data', (d) => (text += d));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
      },
    );
    req.on('error', reject);
    req.setTimeout(5000, () => req.destroy(new Error('no answer')));
    req.end(body === undefined ? undefined : JSON.stringify(body));
  });
}

describe("the console's audit trail and counters", () => {
  it('a failed and a good login each leave an audit line and are counted in /metrics', async () => {
    expect((await request('POST', '/api/v1/login', { username: 'alice', password: 'wrong-password' })).status).toBe(401);
    expect((await request('POST', '/api/v1/login', { username: 'mallory', password: 'wrong-password' })).status).toBe(401);
    expect((await request('POST', '/api/v1/login', { username: 'alice', password: 'alice-secret-12' })).status).toBe(200);
    const lines = fs
      .readFileSync(path.join(dir, 'audit', 'audit.log'), 'utf8')
      .split('\n')
      .filter((l) => l !== '')
      .map((l) => JSON.parse(l) as { route: string; status: number; client: string; user: string | null });
    const logins = lines.filter((l) => l.route === '/api/v1/login');
    expect(logins.map((l) => [l.status, l.client])).toEqual([
      [401, '127.0.0.1'],
      [401, '127.0.0.1'],
      [200, '127.0.0.1'],
    ]);
    const exposition = await request('GET', '/metrics');
    expect(exposition.status).toBe(200);
    const failed = /edgecv_http_requests_total\{[^}]*route="\/api\/v1\/login"[^}]*status="401"[^}]*\} (\d+)/.exec(exposition.text);
    expect(Number(failed?.[1])).toBeGreaterThanOrEqual(2);
  });
});
