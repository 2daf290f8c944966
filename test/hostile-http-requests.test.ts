// Hostile HTTP requests against a real `edgecv serve` process on 127.0.0.1 over real TLS sockets:
// aborted uploads, requests Node's parser refuses, early 413s (also with Expect: 100-continue and under load),
// Content-Encoding, slow clients, security headers and TLS ciphers. Every reject must be the JSON error shape
// with a tracid, counted in Prometheus and written to the audit trail, and the server must keep serving.

import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import tls from 'node:tls';
import zlib from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_BODY_LIMIT } from '../src/config.js';
import { createApp } from '../src/server/app.js';
import { httpsRequest, openEngine, photo, useTempDirs } from './helpers.js';
import { freePort, startServerProcess, type ServerProcess } from '../testkit/server-process.js';

const LIMIT = 1024 * 1024;
const KEY = 'http-hostile-admin-key-0123';
const PNG = photo('skimage/astronaut.png');

const newTmpDir = useTempDirs();
let server: ServerProcess;
let dataDir: string;
let port: number;
let httpPort: number;

beforeAll(async () => {
  dataDir = newTmpDir('edgecv-http-hostile-');
  httpPort = await freePort();
  server = await startServerProcess([
    '--http-port',
    String(httpPort),
    '--data-dir',
    dataDir,
    '--workers',
    '1',
    '--body-limit',
    String(LIMIT),
    '--admin-key',
    KEY,
    '--headers-timeout',
    '2s',
    '--handshake-timeout',
    '2s',
    '--request-timeout',
    '30s',
    '--min-body-rate',
    '4K',
    '--no-warm-up', // the limits timed here are the HTTP layer's, not a first inference
  ]);
  port = Number(new URL(server.url).port);
});
afterAll(async () => {
  await server?.stop();
});

interface RawAnswer {
  /** Everything received (TLS-decrypted) until the server closed or `waitMs` passed. */
  text: string;
  /** The socket error, if the connection was reset. */
  error?: string;
  closed: boolean;
}

/** Writes `chunks` on a fresh TLS connection (one every `gapMs`), then reads until close or waitMs. */
function raw(chunks: Array<string | Buffer>, opts: { gapMs?: number; waitMs?: number; destroyAfterWrite?: boolean } = {}): Promise<RawAnswer> {
  return new Promise((resolve) => {
    const socket = tls.connect({ host: '127.0.0.1', port, rejectUnauthorized: false });
    let text = '';
    let error: string | undefined;
    let done = false;
    const finish = (closed: boolean) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      socket.destroy();
      resolve({ text, error, closed });
    };
    const timer = setTimeout(() => finish(false), opts.waitMs ?? 10_000);
    socket.on('data', (d: Buffer) => (text += d.toString('latin1')));
    socket.on('error', (e: NodeJS.ErrnoException) => (error = e.code ?? e.message));
    socket.on('close', () => finish(true));
    socket.once('secureConnect', async () => {
      for (const c of chunks) {
        if (socket.destroyed) break;
        // Each chunk handed to the socket before the next step: destroy() drops data still buffered in TLS
        // (Node 26.10 no longer sends it), and then the server would never see the half-sent body.
        await new Promise((r) => socket.write(c, r));
        if (opts.gapMs) await new Promise((r) => setTimeout(r, opts.gapMs));
      }
      if (opts.destroyAfterWrite) socket.destroy();
    });
  });
}

interface ParsedAnswer {
  status: number;
  headers: Record<string, string>;
  body: unknown;
}

/** The first HTTP answer in a raw response text. */
function parse(text: string): ParsedAnswer {
  const [head, ...rest] = text.split('\r\n\r\n');
  const lines = head!.split('\r\n');
  const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(lines[0]!)?.[1] ?? 0);
  const headers: Record<string, string> = {};
  for (const l of lines.slice(1)) {
    const i = l.indexOf(':');
    headers[l.slice(0, i).toLowerCase()] = l.slice(i + 1).trim();
  }
  let body: unknown = null;
  try {
    body = JSON.parse(rest.join('\r\n\r\n').slice(0, Number(headers['content-length'] ?? 0)));
  } catch {
    /* not JSON: the assertions below say so */
  }
  return { status, headers, body };
}

