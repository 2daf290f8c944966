// Forms, keys, foreign origins, the early 413 and stray bytes after a request, against a real `edgecv serve` process over real TLS and TCP
// sockets: forms of many parts or pairs are refused as they arrive (the answer comes while the client is still
// sending), a keyed DeepStack route refuses a request without a key before reading its body, a foreign page's
// POST is refused, an early 413 reaches `Connection: close` uploaders, and stray bytes after a complete request
// do not lose its answer.

import net from 'node:net';
import tls from 'node:tls';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FORM_LIMITS } from '../src/server/form-body.js';
import { isAllowedOrigin, parseAllowedOrigins } from '../src/server/origin-check.js';
import https from 'node:https';
import { httpsRequest, photo, useTempDirs } from './helpers.js';
import { freePort, startServerProcess, type ServerProcess } from '../testkit/server-process.js';

const API = 'http-forms-api-key-0123456789';
const LIMIT = 20 * 1024 * 1024;
const JPEG = photo('darknet/dog.jpg');

const newTmpDir = useTempDirs();
// the server's self-signed certificate
const agent = new https.Agent({ rejectUnauthorized: false });
const call = (url: string, opts: Parameters<typeof httpsRequest>[1] = {}) => httpsRequest(url, { ...opts, agent });
let server: ServerProcess;
let port: number;
let httpPort: number;

beforeAll(async () => {
  httpPort = await freePort();
  // no --admin-key: loopback clients are the admin, as on an edge machine whose browser uses it
  server = await startServerProcess([
    '--data-dir',
    newTmpDir('edgecv-http-forms-'),
    '--workers',
    '1',
    '--body-limit',
    String(LIMIT),
    '--api-key',
    API,
    '--http-port',
    String(httpPort),
    '--allowed-origins',
    'https://nvr.example:8443',
    '--no-warm-up', // nothing here times a first request
  ]);
  port = Number(new URL(server.url).port);
});
afterAll(async () => {
  await server?.stop();
});

interface RawAnswer {
  text: string;
  error?: string;
  /** Bytes of the request written before the answer came (or everything, when it never did). */
  written: number;
}

type Chunk = string | Buffer;

/**
 * Writes `head` and then the chunks of `body` on a fresh connection (TLS, or plain TCP to the --http-port), each
 * after the previous one was taken by the socket; stops writing once an answer starts arriving (`stopOnAnswer`),
 * and reads until the server closes, `answers` answers came, or waitMs passes.
 */
function send(
  head: Chunk,
  body: Chunk[],
  opts: { plain?: boolean; waitMs?: number; stopOnAnswer?: boolean; endAfterWrite?: boolean; answers?: number } = {},
): Promise<RawAnswer> {
  return new Promise((resolve) => {
    const socket = opts.plain
      ? net.connect({ host: '127.0.0.1', port: httpPort })
      : tls.connect({ host: '127.0.0.1', port, rejectUnauthorized: false });
    let text = '';
    let error: string | undefined;
    let written = 0;
    let done = false;
    const finish = () => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      socket.destroy();
      resolve({ text, error, written });
    };
    const timer = setTimeout(finish, opts.waitMs ?? 15_000);
    socket.on('data', (d: Buffer) => {
      text += d.toString('latin1');
      if (opts.answers !== undefined && answers(text).length >= opts.answers) finish();
    });
    socket.on('error', (e: NodeJS.ErrnoException) => (error ??= e.code ?? e.message));
    socket.on('close', finish);
    socket.once(opts.plain ? 'connect' : 'secureConnect', async () => {
      socket.write(head);
      for (const c of body) {
        if (socket.destroyed || (opts.stopOnAnswer && text !== '')) break;
        written += c.length;
        if (!socket.write(c)) await new Promise((r) => socket.once('drain', r));
      }
      if (opts.endAfterWrite) socket.end();
    });
  });
}

/** The answers on a connection, in order: status and JSON body of each. */
function answers(text: string): { status: number; body: Record<string, unknown> }[] {
  const out: { status: number; body: Record<string, unknown> }[] = [];
  let rest = text;
  while (rest.startsWith('HTTP/1.1 ')) {
    const end = rest.indexOf('\r\n\r\n');
    if (end < 0) break;
    const head = rest.slice(0, end);
    const length = Number(/\r\ncontent-length: (\d+)/i.exec(head)?.[1] ?? 0);
    if (rest.length < end + 4 + length) break;
    const body = rest.slice(end + 4, end + 4 + length);
    out.push({ status: Number(head.slice(9, 12)), body: JSON.parse(body) as Record<string, unknown> });
    rest = rest.slice(end + 4 + length);
  }
  return out;
}

