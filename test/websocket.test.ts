// The WebSocket routes on a real HTTPS socket (wss, the generated certificate verified), the real engine, real
// photos and a real SQLite gallery: every route answers what its REST route answers for the same photo, text
// frames are echoed, errors come back on a socket that stays open, a burst of frames is answered in order with
// one frame in flight, the 503 window of a training data update applies, oversize frames close with 1009, and the
// frames show in the Prometheus request counters.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { loadJohns, type LabelledPhoto } from './support/face-verification.js';
import { DEFAULT_BODY_LIMIT } from '../src/config.js';
import { RecognitionService } from '../src/gallery/recognition-service.js';
import { SqliteGalleryStore } from '../src/gallery/sqlite-store.js';
import type { Engine } from '../src/index.js';
import { createApp } from '../src/server/app.js';
import { registry } from '../src/server/prometheus.js';
import { startServer, type RunningServer } from '../src/server/server.js';
import { loadTls } from '../src/server/tls.js';
import { DATA_DIR, garbage, httpsRequest, openEngine, photo, useTempDirs } from './helpers.js';

const newTmpDir = useTempDirs();
const GROUP = 'dlib/faces/2008_002506.jpg'; // 3 faces
const NO_FACE = 'skimage/rocket.jpg';
const PEOPLE = 'darknet/person.jpg';

let engine: Engine;
let service: RecognitionService;
let importGate: Promise<void> | null = null;
let running: RunningServer;
let ca: string;
let johns: LabelledPhoto[];

/** A client socket that collects its text replies in order. */
class Client {
  readonly replies: string[] = [];
  #waiters: (() => void)[] = [];
  closed: Promise<{ code: number; reason: string }>;