function expectJsonError(a: ParsedAnswer, status: number, message?: RegExp) {
  expect(a.status).toBe(status);
  expect(a.headers['content-type']).toMatch(/^application\/json/);
  expect(a.headers.tracid).toMatch(/^[0-9a-f]{32}$/);
  expect(a.headers['x-content-type-options']).toBe('nosniff');
  expect(a.headers['strict-transport-security']).toMatch(/max-age=\d+/);
  expect((a.body as { success: string }).success).toBe('false');
  if (message) expect((a.body as { error: string }).error).toMatch(message);
}

function auditLines(): Array<Record<string, unknown>> {
  const file = path.join(dataDir, 'audit', 'audit.log');
  return fs.existsSync(file)
    ? fs
        .readFileSync(file, 'utf8')
        .trim()
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l) as Record<string, unknown>)
    : [];
}

/** Options for httpsRequest: trust the server's self-signed certificate. */
const trusted = () => ({ ca: fs.readFileSync(path.join(dataDir, 'tls', 'cert.pem'), 'utf8') });

async function metrics(): Promise<string> {
  return (await httpsRequest(`${server.url}metrics`, trusted())).text;
}

async function detectStillWorks() {
  const res = await httpsRequest(`${server.url}detector/detect/`, {
    method: 'POST',
    body: PNG,
    headers: { 'content-type': 'image/png' },
    ...trusted(),
  });
  expect(res.status).toBe(200);
  return res;
}

const post = (pathname: string, headers: string[], body: string | Buffer = '') => [
  `POST ${pathname} HTTP/1.1\r\nHost: 127.0.0.1\r\n${headers.map((h) => `${h}\r\n`).join('')}\r\n`,
  body,
];

describe('requests the HTTP parser refuses', () => {
  it('answer the JSON error shape with a tracid, and are counted and audited', async () => {
    const cases: Array<[string, Array<string | Buffer>, number]> = [
      ['bad Content-Length', ['POST /detector/detect/ HTTP/1.1\r\nHost: a\r\nContent-Length: abc\r\n\r\n'], 400],
      ['unknown method', ['FROB /detector/detect/ HTTP/1.1\r\nHost: a\r\n\r\n'], 400],
      ['headers too large', [`GET / HTTP/1.1\r\nHost: a\r\nX-Big: ${'a'.repeat(70_000)}\r\n\r\n`], 431],
      ['missing Host', ['GET /detector/detect/ HTTP/1.1\r\n\r\n'], 400],
    ];
    const tracids: string[] = [];
    for (const [name, chunks, status] of cases) {
      const a = parse((await raw(chunks)).text);
      expect(a.status, name).toBe(status);
      expectJsonError(a, status);
      tracids.push(a.headers.tracid!);
    }
    const audited = new Map(auditLines().map((l) => [l.tracid, l]));
    for (const [i, t] of tracids.entries()) expect(audited.get(t)?.status, cases[i]![0]).toBe(cases[i]![2]);
    expect(await metrics()).toMatch(/edgecv_http_requests_total\{[^}]*route="unrouted"[^}]*status="431"[^}]*\} 1/);
    await detectStillWorks();
  });

  it('bad chunking after the headers: a JSON 400 with the trace id the app records, then the connection is cut', async () => {
    const before = auditLines().length;
    const a = await raw([...post('/detector/detect/', ['Content-Type: image/png', 'Transfer-Encoding: chunked']), 'zz\r\nxx\r\n'], { waitMs: 5000 });
    expect(a.closed).toBe(true);
    const answer = parse(a.text);
    expectJsonError(answer, 400, /chunked/);
    await new Promise((r) => setTimeout(r, 300));
    const lines = auditLines().slice(before);
    expect(lines.map((l) => [l.route, l.status, l.tracid])).toEqual([['/detector/detect', 400, answer.headers.tracid]]);
    await detectStillWorks();
  });
});

