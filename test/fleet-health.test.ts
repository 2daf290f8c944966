// Health for a load balancer, in-process with the real engine and gallery: liveness and readiness (models, gallery
// load, drain, a saturated queue), and the drain of a real socket: Connection: close on keep-alive connections,
// the request in flight finishing, WebSocket clients getting a close frame with a reason.

import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import type { Engine } from '../src/index.js';
import { openRecognition } from '../src/gallery/open.js';
import type { RecognitionService } from '../src/gallery/recognition-service.js';
import { createApp } from '../src/server/app.js';
import { DrainState } from '../src/server/drain.js';
import { startServer } from '../src/server/server.js';
import { DEFAULT_BODY_LIMIT } from '../src/config.js';
import { openEngine, photo, useTempDirs } from './helpers.js';

const tempDir = useTempDirs();
const config = { bodyLimit: DEFAULT_BODY_LIMIT, poseRequiresGpu: false };
let engine: Engine;
let recognition: RecognitionService;

beforeAll(async () => {
  engine = await openEngine({ workers: 1, queueLimit: 1, warmUp: false }); // its own queue (saturation below); nothing timed
});
afterAll(async () => {
  await recognition?.close();
  await engine?.close();
});

interface ReadyBody {
  ready: boolean;
  draining: boolean;
  models: boolean;
  gallery: string;
  queue: { queued: number; limit: number; saturated: boolean } | null;
}

async function readiness(app: ReturnType<typeof createApp>): Promise<{ status: number; body: ReadyBody }> {
  const res = await app.request('/health/ready');
  return { status: res.status, body: (await res.json()) as ReadyBody };
}

describe('readiness and liveness', () => {
  it('is not ready while the gallery loads, ready after, and not ready from the first moment of a drain', async () => {
    const dataDir = tempDir('edgecv-health-');
    // an HNSW index from 100 samples: the import below builds one inside its window
    recognition = await openRecognition(engine, { gallery: 'sqlite', dataDir, galleryAnnThreshold: 100 });
    const drain = new DrainState();
    const app = createApp({ engine, config, recognition, drain });
    // open() returns with the load still running: the training-data-update window is open
    const loading = await readiness(app);
    expect(loading.status).toBe(503);
    expect(loading.body).toMatchObject({ ready: false, gallery: 'loading', draining: false, models: true });
    await recognition.ready;
    const ready = await readiness(app);
    expect(ready.status).toBe(200);
    expect(ready.body).toEqual({ ready: true, draining: false, models: true, gallery: 'ready', queue: { queued: 0, limit: 1, saturated: false } });

    const live = await app.request('/health/live');
    expect(live.status).toBe(200);
    expect(await live.json()).toMatchObject({ live: true, pid: process.pid });
    // /test/ keeps its meaning
    expect(await (await app.request('/test/')).json()).toEqual({ success: 'true' });

    drain.begin();
    const draining = await readiness(app);
    expect(draining.status).toBe(503);
    expect(draining.body).toMatchObject({ ready: false, draining: true, gallery: 'ready' });
    expect((await app.request('/health/live')).status).toBe(200); // alive while draining: no restart wanted
  });

  it('is not ready while a bulk import rebuilds the gallery (recognition answers 503 meanwhile)', async () => {
    const app = createApp({ engine, config, recognition });
    const { model, version, dim } = recognition.embedder;
    let x = 7;
    const unit = () => {
      const v = new Float32Array(dim).map(() => (x = (x * 1103515245 + 12345) & 0x7fffffff) / 0x7fffffff - 0.5);
      const n = Math.hypot(...v);
      return v.map((e) => e / n);
    };
    const lines = Array.from({ length: 600 }, (_, i) =>
      JSON.stringify({ subject: `s${i % 50}`, model, model_version: version, embedding: Buffer.from(unit().buffer).toString('base64') }),
    );
    // replace: the whole index is reloaded (and its HNSW graph built) inside the training-data-update window
    let settled = false;
    const importing = recognition.import(lines.join('\n'), true).finally(() => (settled = true));
    const seen = new Set<string>();
    while (!settled) {
      const r = await readiness(app);
      seen.add(`${r.status} ${r.body.gallery}`);
      await new Promise((res) => setImmediate(res));
    }
    expect((await importing).total).toBe(600);
    expect(seen).toContain('503 syncing');
    expect(await readiness(app)).toMatchObject({ status: 200, body: { gallery: 'ready' } });
  });

  it('is not ready while the engine queue is full (the next image would be refused)', async () => {
    const app = createApp({ engine, config });
    const image = photo('dlib/faces/2008_002506.jpg');
    // one worker, a queue of one: of a burst, one runs, one waits (the queue is full), the rest are refused
    const burst = Array.from({ length: 6 }, () => engine.detectFaces(image).catch(() => null));
    let saturated: ReadyBody | undefined;
    for (let i = 0; i < 200 && !saturated; i++) {
      const r = await readiness(app);
      if (r.status === 503) saturated = r.body;
      else await new Promise((res) => setTimeout(res, 1));
    }
    await Promise.all(burst);
    expect(saturated).toMatchObject({ ready: false, draining: false, gallery: 'absent', queue: { queued: 1, limit: 1, saturated: true } });
    expect((await readiness(app)).status).toBe(200);
  });
});