  private constructor(readonly ws: WebSocket) {
    ws.on('message', (data) => {
      this.replies.push(data.toString());
      for (const w of this.#waiters.splice(0)) w();
    });
    this.closed = new Promise((resolve) => ws.on('close', (code, reason) => resolve({ code, reason: reason.toString() })));
  }

  static open(path: string, server = running): Promise<Client> {
    const ws = new WebSocket(`wss://127.0.0.1:${server.port}${path}`, { ca });
    return new Promise((resolve, reject) => {
      ws.once('open', () => resolve(new Client(ws)));
      ws.once('error', reject);
    });
  }

  /** Resolves when `n` replies have come (15 s at most). */
  async replyCount(n: number): Promise<string[]> {
    const deadline = Date.now() + 15000;
    while (this.replies.length < n) {
      if (Date.now() > deadline) throw new Error(`only ${this.replies.length} of ${n} replies`);
      await new Promise<void>((r) => {
        this.#waiters.push(r);
        setTimeout(r, 200);
      });
    }
    return this.replies.slice(0, n);
  }

  async ask(frame: Buffer | string): Promise<string> {
    const n = this.replies.length + 1;
    this.ws.send(frame, { binary: typeof frame !== 'string' });
    return (await this.replyCount(n))[n - 1]!;
  }
}

async function rest(path: string, body: Buffer): Promise<{ status: number; text: string }> {
  const r = await httpsRequest(`${running.url.replace(/\/$/, '')}${path}`, { method: 'POST', body, headers: { 'content-type': 'image/jpeg' }, ca });
  return { status: r.status, text: r.text };
}

/** An answer without its timing fields, which differ from call to call. */
function untimed(text: string): unknown {
  const { serverprocessingtime: _a, server_processing_time: _b, ...rest } = JSON.parse(text) as Record<string, unknown>;
  return rest;
}

beforeAll(async () => {
  engine = await openEngine({ workers: 2 });
  // The real SQLite store; a test can hold a bulk import's swap (its store commit) open with importGate, as
  // test/trainer.test.ts does: the 503 window is only that swap.
  const store = SqliteGalleryStore.open(newTmpDir('edgecv-ws-'));
  const addMany = store.addMany.bind(store);
  store.addMany = async (samples, replace) => {
    await importGate;
    return addMany(samples, replace);
  };
  service = await RecognitionService.open(engine, store, { log: () => {} });
  await service.ready;
  johns = loadJohns(DATA_DIR);
  for (const p of johns.filter((_, i) => i % 11 < 3)) await service.enrol(p.subject, p.bytes);
  const tls = await loadTls({ dataDir: newTmpDir('edgecv-ws-tls-') });
  ca = tls.cert;
  const app = createApp({ engine, config: { bodyLimit: DEFAULT_BODY_LIMIT }, recognition: service });
  running = await startServer({ app, tls, port: 0, host: '127.0.0.1', webSocketMaxPayload: DEFAULT_BODY_LIMIT });
});
afterAll(async () => {
  await running?.close(1000);
  await service?.close();
  await engine?.close();
});

describe('WebSocket routes', () => {
  const cases: [string, string, string][] = [
    ['/ws/detector/detect', '/detector/detect/', GROUP],
    ['/ws/detector/detect', '/detector/detect/', NO_FACE],
    ['/ws/recognizer/predict', '/recognizer/predict/', 'dlib/johns/John_Savage/000296_01099007.jpg'],
    ['/ws/pose/detect', '/pose/detect/', PEOPLE],
    ['/ws/openpose/detect', '/openpose/detect/', PEOPLE],
    ['/ws/object/detect', '/object/detect/', 'darknet/dog.jpg'],
  ];
  it.each(cases)('%s answers what POST %s answers for %s', async (wsPath, restPath, name) => {
    const client = await Client.open(wsPath);
    const fromWs = await client.ask(photo(name));
    const fromRest = await rest(restPath, photo(name));
    expect(fromRest.status).toBe(200);
    expect(untimed(fromWs)).toEqual(untimed(fromRest.text));
    // the very same JSON text, keys in the same order, only the timing values differ
    const shape = (t: string) => t.replace(/"(serverprocessingtime|server_processing_time)":"[0-9.]+"/g, '"$1":"T"');
    expect(shape(fromWs)).toBe(shape(fromRest.text));
    const body = JSON.parse(fromWs) as Record<string, unknown>;
    expect(body['success']).toBe(name === NO_FACE ? 'false' : 'true');
    client.ws.close();
  });

  it('passes the query string on to the route (object threshold)', async () => {
    const all = await Client.open('/ws/object/detect?threshold=0.05');
    const strict = await Client.open('/ws/object/detect/?threshold=0.9');
    const many = JSON.parse(await all.ask(photo('darknet/dog.jpg'))) as { objects: unknown[] };
    const few = JSON.parse(await strict.ask(photo('darknet/dog.jpg'))) as { objects?: unknown[] };
    expect(many.objects.length).toBeGreaterThan(few.objects?.length ?? 0);
    all.ws.close();
    strict.ws.close();
  });

  it('echoes text frames', async () => {
    const client = await Client.open('/ws/detector/detect');
    expect(await client.ask('ping 1')).toBe('ping 1');
    expect(await client.ask('{"t":12.5}')).toBe('{"t":12.5}');
    client.ws.close();
  });

  it('answers errors as the REST JSON body plus status, and keeps the socket open', async () => {
    const client = await Client.open('/ws/object/detect');
    const bad = JSON.parse(await client.ask(garbage())) as Record<string, unknown>;
    const restBad = await rest('/object/detect/', garbage());
    expect(restBad.status).toBe(400);
    expect(bad).toEqual({ ...(JSON.parse(restBad.text) as object), status: 400 });
    expect(bad['error']).toMatch(/image/i);
    const empty = JSON.parse(await client.ask(Buffer.alloc(0))) as Record<string, unknown>;
    expect(empty).toMatchObject({ success: 'false', status: 400 });
    // still open, still answering
    expect(client.ws.readyState).toBe(WebSocket.OPEN);
    expect((JSON.parse(await client.ask(photo('darknet/dog.jpg'))) as { success: string }).success).toBe('true');
    client.ws.close();
  });

  it('refuses an unknown WebSocket path with a JSON 404 before upgrading', async () => {
    const ws = new WebSocket(`wss://127.0.0.1:${running.port}/ws/nothing/here`, { ca });
    const status = await new Promise<number>((resolve) => {
      ws.once('unexpected-response', (_req, res) => resolve(res.statusCode ?? 0));
      ws.once('open', () => resolve(101));
    });
    expect(status).toBe(404);
    ws.on('error', () => {}); // the refused handshake
  });

  it('answers a burst of frames in order, one frame in flight per socket', async () => {
    const client = await Client.open('/ws/detector/detect');
    const images = [GROUP, NO_FACE, GROUP, 'dlib/faces/2008_001322.jpg', NO_FACE];
    const burst = Array.from({ length: 30 }, (_, i) => images[i % images.length]!);
    const expected = new Map<string, unknown>();
    for (const name of new Set(burst)) expected.set(name, untimed(await client.ask(photo(name))));
    const before = client.replies.length;
    let maxInEngine = 0;
    const sampler = setInterval(() => {
      const s = engine.stats();
      maxInEngine = Math.max(maxInEngine, s.queued + s.running);
    }, 2);
    for (const name of burst) client.ws.send(photo(name)); // all at once, no waiting
    const replies = (await client.replyCount(before + burst.length)).slice(before);
    clearInterval(sampler);
    expect(replies.map(untimed)).toEqual(burst.map((n) => expected.get(n)));
    // only this socket uses the engine here: had the server read ahead, several frames would queue at once
    expect(maxInEngine).toBe(1);
    // reading paused while a frame was answered: the server held at most the frame in flight and what one socket
    // read had already parsed, never the burst (memory bounded by the TCP window, not by the client)
    expect(running.webSockets!.stats().maxPendingFrames).toBeLessThanOrEqual(3);
    client.ws.close();
  });

  it('closes the socket with 1009 for a frame over the body limit', async () => {
    const tls = await loadTls({ dataDir: newTmpDir('edgecv-ws-small-') });
    const server = await startServer({
      app: createApp({ engine, config: { bodyLimit: 64 * 1024 } }),
      tls,
      port: 0,
      host: '127.0.0.1',
      webSocketMaxPayload: 64 * 1024,
    });
    try {
      const ws = new WebSocket(`wss://127.0.0.1:${server.port}/ws/detector/detect`, { ca: tls.cert });
      await new Promise((r) => ws.once('open', r));
      const closed = new Promise<number>((r) => ws.once('close', (code) => r(code)));
      ws.send(Buffer.alloc(64 * 1024 + 1));
      expect(await closed).toBe(1009);
    } finally {
      await server.close(500);
    }
  });

  it('answers 503 "Training data update in progress" during a bulk import, like REST', async () => {
    const client = await Client.open('/ws/recognizer/predict');
    const lines = johns.filter((_, i) => i % 11 >= 6 && i % 11 < 9).map((p) => JSON.stringify({ subject: p.subject, image: p.bytes.toString('base64') }));
    let release!: () => void;
    importGate = new Promise<void>((r) => (release = r));
    const importing = service.import(lines.join('\n'), false);
    for (let i = 0; i < 1000 && !service.updating; i++) await new Promise((r) => setTimeout(r, 10));
    expect(service.updating).toBe(true); // the swap: the store commit waits at the gate
    const during = JSON.parse(await client.ask(johns[9]!.bytes)) as Record<string, unknown>;
    expect(during).toEqual({ success: 'false', error: 'Training data update in progress', status: 503 });
    expect(client.ws.readyState).toBe(WebSocket.OPEN);
    release();
    importGate = null;
    await importing;
    const after = JSON.parse(await client.ask(johns[9]!.bytes)) as Record<string, unknown>;
    expect(after['success']).toBe('true');
    expect(after['status']).toBeUndefined();
    client.ws.close();
  });

  it('counts frames in the Prometheus request metrics of the REST route, and open sockets', async () => {
    const count = async () => {
      const m = await registry.getSingleMetric('edgecv_http_requests_total')!.get();
      return m.values.filter((v) => v.labels['route'] === '/detector/detect' && v.labels['status'] === '200').reduce((a, v) => a + v.value, 0);
    };
    const gauge = async () => (await registry.getSingleMetric('edgecv_websocket_connections')!.get()).values[0]!.value;
    await new Promise((r) => setTimeout(r, 300)); // the sockets earlier tests closed are gone
    const before = await count();
    const openBefore = await gauge();
    const client = await Client.open('/ws/detector/detect');
    expect(await gauge()).toBe(openBefore + 1);
    await client.ask(photo(GROUP));
    await client.ask(photo(NO_FACE));
    expect(await count()).toBe(before + 2);
    client.ws.close();
    await client.closed;
    await new Promise((r) => setTimeout(r, 50));
    expect(await gauge()).toBe(openBefore);
  });
});