describe('the plain-HTTP DeepStack listener (--http-port)', () => {
  it('has the same guards: parser rejects and compressed bodies answer JSON', async () => {
    const ask = (wire: string) =>
      new Promise<string>((resolve) => {
        let text = '';
        const s = net.connect(httpPort, '127.0.0.1', () => s.write(wire));
        s.on('data', (d: Buffer) => (text += d.toString('latin1')));
        s.on('error', () => {});
        s.on('close', () => resolve(text));
        setTimeout(() => s.destroy(), 5000).unref();
      });
    expectJsonError(parse(await ask('POST /v1/vision/detection HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: abc\r\n\r\n')), 400);
    const gz = zlib.gzipSync(PNG);
    const a = parse(
      await ask(
        `POST /v1/vision/detection HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\nContent-Type: image/png\r\nContent-Encoding: gzip\r\nContent-Length: ${gz.length}\r\n\r\n${gz.toString('latin1')}`,
      ),
    );
    expectJsonError(a, 415, /Content-Encoding/);
  });
});

describe('bodies over the limit', () => {
  it('are refused before "100 Continue" when the client asks first', async () => {
    const a = await raw(post('/detector/detect/', ['Content-Type: image/png', `Content-Length: ${LIMIT + 1}`, 'Expect: 100-continue']), {
      waitMs: 3000,
    });
    expect(a.text.startsWith('HTTP/1.1 413')).toBe(true);
    expect(a.text).not.toMatch(/100 Continue/);
    expectJsonError(parse(a.text), 413, /larger than the limit/);
  });

  it('reach clients that keep uploading, even many at once', async () => {
    const body = Buffer.alloc(3 * LIMIT, 7);
    const pieces = Array.from({ length: 48 }, (_, i) => body.subarray(i * (body.length / 48), (i + 1) * (body.length / 48)));
    const answers = await Promise.all(
      Array.from({ length: 12 }, () =>
        raw([...post('/detector/detect/', ['Content-Type: image/png', `Content-Length: ${body.length}`]), ...pieces], { gapMs: 5, waitMs: 15_000 }),
      ),
    );
    for (const a of answers) {
      expect(a.error).toBeUndefined();
      expectJsonError(parse(a.text), 413);
    }
    await detectStillWorks();
  });
});

describe('aborted uploads', () => {
  it('count as 400, not 500, chunked or not', async () => {
    const before = auditLines().length;
    await raw([...post('/detector/detect/', ['Content-Type: image/png', 'Transfer-Encoding: chunked']), `1000\r\n${'a'.repeat(4096)}\r\n`], {
      destroyAfterWrite: true,
      waitMs: 2000,
    });
    await raw([...post('/detector/detect/', ['Content-Type: image/png', 'Content-Length: 50000']), 'a'.repeat(4096)], {
      destroyAfterWrite: true,
      waitMs: 2000,
    });
    await new Promise((r) => setTimeout(r, 500));
    const lines = auditLines()
      .slice(before)
      .filter((l) => l.route === '/detector/detect');
    expect(lines.map((l) => l.status)).toEqual([400, 400]);
    expect(await metrics()).not.toMatch(/edgecv_http_requests_total\{[^}]*status="500"[^}]*\}/);
    expect(server.output()).not.toMatch(/aborted/);
  });
});

describe('Content-Encoding', () => {
  it('gzip, deflate and br bodies get 415, and so does a plain body labelled gzip', async () => {
    const bodies: Array<[string, Buffer]> = [
      ['gzip', zlib.gzipSync(PNG)],
      ['deflate', zlib.deflateSync(PNG)],
      ['br', zlib.brotliCompressSync(PNG)],
      ['gzip', PNG],
    ];
    for (const [encoding, body] of bodies) {
      const res = await httpsRequest(`${server.url}detector/detect/`, {
        method: 'POST',
        body,
        headers: { 'content-type': 'image/png', 'content-encoding': encoding },
        ...trusted(),
      });
      expect(res.status).toBe(415);
      expect(JSON.parse(res.text)).toMatchObject({ success: 'false', error: expect.stringMatching(/Content-Encoding/) });
      expect(res.headers['accept-encoding']).toBe('identity');
    }
    await detectStillWorks();
  });
});

