// Fair shares of the workers between clients (issue 48, item 6), checked by order, never by time: the scheduler's
// deficit round robin by pixel cost and its reserved worker, with jobs held open by the test; the client key
// (X-Forwarded-For only from a trusted balancer); and a real server (--workers 1) behind which a client's small
// photo, sent while another client's three 4000x3000 photos wait, is answered before them.

import https from 'node:https';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServerProcess, type ServerProcess } from '../testkit/server-process.js';
import { fittedJpeg, VGA_FACE_PHOTO, vgaJpeg } from '../testkit/vga-photos.js';
import { EngineError } from '../src/engine/errors.js';
import { clientKey, parseTrustedProxies } from '../src/server/client-identity.js';
import { FairScheduler, LARGE_PIXELS, RESERVE_WINDOW_MS } from '../src/server/fair-scheduler.js';
import { httpsRequest, ROOT, useTempDirs } from './helpers.js';

const MP12 = 4000 * 3000;
const tempDir = useTempDirs();
const VGA = 640 * 480;

/** A scheduler whose jobs the test finishes one by one; `started` lists them in the order they began. */
function harness(slots: number, queueLimit = 64) {
  let clock = 0;
  const scheduler = new FairScheduler({ slots, queueLimit, now: () => clock });
  const started: string[] = [];
  const open = new Map<string, () => void>();
  let n = 0;
  const submit = (client: string, pixels: number): Promise<string> => {
    const name = `${client}${++n}`;
    return scheduler.run(client, pixels, () => {
      started.push(name);
      return new Promise<string>((resolve) => open.set(name, () => resolve(name)));
    });
  };
  /** Finishes a running job and lets the scheduler start the next ones. */
  const finish = async (name: string) => {
    const done = open.get(name);
    if (!done) throw new Error(`${name} is not running (running: ${[...open.keys()].join(', ')})`);
    open.delete(name);
    done();
    for (let i = 0; i < 5; i++) await Promise.resolve();
  };
  return { scheduler, started, submit, finish, running: () => [...open.keys()], tick: (ms: number) => (clock += ms) };
}

describe('the fair scheduler', () => {
  it("serves a light client between a heavy client's jobs, on the worker kept from large images", async () => {
    const h = harness(2);
    for (let i = 0; i < 8; i++) void h.submit('heavy', MP12);
    expect(h.running()).toEqual(['heavy1', 'heavy2']); // alone, it has both workers
    const light = h.submit('light', VGA);
    expect(h.scheduler.waiting).toBe(7);
    await h.finish('heavy1');
    // the freed worker goes to the light client, not to the heavy one's third photo
    expect(h.running()).toEqual(['heavy2', 'light9']);
    await h.finish('light9');
    await expect(light).resolves.toBe('light9');
    // while the light client is about, one worker stays free of large images: the heavy client waits for itself
    expect(h.running()).toEqual(['heavy2']);
    const again = h.submit('light', VGA);
    expect(h.running()).toEqual(['heavy2', 'light10']);
    await h.finish('light10');
    await again;
    await h.finish('heavy2');
    expect(h.running()).toEqual(['heavy3']);
    // once the light client has been quiet for the window, the heavy one has both workers again
    h.tick(RESERVE_WINDOW_MS + 1);
    await h.finish('heavy3');
    expect(h.running()).toEqual(['heavy4', 'heavy5']);
  });

  it('shares one worker by pixels, not by turns: a client of 4-MP images gets a quarter of the jobs of a 1-MP one', async () => {
    const h = harness(1);
    for (let i = 0; i < 12; i++) void h.submit('big', 4_000_000);
    for (let i = 0; i < 12; i++) void h.submit('small', 1_000_000);
    for (let i = 0; i < 15; i++) await h.finish(h.running()[0]!);
    const order = h.started.map((s) => s.replace(/\d+$/, ''));
    // after big1 (which started alone), four small ones for every big one (the big client's first turn came first)
    const s = 'small';
    const b = 'big';
    expect(order.slice(1, 16)).toEqual([s, s, s, b, s, s, s, s, b, s, s, s, s, b, s]);
  });

  it('gives two clients of the same cost turns of a megapixel each, whatever the order their jobs came in', async () => {
    const h = harness(1);
    for (let i = 0; i < 6; i++) void h.submit('a', VGA);
    for (let i = 0; i < 5; i++) void h.submit('b', VGA);
    for (let i = 0; i < 9; i++) await h.finish(h.running()[0]!);
    // a1 alone, then three 640x480 images (0.92 MP) a turn
    expect(h.started.map((s) => s[0]).join('')).toBe('aaaabbbaab');
  });

  it('keeps the queue limit: a client with jobs waiting is refused past it, a new client is not shut out', async () => {
    const h = harness(1, 4);
    void h.submit('flood', MP12); // running
    for (let i = 0; i < 4; i++) void h.submit('flood', MP12);
    const refused = h.submit('flood', MP12);
    await expect(refused).rejects.toBeInstanceOf(EngineError);
    await expect(refused).rejects.toMatchObject({ code: 'OVERLOADED' });
    const other = h.submit('other', VGA); // its first waiting job is taken
    expect(h.scheduler.waiting).toBe(5);
    await expect(h.submit('other', VGA)).rejects.toMatchObject({ code: 'OVERLOADED' });
    await h.finish('flood1');
    expect(h.running()).toEqual(['other7']);
    await h.finish('other7');
    await expect(other).resolves.toBe('other7');
  });

  it('a large image may take the only worker of a one-worker engine', () => {
    const h = harness(1);
    void h.submit('light', VGA);
    void h.submit('heavy', LARGE_PIXELS + 1);
    expect(h.running()).toEqual(['light1']);
    return h.finish('light1').then(() => expect(h.running()).toEqual(['heavy2']));
  });
});

