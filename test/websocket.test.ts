// The WebSocket routes on a real HTTPS socket (wss, the generated certificate verified), the real engine, real
// photos and a real SQLite gallery: every route answers what its REST route answers for the same photo, text
// frames are echoed, errors come back on a socket that stays open, a burst of frames is answered in order with
// one frame in flight, the 503 window of a training data update applies, oversize frames close with 1009, and the
// frames show in the Prometheus request counters.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { loadJohns, type LabelledPhoto } from '../testkit/face-verification.js';
import { DEFAULT_BODY_LIMIT } from '../src/config.js';
import { RecognitionService } from '../src/gallery/recognition-service.js';
import { SqliteGalleryStore } from '../src/gallery/sqlite-store.js';
import type { Engine } from '../src/index.js';
import { createApp } from '../src/server/app.js';
import { registry } from '../src/server/prometheus.js';
import { startServer, type ListenOptions, type RunningServer } from '../src/server/server.js';
import { loadTls } from '../src/server/tls.js';
import { DATA_DIR, garbage, httpsRequest, sharedEngine, photo, useTempDirs } from './helpers.js';
import { clientFrame, OPCODE, rawUpgrade } from '../testkit/ws-raw.js';
import { fuzzPhotos } from '../testkit/fuzz/run-fuzz.js';
import { runWebSocketFuzz, WS_KINDS } from '../testkit/fuzz/websocket-fuzz.js';

const newTmpDir = useTempDirs();
const GROUP = 'dlib/faces/2008_002506.jpg'; // 3 faces
const NO_FACE = 'skimage/rocket.jpg';
const PEOPLE = 'darknet/person.jpg';