describe('slow clients', () => {
  it('headers trickling in are cut with a JSON 408 after --headers-timeout', async () => {
    const trickle = 'GET /detector/detect/ HTTP/1.1\r\nHost: a\r\nX-Slow: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa'.split('');
    const a = await raw(trickle, { gapMs: 300, waitMs: 12_000 });
    expect(a.closed).toBe(true);
    expectJsonError(parse(a.text), 408);
  });

  it('a TCP connection that never starts TLS is closed after --handshake-timeout', async () => {
    const closed = await new Promise<boolean>((resolve) => {
      const s = net.connect(port, '127.0.0.1');
      const timer = setTimeout(() => {
        s.destroy();
        resolve(false);
      }, 12_000);
      s.on('error', () => {});
      s.on('close', () => {
        clearTimeout(timer);
        resolve(true);
      });
    });
    expect(closed).toBe(true);
  });

  it('a body slower than --min-body-rate is answered with a JSON 408, cut, and recorded as 408', async () => {
    const before = auditLines().length;
    const bytes = Array.from({ length: 40 }, () => 'a');
    const a = await raw([...post('/detector/detect/', ['Content-Type: image/png', 'Content-Length: 100000']), ...bytes], {
      gapMs: 500,
      waitMs: 15_000,
    });
    expect(a.closed).toBe(true);
    const answer = parse(a.text);
    expectJsonError(answer, 408, /slower than/);
    await new Promise((r) => setTimeout(r, 300));
    expect(
      auditLines()
        .slice(before)
        .map((l) => [l.status, l.tracid]),
    ).toContainEqual([408, answer.headers.tracid]);
    await detectStillWorks();
  });
});

describe('hardening', () => {
  it('every answer has HSTS, nosniff and Cache-Control: no-store', async () => {
    const ok = await detectStillWorks();
    const missing = await httpsRequest(`${server.url}no/such/path`, trusted());
    for (const res of [ok, missing]) {
      expect(res.headers['strict-transport-security']).toMatch(/max-age=\d+/);
      expect(res.headers['x-content-type-options']).toBe('nosniff');
      expect(res.headers['cache-control']).toBe('no-store');
    }
    const exported = await httpsRequest(`${server.url}trainer/export/`, { headers: { authorization: `Bearer ${KEY}` }, ...trusted() });
    expect(exported.headers['cache-control']).toBe('no-store');
  });

  it('TLS 1.2 without forward secrecy and TLS 1.1 are refused; ECDHE is accepted', async () => {
    const handshake = (o: tls.ConnectionOptions) =>
      new Promise<string>((resolve) => {
        const s = tls.connect({ host: '127.0.0.1', port, rejectUnauthorized: false, ...o });
        s.once('secureConnect', () => {
          const cipher = s.getCipher().name;
          s.destroy();
          resolve(cipher);
        });
        s.once('error', () => resolve('refused'));
      });
    expect(await handshake({ maxVersion: 'TLSv1.2', ciphers: 'AES128-GCM-SHA256:AES256-GCM-SHA384' })).toBe('refused');
    expect(await handshake({ maxVersion: 'TLSv1.1', minVersion: 'TLSv1', ciphers: 'DEFAULT@SECLEVEL=0' })).toBe('refused');
    expect(await handshake({ maxVersion: 'TLSv1.2', ciphers: 'ECDHE-RSA-AES128-GCM-SHA256' })).toBe('ECDHE-RSA-AES128-GCM-SHA256');
  });

  it('--metrics-access admin keeps /metrics to the admin key', async () => {
    const engine = await openEngine({ workers: 1, poseModel: null, objectDetector: null, faceEmbedder: null });
    try {
      const app = createApp({ engine, config: { bodyLimit: DEFAULT_BODY_LIMIT, adminKey: KEY, metricsAccess: 'admin' } });
      expect((await app.request('/metrics')).status).toBe(401);
      const ok = await app.request('/metrics', { headers: { authorization: `Bearer ${KEY}` } });
      expect(ok.status).toBe(200);
      expect(await ok.text()).toMatch(/edgecv_http_requests_total/);
    } finally {
      await engine.close();
    }
  });
});