/** A many-part form: `count` multipart parts of one byte each, cut into 64 KB chunks. */
function manyPartForm(count: number, extra: { before?: string; image?: boolean } = {}): { boundary: string; chunks: Buffer[]; length: number } {
  // as long as a boundary may be (RFC 2046: 70): 124 bytes a part (150,000 parts: 18.8 MB)
  const boundary = `edgecv-many-parts-${'0123456789'.repeat(5)}-x`;
  const part = `--${boundary}\r\nContent-Disposition: form-data; name="part"\r\n\r\nx\r\n`;
  let text = extra.before ?? '';
  text += part.repeat(count);
  const tail = `--${boundary}--\r\n`;
  const bytes = Buffer.concat([
    Buffer.from(text),
    extra.image
      ? Buffer.concat([
          Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="image"; filename="a.jpg"\r\nContent-Type: image/jpeg\r\n\r\n`),
          JPEG,
          Buffer.from('\r\n'),
        ])
      : Buffer.alloc(0),
    Buffer.from(tail),
  ]);
  const chunks: Buffer[] = [];
  for (let i = 0; i < bytes.length; i += 65536) chunks.push(bytes.subarray(i, i + 65536));
  return { boundary, chunks, length: bytes.length };
}

function postHead(route: string, type: string, length: number, headers: Record<string, string> = {}): string {
  const extra = Object.entries(headers)
    .map(([k, v]) => `${k}: ${v}\r\n`)
    .join('');
  return `POST ${route} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: ${type}\r\nContent-Length: ${length}\r\n${extra}\r\n`;
}

/** Sends the first `chunks` of a body and then nothing: the answer must come without the rest. */
async function answerToPartOfBody(
  route: string,
  type: string,
  form: { chunks: Buffer[]; length: number },
  chunks: number,
  headers: Record<string, string> = {},
  plain = false,
) {
  const r = await send(postHead(route, type, form.length, headers), form.chunks.slice(0, chunks), { plain, waitMs: 15_000, answers: 1 });
  const [first] = answers(r.text);
  expect(first, `no answer to ${route} while the body was incomplete (${r.error ?? 'no error'})`).toBeDefined();
  return first!;
}

describe('forms of many parts or pairs', () => {
  const form = manyPartForm(150_000);
  // 2.7 M pairs, `a=&`: 8.1 MB
  const pairs = Buffer.from('a=&'.repeat(2_700_000));
  const pairChunks: Buffer[] = [];
  for (let i = 0; i < pairs.length; i += 65536) pairChunks.push(pairs.subarray(i, i + 65536));
  const urlencoded = { chunks: pairChunks, length: pairs.length };

  it(`150,000 one-byte parts: 413 after the first ${FORM_LIMITS.parts}, before the body is sent, on every form-reading route`, async () => {
    expect(form.length).toBeGreaterThan(18_000_000);
    expect(form.length).toBeLessThan(LIMIT);
    const type = `multipart/form-data; boundary=${form.boundary}`;
    for (const [route, headers] of [
      ['/detector/detect/', {}],
      ['/trainer/remove/', {}],
      ['/trainer/add/', {}],
      ['/v1/vision/detection', { 'X-API-Key': API }],
      ['/v1/vision/face/register', { 'X-API-Key': API }],
    ] as const) {
      const a = await answerToPartOfBody(route, type, form, 2, headers);
      expect([route, a.status]).toEqual([route, 413]);
      expect(String(a.body.error)).toMatch(new RegExp(`more than ${FORM_LIMITS.parts} (parts|fields)`));
    }
  });

  it('2.7 M urlencoded pairs: 413 before the body is sent', async () => {
    for (const [route, headers] of [
      ['/detector/detect/', {}],
      ['/trainer/remove/', {}],
      ['/v1/vision/face/recognize', { 'X-API-Key': API }],
    ] as const) {
      const a = await answerToPartOfBody(route, 'application/x-www-form-urlencoded', urlencoded, 2, headers);
      expect([route, a.status]).toEqual([route, 413]);
      expect(String(a.body.error)).toMatch(/more than \d+ parameters/);
    }
  });

  it(`a form of ${FORM_LIMITS.parts} parts is read whole; one more is refused`, async () => {
    const ok = manyPartForm(FORM_LIMITS.parts - 1, { image: true });
    const type = `multipart/form-data; boundary=${ok.boundary}`;
    const r = await send(postHead('/detector/detect/', type, ok.length), ok.chunks, { answers: 1 });
    expect(answers(r.text)[0]?.status).toBe(200);
    const over = manyPartForm(FORM_LIMITS.parts, { image: true });
    expect(answers((await send(postHead('/detector/detect/', type, over.length), over.chunks, { answers: 1 })).text)[0]?.status).toBe(413);
  });

  it('a server that keeps answering other clients while four send the 150,000-part form', async () => {
    const type = `multipart/form-data; boundary=${form.boundary}`;
    const floods = Array.from({ length: 4 }, () =>
      send(postHead('/detector/detect/', type, form.length), form.chunks, { stopOnAnswer: true, answers: 1 }),
    );
    const t = await call(`${server.url}test/`, {});
    expect(t.status).toBe(200);
    for (const f of await Promise.all(floods)) expect(answers(f.text)[0]?.status).toBe(413);
  });
});

describe('malformed forms', () => {
  // every form reader answers a cut form the same way (form-body.ts keeps busboy's error listener for a second
  // report: npm run fuzz once took the server down with one)
  it('a multipart form cut inside a part, or without its closing boundary, is a JSON 400 and the server lives', async () => {
    for (const [label, body] of [
      [
        'cut inside the image',
        Buffer.concat([Buffer.from('--b\r\nContent-Disposition: form-data; name="image"; filename="a.jpg"\r\n\r\n'), JPEG.subarray(0, 5000)]),
      ],
      ['cut inside a field', Buffer.from('--b\r\nContent-Disposition: form-data; name="subject"\r\n\r\nalice')],
      ['no closing boundary', Buffer.from('--b\r\nContent-Disposition: form-data; name="subject"\r\n\r\nalice\r\n')],
    ] as const) {
      for (const route of ['/detector/detect/', '/trainer/remove/', '/v1/vision/face/register']) {
        const r = await send(postHead(route, 'multipart/form-data; boundary=b', body.length, { 'X-API-Key': API }), [body], { answers: 1 });
        const [a] = answers(r.text);
        expect([label, route, a?.status]).toEqual([label, route, 400]);
      }
    }
    expect((await call(`${server.url}test/`)).status).toBe(200);
    expect(server.child.exitCode).toBeNull();
  });
});

describe('keyed DeepStack routes without a key', () => {
  it('a raw image body without a key header is refused before it is read', async () => {
    const body = Buffer.alloc(LIMIT - 1024, 0x41);
    const chunks = [body.subarray(0, 65536), body.subarray(65536)];
    const a = await answerToPartOfBody('/v1/vision/detection', 'image/jpeg', { chunks, length: body.length }, 1);
    expect(a.status).toBe(401);
    expect(a.body.error).toBe('Incorrect api key');
  });

  it('a many-part form without api_key is refused at the form limit, a wrong api_key where it is read', async () => {
    const plain = manyPartForm(150_000);
    const type = `multipart/form-data; boundary=${plain.boundary}`;
    for (const route of ['/v1/vision/detection', '/v1/vision/face/recognize', '/v1/vision/face/register', '/v1/vision/face/delete']) {
      expect((await answerToPartOfBody(route, type, plain, 2)).status).toBe(401);
    }
    const wrong = manyPartForm(150_000, { before: `--${plain.boundary}\r\nContent-Disposition: form-data; name="api_key"\r\n\r\nnot-the-key\r\n` });
    const a = await answerToPartOfBody('/v1/vision/detection', type, wrong, 1, {}, true);
    expect(a.status).toBe(401);
    expect(a.body.error).toBe('Incorrect api key');
  });

  it('the key as a form field still opens the routes, wherever it is in the form', async () => {
    for (const order of ['key-first', 'image-first']) {
      const form = new FormData();
      if (order === 'key-first') form.append('api_key', API);
      form.append('image', new Blob([JPEG], { type: 'image/jpeg' }), 'dog.jpg');
      if (order === 'image-first') form.append('api_key', API);
      const res = await fetch(`http://127.0.0.1:${httpPort}/v1/vision/detection`, { method: 'POST', body: form });
      expect([order, res.status]).toEqual([order, 200]);
      expect(((await res.json()) as { predictions: { label: string }[] }).predictions.map((p) => p.label)).toContain('dog');
    }
    const urlencoded = await fetch(`http://127.0.0.1:${httpPort}/v1/vision/detection`, {
      method: 'POST',
      body: new URLSearchParams({ image: JPEG.toString('base64'), api_key: API }),
    });
    expect(urlencoded.status).toBe(200);
  });
});

