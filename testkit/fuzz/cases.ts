// The seeded generator of hostile requests for `npm run fuzz` (and its short run in `npm test`). Each case is
// the exact bytes written on a fresh TLS connection, so malformed HTTP is as easy to send as a good request.
// Same seed, same photos: same cases.

import zlib from 'node:zlib';
import { flatJpeg, flatPng, iccpChunk, jpegLengthBomb, pngLengthBomb, pngChunk, PNG_SIGNATURE, rgbIhdr } from './hostile-images.js';
import { FORM_LIMITS } from '../../src/server/form-body.js';
import { importBody } from './import-cases.js';
import type { ChannelEmbedder } from './redis-channel.js';

/** mulberry32: small, fast, good enough to pick cases. */
export class Rng {
  #s: number;
  constructor(seed: number) {
    this.#s = seed >>> 0;
  }
  next(): number {
    let t = (this.#s = (this.#s + 0x6d2b79f5) >>> 0);
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }
  int(n: number): number {
    return Math.floor(this.next() * n);
  }
  pick<T>(items: readonly T[]): T {
    return items[this.int(items.length)]!;
  }
  bytes(n: number): Buffer {
    const b = Buffer.alloc(n);
    for (let i = 0; i < n; i++) b[i] = this.int(256);
    return b;
  }
}

export interface FuzzCase {
  /** The class it belongs to (the report groups by it). */
  kind: string;
  /** What exactly, for the log of a failing case. */
  label: string;
  /** The request bytes, written as they are. */
  wire: Buffer;
  /** HEAD and OPTIONS answers carry no JSON body. */
  expectsBody: boolean;
  /** A 2xx answer is not JSON by design (the demo page's HTML, Prometheus text); errors still are. */
  plainWhenOk?: boolean;
  /** The only statuses this case may get (a refusal the server owes it); any other is reported. */
  expectStatus?: readonly number[];
}

export interface FuzzContext {
  /** Real photos (PNG and JPEG) to mutate. */
  photos: Buffer[];
  /** Admin key for /trainer/add/. */
  adminKey: string;
  /** The server's --api-key: the DeepStack routes need it (sent as a header or a form field, at random). */
  apiKey?: string;
  /** The server's embedding model (capabilities' gallery.embedder), so that import lines reach the vector checks. */
  embedder?: ChannelEmbedder;
}

const IMAGE_ROUTES = [
  '/detector/detect/',
  '/recognizer/predict/',
  '/pose/detect/',
  '/object/detect/',
  '/trainer/add/?subject=fuzz',
  // the DeepStack-compatible API
  '/v1/vision/detection',
  '/v1/vision/face/',
  '/v1/vision/face/recognize',
  '/v1/vision/custom/openlogo',
] as const;

type Form = 'raw' | 'multipart' | 'multipart-base64' | 'urlencoded';
const FORMS: readonly Form[] = ['raw', 'multipart', 'multipart-base64', 'urlencoded'];

function request(
  method: string,
  path: string,
  headers: Record<string, string>,
  body: Buffer = Buffer.alloc(0),
  opts: { noLength?: boolean } = {},
): Buffer {
  const all: Record<string, string> = { Host: '127.0.0.1', Connection: 'close', ...headers };
  if (!opts.noLength && (body.length > 0 || method === 'POST') && all['Transfer-Encoding'] === undefined)
    all['Content-Length'] ??= String(body.length);
  const head = `${method} ${path} HTTP/1.1\r\n${Object.entries(all)
    .map(([k, v]) => `${k}: ${v}\r\n`)
    .join('')}\r\n`;
  return Buffer.concat([Buffer.from(head, 'latin1'), body]);
}

/** The image in one of the four input forms: [extra headers, body]. */
function wrap(form: Form, image: Buffer, rng: Rng): [Record<string, string>, Buffer] {
  switch (form) {
    case 'raw':
      return [{ 'Content-Type': rng.pick(['image/png', 'image/jpeg', 'application/octet-stream']) }, image];
    case 'multipart':
    case 'multipart-base64': {
      const boundary = `fuzz${rng.int(1e9)}`;
      const part =
        form === 'multipart'
          ? Buffer.concat([
              Buffer.from(
                `--${boundary}\r\nContent-Disposition: form-data; name="image"; filename="x"\r\nContent-Type: application/octet-stream\r\n\r\n`,
              ),
              image,
            ])
          : Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="image"\r\n\r\n${image.toString('base64')}`);
      return [{ 'Content-Type': `multipart/form-data; boundary=${boundary}` }, Buffer.concat([part, Buffer.from(`\r\n--${boundary}--\r\n`)])];
    }
    case 'urlencoded':
      return [{ 'Content-Type': 'application/x-www-form-urlencoded' }, Buffer.from(`image=${encodeURIComponent(image.toString('base64'))}`)];
  }
}

const auth = (path: string, key: string, apiKey?: string): Record<string, string> =>
  path.startsWith('/trainer') ? { Authorization: `Bearer ${key}` } : apiKey && path.startsWith('/v1/') ? { 'X-API-Key': apiKey } : {};

/** A form's fields before and after its image (`form` from wrap()), as multipart parts or urlencoded pairs. */
function withFields(
  form: Form,
  headers: Record<string, string>,
  body: Buffer,
  before: Record<string, string>,
  after: Record<string, string>,
): Buffer {
  if (form === 'raw') return body;
  if (form === 'urlencoded') {
    const pairs = (f: Record<string, string>) =>
      Object.entries(f)
        .map(([k, v]) => `${encodeURIComponent(k)}=${encodeURIComponent(v)}&`)
        .join('');
    return Buffer.concat([Buffer.from(pairs(before)), body, Buffer.from(`&${pairs(after)}`)]);
  }
  const boundary = /boundary=(\S+)/.exec(headers['Content-Type'] ?? '')![1]!;
  const parts = (f: Record<string, string>) =>
    Object.entries(f)
      .map(([k, v]) => `--${boundary}\r\nContent-Disposition: form-data; name="${k}"\r\n\r\n${v}\r\n`)
      .join('');
  const end = Buffer.from(`--${boundary}--\r\n`);
  const image = body.subarray(0, body.length - end.length); // ends with the image part's \r\n
  return Buffer.concat([Buffer.from(parts(before)), image, Buffer.from(parts(after)), end]);
}

function imageCase(kind: string, label: string, image: Buffer, rng: Rng, ctx: FuzzContext): FuzzCase {
  const path = rng.pick(IMAGE_ROUTES);
  const form = rng.pick(FORMS);
  const [headers, body] = wrap(form, image, rng);
  // a keyed server's DeepStack route gets its key as DeepStack clients send it: a form field (before or after the
  // image: both orders are real), or a header
  if (ctx.apiKey !== undefined && path.startsWith('/v1/') && form !== 'raw' && rng.next() < 0.5) {
    const first = rng.next() < 0.5;
    const key = { api_key: ctx.apiKey };
    const keyed = withFields(form, headers, body, first ? key : {}, first ? {} : key);
    return {
      kind,
      label: `${label} via ${form} to ${path}, api_key ${first ? 'before' : 'after'} the image`,
      wire: request('POST', path, headers, keyed),
      expectsBody: true,
    };
  }
  return {
    kind,
    label: `${label} via ${form} to ${path}`,
    wire: request('POST', path, { ...headers, ...auth(path, ctx.adminKey, ctx.apiKey) }, body),
    expectsBody: true,
  };
}

function bitFlips(image: Buffer, rng: Rng): Buffer {
  const out = Buffer.from(image);
  const flips = 1 + rng.int(32);
  for (let i = 0; i < flips; i++) {
    const at = 16 + rng.int(Math.max(1, out.length - 16)); // keep the magic so the decoder gets its chance
    out[at] = out[at]! ^ (1 << rng.int(8));
  }
  return out;
}

/** A PNG whose IDAT inflates to the full claimed size: legal, big when decoded, within the pixel limit. */
function zeroPng(side: number): Buffer {
  const raw = Buffer.alloc((1 + side * 3) * side);
  return Buffer.concat([
    PNG_SIGNATURE,
    pngChunk('IHDR', rgbIhdr(side, side)),
    pngChunk('IDAT', zlib.deflateSync(raw, { level: 9 })),
    pngChunk('IEND', Buffer.alloc(0)),
  ]);
}

type CaseMaker = (rng: Rng, ctx: FuzzContext) => FuzzCase;

/** Every class of hostile request, by name. */
export const GENERATORS: Record<string, CaseMaker> = {
  valid: (rng, ctx) => imageCase('valid', 'a real photo', rng.pick(ctx.photos), rng, ctx),
  truncated: (rng, ctx) => {
    const p = rng.pick(ctx.photos);
    const cut = rng.int(p.length);
    return imageCase('truncated', `photo cut at ${cut}/${p.length}`, p.subarray(0, cut), rng, ctx);
  },
  bitflip: (rng, ctx) => imageCase('bitflip', 'photo with flipped bits', bitFlips(rng.pick(ctx.photos), rng), rng, ctx),
  'random-bytes': (rng, ctx) => {
    const magic = rng.pick([Buffer.alloc(0), PNG_SIGNATURE, Buffer.from([0xff, 0xd8, 0xff])]);
    return imageCase(
      'random-bytes',
      `random bytes after ${magic.length} magic bytes`,
      Buffer.concat([magic, rng.bytes(1 + rng.int(20_000))]),
      rng,
      ctx,
    );
  },
  shapes: (rng, ctx) => {
    const [label, make] = rng.pick<[string, () => Buffer]>([
      ['65500x1 JPEG', () => flatJpeg(65500, 1)],
      ['8x60000 JPEG', () => flatJpeg(8, 60000)],
      ['1x1000000 PNG', () => flatPng(1, 1_000_000)],
      ['4000x64 JPEG (allowed)', () => flatJpeg(4000, 64)],
      ['9x9 PNG', () => flatPng(9, 9)],
      ['60000x60000 PNG header', () => Buffer.concat([PNG_SIGNATURE, pngChunk('IHDR', rgbIhdr(60000, 60000)), pngChunk('IEND', Buffer.alloc(0))])],
    ]);
    return imageCase('shapes', label, make(), rng, ctx);
  },
  'chunk-bombs': (rng, ctx) => {
    const [label, make] = rng.pick<[string, () => Buffer]>([
      ['PNG zTXt claiming 2 GB', () => pngLengthBomb('zTXt')],
      ['PNG IDAT claiming 2 GB', () => pngLengthBomb('IDAT')],
      ['PNG chunk claiming random length', () => pngLengthBomb(rng.pick(['tEXt', 'iCCP', 'eXIf', 'abCD']), rng.int(0x80000000))],
      ['JPEG APP1 past the end', () => jpegLengthBomb()],
      ['JPEG with 500 scans', () => flatJpeg(64, 64, { scans: 500 })],
      ['PNG with iCCP', () => flatPng(64, 48, [iccpChunk()])],
      ['PNG 3000x3000 of zeros (inflates to 27 MB)', () => zeroPng(3000)],
    ]);
    return imageCase('chunk-bombs', label, make(), rng, ctx);
  },
  'bad-forms': (rng, ctx) => {
    const path = rng.pick(IMAGE_ROUTES);
    const photo = rng.pick(ctx.photos);
    const [label, headers, body] = rng.pick<[string, Record<string, string>, Buffer]>([
      ['multipart without boundary', { 'Content-Type': 'multipart/form-data' }, photo.subarray(0, 2000)],
      [
        'multipart cut before its end',
        { 'Content-Type': 'multipart/form-data; boundary=b' },
        Buffer.concat([Buffer.from('--b\r\nContent-Disposition: form-data; name="image"\r\n\r\n'), photo.subarray(0, 5000)]),
      ],
      [
        'multipart with a header bomb',
        { 'Content-Type': 'multipart/form-data; boundary=b' },
        Buffer.from(`--b\r\n${'X: y\r\n'.repeat(5000)}\r\n\r\n--b--\r\n`),
      ],
      ['base64 with bad letters', { 'Content-Type': 'application/x-www-form-urlencoded' }, Buffer.from(`image=${'*!'.repeat(500)}`)],
      ['base64 with a bad %-escape', { 'Content-Type': 'application/x-www-form-urlencoded' }, Buffer.from('image=%zz%')],
      ['data: URL not base64', { 'Content-Type': 'application/x-www-form-urlencoded' }, Buffer.from('image=data:image/png,abc')],
      [
        'base64 of random bytes',
        { 'Content-Type': 'application/x-www-form-urlencoded' },
        Buffer.from(`image=${rng.bytes(3000).toString('base64url')}`),
      ],
      ['JSON body', { 'Content-Type': 'application/json' }, Buffer.from('{"image": 1}')],
      ['no Content-Type', {}, photo],
    ]);
    return {
      kind: 'bad-forms',
      label: `${label} to ${path}`,
      wire: request('POST', path, { ...headers, ...auth(path, ctx.adminKey) }, body),
      expectsBody: true,
    };
  },
  encodings: (rng, ctx) => {
    const photo = rng.pick(ctx.photos);
    const [encoding, body] = rng.pick<[string, Buffer]>([
      ['gzip', zlib.gzipSync(photo)],
      ['deflate', zlib.deflateSync(photo)],
      ['br', zlib.brotliCompressSync(photo.subarray(0, 50_000))],
      ['gzip', photo],
      ['x-unknown', photo],
      ['gzip, gzip', photo],
    ]);
    const path = rng.pick(IMAGE_ROUTES);
    return {
      kind: 'encodings',
      label: `Content-Encoding ${encoding} to ${path}`,
      wire: request('POST', path, { 'Content-Type': 'image/jpeg', 'Content-Encoding': encoding, ...auth(path, ctx.adminKey) }, body),
      expectsBody: true,
    };
  },
  methods: (rng) => {
    const method = rng.pick(['GET', 'PUT', 'DELETE', 'PATCH', 'OPTIONS', 'HEAD', 'TRACE', 'CONNECT', 'PROPFIND']);
    const path = rng.pick([...IMAGE_ROUTES, '/metrics', '/', '/no/such', '/trainer/export/', '/api/v1/login']);
    const target = method === 'CONNECT' ? '127.0.0.1:443' : path;
    return {
      kind: 'methods',
      label: `${method} ${target}`,
      wire: request(method, target, {}),
      expectsBody: method !== 'HEAD' && method !== 'OPTIONS',
      plainWhenOk: path === '/' || path === '/metrics',
    };
  },
  'http-garbage': (rng) => {
    const [label, wire] = rng.pick<[string, Buffer]>([
      ['bad Content-Length', request('POST', '/detector/detect/', { 'Content-Length': 'abc' }, Buffer.alloc(0), { noLength: true })],
      ['two Content-Lengths', Buffer.from('POST /detector/detect/ HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nabcdef')],
      [
        'bad chunk size',
        request('POST', '/detector/detect/', { 'Transfer-Encoding': 'chunked', 'Content-Type': 'image/png' }, Buffer.from('zz\r\nabc\r\n0\r\n\r\n')),
      ],
      [
        'chunked and Content-Length',
        Buffer.from('POST /detector/detect/ HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n'),
      ],
      ['unknown method', Buffer.from('FROB / HTTP/1.1\r\nHost: a\r\n\r\n')],
      ['missing Host', Buffer.from('GET /metrics HTTP/1.1\r\nConnection: close\r\n\r\n')],
      ['HTTP/2 preface over HTTP/1.1', Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n')],
      ['random bytes', rng.bytes(1 + rng.int(4000))],
      ['request line only', Buffer.from('GET / HTTP/1.1\r\n\r\n')],
      ['bare LF', Buffer.from('GET /metrics HTTP/1.1\nHost: a\n\n')],
    ]);
    return { kind: 'http-garbage', label, wire, expectsBody: true };
  },
  'long-headers': (rng) => {
    const [label, headers] = rng.pick<[string, Record<string, string>]>([
      ['one 100 KB header', { 'X-Long': 'a'.repeat(100_000) }],
      ['one 15 KB header', { 'X-Long': 'a'.repeat(15_000) }],
      ['2000 headers', Object.fromEntries(Array.from({ length: 2000 }, (_, i) => [`X-H${i}`, 'v']))],
      ['long URL', {}],
    ]);
    const path = label === 'long URL' ? `/detector/detect/?${'q'.repeat(70_000)}` : '/detector/detect/';
    return { kind: 'long-headers', label, wire: request('GET', path, headers), expectsBody: true };
  },
  import: (rng, ctx) => {
    const [label, body, mode] = importBody(rng, ctx.embedder ?? { model: 'unknown', version: 'unknown', dim: 128 });
    const headers = { 'Content-Type': rng.pick(['application/x-ndjson', 'text/plain']), ...auth('/trainer', ctx.adminKey) };
    return {
      kind: 'import',
      label: `${mode}: ${label}`.slice(0, 200),
      wire: request('POST', `/trainer/import/?mode=${mode}`, headers, Buffer.from(body)),
      expectsBody: true,
    };
  },
  // the DeepStack routes with no key, an empty, a wrong or the right one, as a header or a form field
  'deepstack-keys': (rng, ctx) => {
    const path = rng.pick([
      '/v1/vision/detection',
      '/v1/vision/face/',
      '/v1/vision/face/recognize',
      '/v1/vision/face/register',
      '/v1/vision/face/list',
      '/v1/vision/face/delete',
      '/v1/vision/custom/list',
    ]);
    const key = rng.pick(['none', 'empty', 'wrong', 'header', 'form', 'wrong header, right form'] as const);
    const form = rng.pick(FORMS);
    const [headers, body] = wrap(form, rng.pick(ctx.photos), rng);
    const right = ctx.apiKey ?? '';
    const fieldKey = key === 'empty' ? '' : key === 'wrong' ? `${right}x` : key === 'form' || key === 'wrong header, right form' ? right : undefined;
    const fields: Record<string, string> = { userid: `fuzz-ds-${rng.int(5)}`, ...(fieldKey !== undefined ? { api_key: fieldKey } : {}) };
    const keyHeaders: Record<string, string> =
      key === 'header' ? { 'X-API-Key': right } : key === 'wrong header, right form' ? { Authorization: `Bearer ${right}x` } : {};
    const first = rng.next() < 0.5;
    const wire = request('POST', path, { ...headers, ...keyHeaders }, withFields(form, headers, body, first ? fields : {}, first ? {} : fields));
    // a raw body carries no form field: only the header key can open it
    const opens = key === 'header' || (key === 'form' && form !== 'raw');
    return {
      kind: 'deepstack-keys',
      label: `${key} key, ${form}${form === 'raw' ? '' : `, fields ${first ? 'first' : 'last'}`}, to ${path}`,
      wire,
      expectsBody: true,
      ...(ctx.apiKey !== undefined && !opens ? { expectStatus: [401] } : {}),
    };
  },
  // forms of many parts, pairs or files are refused (413; 401 on a keyed DeepStack route without a key)
  'many-parts': (rng, ctx) => {
    const path = rng.pick([
      '/detector/detect/',
      '/object/detect/',
      '/trainer/add/?subject=fuzz',
      '/trainer/remove/',
      '/v1/vision/detection',
      '/v1/vision/face/register',
    ]);
    const shape = rng.pick(['parts', 'pairs', 'files'] as const);
    const count = rng.pick([FORM_LIMITS.parts - 1, FORM_LIMITS.parts + 1, 1000 + rng.int(30_000)]);
    const withImage = rng.next() < 0.5;
    const photo = rng.pick(ctx.photos);
    const boundary = `fuzz${rng.int(1e9)}`;
    let body: Buffer;
    let type: string;
    let total: number;
    if (shape === 'pairs') {
      type = 'application/x-www-form-urlencoded';
      body = Buffer.from(`${withImage ? `image=${encodeURIComponent(photo.toString('base64'))}&` : ''}${'a=&'.repeat(count)}`);
      total = count + (withImage ? 1 : 0);
    } else {
      type = `multipart/form-data; boundary=${boundary}`;
      const one =
        shape === 'files'
          ? `--${boundary}\r\nContent-Disposition: form-data; name="f"; filename="f"\r\n\r\nx\r\n`
          : `--${boundary}\r\nContent-Disposition: form-data; name="a"\r\n\r\nx\r\n`;
      const image = withImage
        ? Buffer.concat([
            Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="image"; filename="x.jpg"\r\n\r\n`),
            photo,
            Buffer.from('\r\n'),
          ])
        : Buffer.alloc(0);
      body = Buffer.concat([
        image,
        Buffer.from(one.repeat(shape === 'files' ? Math.min(count, 4 * FORM_LIMITS.files) : count)),
        Buffer.from(`--${boundary}--\r\n`),
      ]);
      total = (shape === 'files' ? Math.min(count, 4 * FORM_LIMITS.files) : count) + (withImage ? 1 : 0);
    }
    const over = total > FORM_LIMITS.parts || (shape === 'files' && total > FORM_LIMITS.files);
    return {
      kind: 'many-parts',
      label: `${total} ${shape}${withImage ? ' with an image' : ''} to ${path}`,
      wire: request('POST', path, { 'Content-Type': type, ...auth(path, ctx.adminKey, ctx.apiKey) }, body),
      expectsBody: true,
      ...(over ? { expectStatus: [413] } : {}),
    };
  },
  oversize: (rng) => {
    const claimed = rng.pick([30 * 1024 * 1024, 2 ** 40, 2 ** 53 + 1]);
    const headers: Record<string, string> = { 'Content-Type': 'image/jpeg', 'Content-Length': String(claimed) };
    if (rng.next() < 0.5) headers.Expect = '100-continue';
    return {
      kind: 'oversize',
      label: `Content-Length ${claimed}${headers.Expect ? ' + 100-continue' : ''}`,
      wire: request('POST', '/detector/detect/', headers, rng.bytes(1000), { noLength: true }),
      expectsBody: true,
    };
  },
};

export const KINDS = Object.keys(GENERATORS);

/** `count` cases from `seed`, the classes in turn so that every one is covered even in a short run. */
export function* generateCases(seed: number, count: number, ctx: FuzzContext): Generator<FuzzCase> {
  const rng = new Rng(seed);
  for (let i = 0; i < count; i++) yield GENERATORS[KINDS[i % KINDS.length]!]!(rng, ctx);
}