describe('the client key', () => {
  const trusted = parseTrustedProxies('10.0.0.2, ::ffff:10.0.0.3');
  it('is the peer address, or the last untrusted hop of X-Forwarded-For from a trusted balancer', () => {
    expect(clientKey('192.0.2.7', '198.51.100.1', trusted)).toBe('192.0.2.7'); // not a balancer: its header is ignored
    expect(clientKey('10.0.0.2', '198.51.100.1', trusted)).toBe('198.51.100.1');
    expect(clientKey('::ffff:10.0.0.2', '203.0.113.9, 198.51.100.1, 10.0.0.3', trusted)).toBe('198.51.100.1');
    expect(clientKey('10.0.0.2', undefined, trusted)).toBe('10.0.0.2');
    expect(clientKey('10.0.0.2', 'garbage, 198.51.100.1', trusted)).toBe('198.51.100.1');
    expect(clientKey('10.0.0.2', '198.51.100.1, garbage', trusted)).toBe('10.0.0.2');
    expect(clientKey('2001:db8:1:2:3:4:5:6', undefined, trusted)).toBe('2001:db8:1:2::/64');
    expect(() => parseTrustedProxies('balancer.example')).toThrow(/--trusted-proxies/);
  });
});

describe('a real server with one worker', () => {
  let server: ServerProcess;
  const agent = new https.Agent({ rejectUnauthorized: false, keepAlive: true });
  beforeAll(async () => {
    server = await startServerProcess(['--workers', '1', '--trusted-proxies', '127.0.0.1', '--data-dir', tempDir('edgecv-fair-')]);
  }, 120_000);
  afterAll(async () => {
    agent.destroy();
    await server?.stop();
  });

  it("answers a light client before the heavy client's photos that came first", async () => {
    const big = fittedJpeg(ROOT, VGA_FACE_PHOTO, 4000, 3000);
    const small = vgaJpeg(ROOT, VGA_FACE_PHOTO);
    const order: string[] = [];
    const send = (name: string, from: string, body: Buffer) =>
      httpsRequest(`${server.url}v1/vision/face/`, {
        method: 'POST',
        agent,
        body,
        headers: { 'content-type': 'image/jpeg', 'x-forwarded-for': from },
      }).then((r) => {
        expect(r.status, r.text).toBe(200);
        order.push(name);
      });
    const heavy = [1, 2, 3].map((i) => send(`heavy${i}`, '198.51.100.1', big));
    // the light photo is sent once two heavy ones wait behind the one running
    for (let i = 0; i < 600; i++) {
      const ready = JSON.parse((await httpsRequest(`${server.url}health/ready`, { agent })).text) as { queue: { queued: number } };
      if (ready.queue.queued >= 2) break;
      await new Promise((r) => setTimeout(r, 20));
    }
    await Promise.all([...heavy, send('light', '203.0.113.5', small)]);
    expect(order.indexOf('light')).toBe(1);
  }, 120_000);
});