describe('foreign origins', () => {
  const subject = 'origin-test-subject';

  const enrol = async () => {
    const r = await call(`${server.url}trainer/add/?subject=${subject}`, {
      method: 'POST',
      body: photo('dlib/johns/John_Savage/000296_01099007.jpg'),
      headers: { 'content-type': 'image/jpeg' },
    });
    expect(r.status).toBe(200);
  };
  const subjects = async () =>
    (JSON.parse((await call(`${server.url}trainer/subjects/`, {})).text) as { subjects: { subject: string }[] }).subjects.map((s) => s.subject);

  it("what a foreign page's form posts (no preflight) is refused with 403, and the gallery keeps its subject", async () => {
    await enrol();
    const evil = 'https://evil.example';
    const boundary = 'b0undary';
    const body = `--${boundary}\r\nContent-Disposition: form-data; name="subject"\r\n\r\n${subject}\r\n--${boundary}--\r\n`;
    const r1 = await call(`${server.url}trainer/remove/`, {
      method: 'POST',
      body,
      headers: { 'content-type': `multipart/form-data; boundary=${boundary}`, origin: evil },
    });
    expect(r1.status).toBe(403);
    expect(JSON.parse(r1.text)).toMatchObject({ success: 'false', error: expect.stringMatching(/evil\.example/) });
    const r2 = await call(`${server.url}trainer/import/?mode=replace`, {
      method: 'POST',
      body: '',
      headers: { 'content-type': 'text/plain', origin: evil },
    });
    expect(r2.status).toBe(403);
    const r3 = await fetch(`http://127.0.0.1:${httpPort}/v1/vision/face/delete`, {
      method: 'POST',
      body: new URLSearchParams({ userid: subject, api_key: API }),
      headers: { origin: `http://evil.example` },
    });
    expect(r3.status).toBe(403);
    const sandboxed = await call(`${server.url}trainer/remove/`, {
      method: 'POST',
      body,
      headers: { 'content-type': `multipart/form-data; boundary=${boundary}`, origin: 'null' },
    });
    expect(sandboxed.status).toBe(403);
    expect(await subjects()).toContain(subject);
  });

  it("the server's own pages, --allowed-origins and clients without Origin keep working", async () => {
    const own = await fetch(`http://127.0.0.1:${httpPort}/v1/vision/face/list`, {
      method: 'POST',
      body: new URLSearchParams({ api_key: API }),
      headers: { origin: `http://127.0.0.1:${httpPort}` },
    });
    expect(own.status).toBe(200);
    const allowed = await call(`${server.url}detector/detect/`, {
      method: 'POST',
      body: JPEG,
      headers: { 'content-type': 'image/jpeg', origin: 'https://NVR.example:8443' },
    });
    expect(allowed.status).toBe(200);
    const ownTls = await call(`${server.url}detector/detect/`, {
      method: 'POST',
      body: JPEG,
      headers: { 'content-type': 'image/jpeg', origin: `https://127.0.0.1:${port}` },
    });
    expect(ownTls.status).toBe(200);
    // a GET from anywhere is a read
    expect((await call(`${server.url}trainer/subjects/`, { headers: { origin: 'https://evil.example' } })).status).toBe(200);
    const removed = await fetch(`http://127.0.0.1:${httpPort}/v1/vision/face/delete`, {
      method: 'POST',
      body: new URLSearchParams({ userid: subject, api_key: API }),
    });
    expect(removed.status).toBe(200);
    expect(await subjects()).not.toContain(subject);
  });

  it('isAllowedOrigin: own host on either scheme, the allow-list, nothing else', () => {
    const list = parseAllowedOrigins('https://nvr.example:8443, http://10.0.0.5');
    expect(list).toEqual(['https://nvr.example:8443', 'http://10.0.0.5']);
    expect(isAllowedOrigin(undefined, 'edge:8008', [])).toBe(true);
    expect(isAllowedOrigin('https://edge:8008', 'edge:8008', [])).toBe(true);
    expect(isAllowedOrigin('https://EDGE:8008', 'edge:8008', [])).toBe(true);
    expect(isAllowedOrigin('https://edge', 'edge:443', [])).toBe(true);
    expect(isAllowedOrigin('https://edge:8009', 'edge:8008', [])).toBe(false);
    expect(isAllowedOrigin('https://edge.evil.example:8008', 'edge:8008', [])).toBe(false);
    expect(isAllowedOrigin('null', 'edge:8008', [])).toBe(false);
    expect(isAllowedOrigin('https://nvr.example:8443', 'edge:8008', list)).toBe(true);
    expect(isAllowedOrigin('http://10.0.0.5:80', 'edge:8008', list)).toBe(true);
    expect(isAllowedOrigin('https://10.0.0.5', 'edge:8008', list)).toBe(false);
    for (const bad of ['*', 'nvr.example', 'https://nvr.example/path', 'ftp://x']) expect(() => parseAllowedOrigins(bad)).toThrow(/allowed-origins/);
  });
});