describe('drain of a listening server', () => {
  it('answers Connection: close on keep-alive connections once draining, and lets the request in flight finish', async () => {
    const app = createApp({ engine, config });
    const server = await startServer({ app, port: 0, host: '127.0.0.1', webSocketMaxPayload: DEFAULT_BODY_LIMIT });
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    const get = (path: string, body?: Buffer) =>
      new Promise<{ status: number; connection: string | undefined; port: number }>((resolve, reject) => {
        const req = http.request(
          `${server.url}${path.slice(1)}`,
          { agent, method: body ? 'POST' : 'GET', headers: body ? { 'content-type': 'image/jpeg' } : {} },
          (res) => {
            const port = (res.socket.address() as AddressInfo).port;
            res.resume();
            res.on('end', () => resolve({ status: res.statusCode ?? 0, connection: res.headers.connection, port }));
          },
        );
        req.on('error', reject);
        req.end(body);
      });
    try {
      const before = await get('/test/');
      expect(before.connection).toBe('keep-alive');

      const ws = new WebSocket(`ws://127.0.0.1:${server.port}/ws/detector/detect`);
      await new Promise((resolve, reject) => ws.once('open', resolve).once('error', reject));
      const closed = new Promise<{ code: number; reason: string }>((resolve) =>
        ws.once('close', (code, reason) => resolve({ code, reason: reason.toString() })),
      );

      // a face detection in flight when the drain begins
      const inFlight = get('/detector/detect/', photo('dlib/faces/2008_002506.jpg'));
      await new Promise((r) => setTimeout(r, 5));
      server.drain();
      const answered = await inFlight;
      expect(answered.status).toBe(200);
      expect(answered.connection).toBe('close');
      const after = await get('/test/');
      expect(after.connection).toBe('close'); // a new request after the drain began: told to go away
      const closing = server.close(5000);
      expect(await closed).toEqual({ code: 1001, reason: 'server shutting down' });
      await closing;
    } finally {
      agent.destroy();
      await server.close(0);
    }
  });
});

describe('the audit trail', () => {
  it('keeps a line for a failing health check, not for a passing one', async () => {
    const { AuditLog } = await import('../src/audit/audit-log.js');
    const { requestTrace } = await import('../src/server/request-trace.js');
    const { Hono } = await import('hono');
    const audit = new AuditLog(tempDir('edgecv-audit-'));
    let ready = true;
    const app = new Hono()
      .use('*', requestTrace({ audit }))
      .get('/health/ready', (c) => c.json({ ready }, ready ? 200 : 503))
      .get('/test', (c) => c.json({ success: 'true' }));
    for (let i = 0; i < 5; i++) expect((await app.request('/health/ready')).status).toBe(200);
    ready = false;
    expect((await app.request('/health/ready')).status).toBe(503);
    expect((await app.request('/test')).status).toBe(200);
    expect(
      audit
        .recent()
        .map((e) => `${e.route} ${e.status}`)
        .sort(),
    ).toEqual(['/health/ready 503', '/test 200']);
    audit.close();
  });
});