let engine: Engine;
let service: RecognitionService;
let importGate: Promise<void> | null = null;
let running: RunningServer;
let ca: string;
let tlsFiles: { cert: string; key: string };
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
  engine = await sharedEngine({ workers: 2 });
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
  tlsFiles = tls;
  const app = createApp({ engine, config: { bodyLimit: DEFAULT_BODY_LIMIT }, recognition: service });
  running = await startServer({ app, tls, port: 0, host: '127.0.0.1', webSocketMaxPayload: DEFAULT_BODY_LIMIT });
});
afterAll(async () => {
  await running?.close(1000);
  await service?.close();
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

  it('refuses a malformed handshake (key, version, method) with a JSON error, not a bare status line', async () => {
    const path = '/ws/detector/detect';
    const cases: [Record<string, string | null>, number, RegExp][] = [
      [{ 'Sec-WebSocket-Key': 'not-a-key' }, 400, /Sec-WebSocket-Key/],
      [{ 'Sec-WebSocket-Key': null }, 400, /Sec-WebSocket-Key/],
      [{ 'Sec-WebSocket-Version': '99' }, 400, /Sec-WebSocket-Version/],
    ];
    for (const [headers, status, message] of cases) {
      const answer = await rawUpgrade({ host: '127.0.0.1', port: running.port, path, headers });
      answer.socket.destroy();
      expect(answer.status).toBe(status);
      expect(JSON.parse(answer.body)).toEqual({ success: 'false', error: expect.stringMatching(message) });
    }
  });

  it('answers a request that asks to upgrade to something else (h2c, as curl --http2 does) as plain HTTP', async () => {
    // the plain-HTTP listener of --http-routes all serves the WebSocket routes too
    const plain = await startServer({
      app: createApp({ engine, config: { bodyLimit: DEFAULT_BODY_LIMIT } }),
      port: 0,
      host: '127.0.0.1',
      webSocketMaxPayload: DEFAULT_BODY_LIMIT,
    });
    try {
      const h2c = {
        Upgrade: 'h2c',
        Connection: 'Upgrade, HTTP2-Settings',
        'HTTP2-Settings': 'AAMAAABkAAQCAAAAAAIAAAAA',
        'Sec-WebSocket-Key': null,
        'Sec-WebSocket-Version': null,
      };
      for (const tls of [false, true]) {
        const port = tls ? running.port : plain.port;
        const get = await rawUpgrade({ host: '127.0.0.1', port, path: '/health/live', headers: h2c, tls });
        get.socket.destroy();
        expect(get.status).toBe(200);
        expect(JSON.parse(get.body)).toMatchObject({ live: true });
        const image = photo(GROUP);
        const post = await rawUpgrade({
          host: '127.0.0.1',
          port,
          path: '/detector/detect/',
          method: 'POST',
          headers: { ...h2c, 'Content-Type': 'image/jpeg', 'Content-Length': String(image.length) },
          body: image,
          tls,
        });
        post.socket.destroy();
        expect(post.status).toBe(200);
        expect((JSON.parse(post.body) as { rects: unknown[] }).rects).toHaveLength(3);
      }
    } finally {
      await plain.close(500);
    }
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

  it('closes the socket with 1009 for a frame over the body limit, every time (30 tries, the client reading late)', async () => {
    const tls = await loadTls({ dataDir: newTmpDir('edgecv-ws-small-') });
    const server = await startServer({
      app: createApp({ engine, config: { bodyLimit: 64 * 1024 } }),
      tls,
      port: 0,
      host: '127.0.0.1',
      webSocketMaxPayload: 64 * 1024,
    });
    try {
      const codes: number[] = [];
      for (let i = 0; i < 30; i++) {
        const ws = new WebSocket(`wss://127.0.0.1:${server.port}/ws/detector/detect`, { ca: tls.cert });
        ws.on('error', () => {});
        await new Promise((r) => ws.once('open', r));
        const closed = new Promise<number>((r) => ws.once('close', (code) => r(code)));
        // Odd tries: echoes of earlier frames are still queued on the server when the oversize frame comes (the
        // client reads late), so its close frame waits behind them; tearing the socket down at once lost it (1006).
        const socket = (ws as unknown as { _socket: import('node:net').Socket })._socket;
        if (i % 2 === 1) {
          socket.pause();
          for (let k = 0; k < 10; k++) ws.send('x'.repeat(60_000));
        }
        ws.send(Buffer.alloc(64 * 1024 + 1));
        if (i % 2 === 1) setTimeout(() => socket.resume(), 50);
        codes.push(await closed);
      }
      expect(codes).toEqual(codes.map(() => 1009));
    } finally {
      await server.close(500);
    }
  });

  it('answers 503 "Training data update in progress" during a bulk import, like REST', async () => {
    const client = await Client.open('/ws/recognizer/predict');
    const lines = johns
      .filter((_, i) => i % 11 >= 6 && i % 11 < 9)
      .map((p) => JSON.stringify({ subject: p.subject, image: p.bytes.toString('base64') }));
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

/** Status of an upgrade request: 101 when the socket opened (it is then closed), else the refusal's status. */
function upgradeStatus(port: number, path: string, headers: Record<string, string> = {}): Promise<number> {
  const ws = new WebSocket(`wss://127.0.0.1:${port}${path}`, { ca, headers });
  ws.on('error', () => {});
  return new Promise<number>((resolve) => {
    ws.once('unexpected-response', (_req, res) => resolve(res.statusCode ?? 0));
    ws.once('open', () => {
      ws.close();
      resolve(101);
    });
  });
}

/** A server of its own whose WebSocket limits a test sets (the shared engine, no gallery). */
function serverWith(webSocket: ListenOptions['webSocket']): Promise<RunningServer> {
  const app = createApp({ engine, config: { bodyLimit: DEFAULT_BODY_LIMIT } });
  return startServer({ app, tls: tlsFiles, port: 0, host: '127.0.0.1', webSocketMaxPayload: DEFAULT_BODY_LIMIT, webSocket });
}

async function until(check: () => boolean, timeoutMs: number): Promise<boolean> {
  const end = Date.now() + timeoutMs;
  while (!check() && Date.now() < end) await new Promise((r) => setTimeout(r, 25));
  return check();
}

describe('WebSocket limits', () => {
  it('refuses an upgrade from a foreign Origin with a JSON 403, before upgrading; its own origin, an allowed one and none pass', async () => {
    const server = await serverWith({ allowedOrigins: ['https://console.example:8443'] });
    try {
      const path = '/ws/detector/detect';
      const refused = await rawUpgrade({ host: '127.0.0.1', port: server.port, path, headers: { Origin: 'https://evil.example' } });
      expect(refused.status).toBe(403);
      expect(JSON.parse(refused.body)).toMatchObject({ success: 'false', error: expect.stringMatching(/origin/i) });
      refused.socket.destroy();
      expect(await upgradeStatus(server.port, path, { Origin: 'null' })).toBe(403);
      expect(await upgradeStatus(server.port, path, { Origin: `https://127.0.0.1:${server.port + 1}` })).toBe(403);
      expect(await upgradeStatus(server.port, path, { Origin: `https://127.0.0.1:${server.port}` })).toBe(101);
      expect(await upgradeStatus(server.port, path, { Origin: 'https://console.example:8443' })).toBe(101);
      expect(await upgradeStatus(server.port, path)).toBe(101);
      expect(server.webSockets!.stats().refusedOrigin).toBe(3);
    } finally {
      await server.close(500);
    }
  });

  it('caps sockets per address (429) and in all (503); a place comes back when a socket closes', async () => {
    const perAddress = await serverWith({ limits: { maxSocketsPerAddress: 3 } });
    const inAll = await serverWith({ limits: { maxSockets: 4, maxSocketsPerAddress: 100 } });
    try {
      const path = '/ws/detector/detect';
      const held = await Promise.all([1, 2, 3].map(() => Client.open(path, perAddress)));
      expect(await upgradeStatus(perAddress.port, path)).toBe(429);
      held[0]!.ws.close();
      await held[0]!.closed;
      expect(await until(() => perAddress.webSockets!.stats().open === 2, 2000)).toBe(true);
      expect(await upgradeStatus(perAddress.port, path)).toBe(101);
      expect(perAddress.webSockets!.stats().refusedPerAddress).toBe(1);

      const four = await Promise.all([1, 2, 3, 4].map(() => Client.open(path, inAll)));
      const refusedInAll = async () =>
        (await registry.getSingleMetric('edgecv_websocket_refused_total')!.get()).values.find((v) => v.labels['reason'] === 'all')?.value ?? 0;
      const before = await refusedInAll();
      expect(await upgradeStatus(inAll.port, path)).toBe(503);
      expect(inAll.webSockets!.stats().refusedInAll).toBe(1);
      expect(await refusedInAll()).toBe(before + 1);
      // the other listener has places of its own; a shared budget would count both
      for (const c of [...held, ...four]) c.ws.close();
    } finally {
      await Promise.all([perAddress.close(500), inAll.close(500)]);
    }
  });

  it('closes an idle socket (1001) and a trickled frame within the idle timeout; a socket in use stays open', async () => {
    const idleTimeoutMs = 800;
    const server = await serverWith({ limits: { idleTimeoutMs, closeGraceMs: 500 } });
    try {
      const t0 = Date.now();
      const idle = await Client.open('/ws/detector/detect', server);
      const busy = await Client.open('/ws/detector/detect', server);
      const trickle = await rawUpgrade({ host: '127.0.0.1', port: server.port, path: '/ws/detector/detect' });
      expect(trickle.status).toBe(101);
      // a 1,000-byte binary frame, one byte every 100 ms
      const frame = clientFrame(OPCODE.binary, Buffer.alloc(1000, 7));
      let sent = 0;
      const trickler = setInterval(() => {
        if (sent < frame.length && !trickle.socket.destroyed) trickle.socket.write(frame.subarray(sent, ++sent));
      }, 100);
      const pinger = setInterval(() => busy.ws.send('still here'), 200);
      try {
        // bounded: before the limits existed neither socket was ever closed
        const limit = <T>(p: Promise<T>) =>
          Promise.race([
            p,
            new Promise<{ code: null; reason: string }>((r) => setTimeout(() => r({ code: null, reason: 'still open' }), idleTimeoutMs * 2 + 3000)),
          ]);
        const idleClosed = await limit(idle.closed);
        const idleMs = Date.now() - t0;
        const trickleClosed = await limit(trickle.closed);
        const trickleMs = Date.now() - t0;
        expect(idleClosed.code).toBe(1001);
        expect(idleClosed.reason).toMatch(/idle/);
        expect(trickleClosed.code).toBe(1001);
        // the documented bound: the idle timeout plus one sweep (a quarter of it, 1 s at most), plus scheduling slack
        expect(idleMs).toBeLessThan(idleTimeoutMs * 1.25 + 1000);
        expect(trickleMs).toBeLessThan(idleTimeoutMs * 1.25 + 1000);
        expect(sent).toBeLessThan(frame.length);
        expect(busy.ws.readyState).toBe(WebSocket.OPEN);
        expect(busy.replies.length).toBeGreaterThan(3);
        expect(server.webSockets!.stats().closedIdle).toBe(2);
      } finally {
        clearInterval(trickler);
        clearInterval(pinger);
        busy.ws.close();
      }
    } finally {
      await server.close(500);
    }
  });

  it('lets a frame slower than the idle timeout through while it comes at the minimum rate', async () => {
    const idleTimeoutMs = 600;
    const server = await serverWith({ limits: { idleTimeoutMs, minFrameBytesPerSec: 1000, maxFrameMs: 10_000 } });
    try {
      const slow = await rawUpgrade({ host: '127.0.0.1', port: server.port, path: '/ws/detector/detect' });
      // a 4,000-byte text frame at about 2,000 bytes/s: twice the idle timeout and more to arrive whole
      const frame = clientFrame(OPCODE.text, 'z'.repeat(4000));
      for (let at = 0; at < frame.length; at += 200) {
        slow.socket.write(frame.subarray(at, at + 200));
        await new Promise((r) => setTimeout(r, 100));
      }
      expect(await until(() => slow.frames.some((f) => f.opcode === OPCODE.text), 3000)).toBe(true);
      expect(slow.frames.find((f) => f.opcode === OPCODE.text)!.payload.toString()).toBe('z'.repeat(4000));
      expect(server.webSockets!.stats().closedIdle).toBe(0);
      slow.socket.destroy();
    } finally {
      await server.close(500);
    }
  });

  it('pings; drops a silent peer that ignores the close frame, and a client that does not read its answers', async () => {
    const idleTimeoutMs = 800;
    const server = await serverWith({ limits: { idleTimeoutMs, closeGraceMs: 500 } });
    const serverSockets: import('node:net').Socket[] = [];
    server.server.on('upgrade', (_req, socket: import('node:net').Socket) => serverSockets.push(socket));
    try {
      // a peer gone silent: it answers no ping and no close frame
      const deaf = await rawUpgrade({ host: '127.0.0.1', port: server.port, path: '/ws/detector/detect' });
      // sends 60 KB text frames to be echoed, and never reads: the echoes pile up in the socket buffers
      const reader = await Client.open('/ws/detector/detect', server);
      const readerSocket = (reader.ws as unknown as { _socket: import('node:net').Socket })._socket;
      readerSocket.pause();
      for (let k = 0; k < 300; k++) reader.ws.send('y'.repeat(60_000));
      try {
        await until(() => server.webSockets!.stats().open === 0, idleTimeoutMs * 3 + 2000);
        const stats = server.webSockets!.stats();
        expect(stats).toMatchObject({ open: 0, closedIdle: 1, closedUnread: 1 });
        expect(deaf.frames[0]!.opcode).toBe(OPCODE.ping);
        expect(deaf.frames.at(-1)!.opcode).toBe(OPCODE.close);
        expect((await deaf.closed).code).toBe(1001); // and the server dropped the connection: closed resolved
        // while it waited, the server held one answer at most: it read nothing more
        expect(Math.max(...serverSockets.map((s) => s.writableLength))).toBeLessThan(2 * 60_000);
      } finally {
        deaf.socket.destroy();
        reader.ws.terminate();
      }
    } finally {
      await server.close(500);
    }
  });
});

describe('WebSocket fuzz (the short run of npm run fuzz)', () => {
  it('answers 150 seeded hostile WebSocket cases by the rules: JSON refusals and answers, close codes, no 5xx', async () => {
    const report = await runWebSocketFuzz({
      host: '127.0.0.1',
      port: running.port,
      seed: 21,
      cases: 150,
      concurrency: 4,
      photos: fuzzPhotos(DATA_DIR, 4),
    });
    expect(Object.keys(report.byKind).sort()).toEqual([...WS_KINDS].sort());
    expect(report.failures).toEqual([]);
    // real photos went through the engine, and protocol violations were closed with their codes
    expect(Object.keys(report.byKind['ws-image']!.outcomes).some((o) => /answered .*200/.test(o))).toBe(true);
    expect(Object.keys(report.byKind['ws-protocol']!.outcomes)).toEqual(expect.arrayContaining(['closed 1002']));
    // nothing was left open
    expect(await until(() => running.webSockets!.stats().open === 0, 5000)).toBe(true);
  });
});