describe('the early 413 and Connection: close', () => {
  it('every uploader that says Connection: close reads the 413, not a reset', async () => {
    const body = Buffer.alloc(LIMIT + 4 * 1024 * 1024, 0x41);
    const chunks: Buffer[] = [];
    for (let i = 0; i < body.length; i += 256 * 1024) chunks.push(body.subarray(i, i + 256 * 1024));
    const tries = 24;
    const results: RawAnswer[] = [];
    for (let round = 0; round < tries / 6; round++) {
      results.push(
        ...(await Promise.all(
          Array.from({ length: 6 }, () =>
            send(postHead('/detector/detect/', 'image/jpeg', body.length, { Connection: 'close' }), chunks, { waitMs: 20_000 }),
          ),
        )),
      );
    }
    const statuses = results.map((r) => answers(r.text)[0]?.status ?? r.error ?? 'nothing');
    expect(statuses).toEqual(Array(tries).fill(413));
  });
});

describe('bytes the parser refuses after a complete request', () => {
  // deepstack-sdk listFaces() with no api_key: requests sends data={"api_key": None} as a POST without a body or
  // Content-Length, and Debian's urllib3 then writes the chunked terminator on the same connection.
  const listFaces =
    'POST /v1/vision/face/list HTTP/1.1\r\nHost: 127.0.0.1\r\nUser-Agent: python-requests/2.28.1\r\nAccept-Encoding: gzip, deflate\r\nAccept: */*\r\nConnection: keep-alive\r\n' +
    `X-API-Key: ${API}\r\n\r\n`;

  for (const [name, stray] of [
    ['0\\r\\n\\r\\n', '0\r\n\r\n'],
    ['GARBAGE\\r\\n\\r\\n', 'GARBAGE\r\n\r\n'],
  ] as const) {
    it(`a complete request followed by ${name} gets its answer, then a 400 and a close (TLS and plain)`, async () => {
      for (const plain of [false, true]) {
        for (const split of [false, true]) {
          const r = await send(split ? listFaces : listFaces + stray, split ? [stray] : [], { plain, waitMs: 10_000 });
          const got = answers(r.text);
          expect([plain, split, got.map((a) => a.status)]).toEqual([plain, split, [200, 400]]);
          expect(got[0]!.body).toMatchObject({ success: true, faces: expect.any(Array) });
          expect(got[1]!.body).toMatchObject({ success: 'false' });
        }
      }
    });
  }

  it('two pipelined requests and then garbage: both answers, in order, then the 400', async () => {
    const test = 'GET /test/ HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n';
    const r = await send(listFaces + test + 'GARBAGE\r\n\r\n', [], { waitMs: 10_000 });
    expect(answers(r.text).map((a) => a.status)).toEqual([200, 200, 400]);
  });
});
