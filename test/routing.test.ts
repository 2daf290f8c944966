// The app's routing contracts on every route at once: each path answers with and without its trailing slash, a
// wrong method gets 405 with Allow and the plain JSON error (on the objects and DeepStack routes too, whose own
// errors have other shapes), OPTIONS gets 204 with Allow, and every gallery-changing route refuses a caller who is
// not the admin before it reads the body. Real engine, real SQLite gallery in a temporary folder.

import { beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_BODY_LIMIT } from '../src/config.js';
import { RecognitionService } from '../src/gallery/recognition-service.js';
import { SqliteGalleryStore } from '../src/gallery/sqlite-store.js';
import type { Engine } from '../src/index.js';
import { createApp } from '../src/server/app.js';
import { sharedEngine, photo, useTempDirs } from './helpers.js';

const KEY = 'routing-test-admin-key';
const FACE = 'skimage/astronaut.png'; // one face

const newTmpDir = useTempDirs();
let engine: Engine;
let service: RecognitionService;

beforeAll(async () => {
  engine = await sharedEngine({ workers: 1 });
  service = await RecognitionService.open(engine, SqliteGalleryStore.open(newTmpDir('edgecv-routing-')), { log: () => {} });
  await service.ready;
});

const appWith = (config: { adminKey?: string; metricsAccess?: 'open' | 'loopback' | 'admin' } = {}) =>
  createApp({ engine, config: { bodyLimit: DEFAULT_BODY_LIMIT, ...config }, recognition: service });

const GET_ROUTES = [
  '/test/',
  '/server/capabilities/',
  '/server/usage/',
  '/trainer/subjects/',
  '/trainer/samples/',
  '/trainer/export/',
  '/metrics',
  '/demo.js',
  '/library.js',
  '/body25.js',
];
/** GET routes that take a query parameter they cannot answer without. */
const NEEDS_QUERY = new Set(['/trainer/samples/']);
const POST_ROUTES = [
  '/detector/detect/',
  '/recognizer/predict/',
  '/trainer/add/',
  '/trainer/remove/',
  '/trainer/move/',
  '/trainer/import/',
  '/pose/detect/',
  '/openpose/detect/',
  '/object/detect/',
  '/v1/vision/detection',
  '/v1/vision/custom/list',
  '/v1/vision/custom/some-model',
  '/v1/vision/face/',
  '/v1/vision/face/recognize',
  '/v1/vision/face/register',
  '/v1/vision/face/list',
  '/v1/vision/face/delete',
  '/v1/vision/face/match',
];

/** '/a/b/' -> ['/a/b/', '/a/b'], '/a' -> ['/a', '/a/'] */
const bothSlashes = (p: string) => (p.endsWith('/') ? [p, p.slice(0, -1)] : [p, `${p}/`]);

describe('every route, with and without the trailing slash', () => {
  const table = [
    ...GET_ROUTES.map((p) => ({ path: p, wrong: ['POST', 'PUT', 'DELETE', 'PATCH'], allow: 'GET, HEAD, OPTIONS' })),
    ...POST_ROUTES.map((p) => ({ path: p, wrong: ['GET', 'PUT', 'DELETE', 'PATCH'], allow: 'POST, OPTIONS' })),
  ];

  it('answers a wrong method with 405, Allow, and {"success":"false","error":...} naming the method', async () => {
    const app = appWith({ adminKey: KEY });
    let checked = 0;
    for (const { path, wrong, allow } of table) {
      for (const p of bothSlashes(path)) {
        for (const method of wrong) {
          const res = await app.request(p, { method, headers: { authorization: `Bearer ${KEY}` } });
          expect(res.status, `${method} ${p}`).toBe(405);
          expect(res.headers.get('allow'), `${method} ${p}`).toBe(allow);
          expect(await res.json()).toEqual({ success: 'false', error: `method ${method} not allowed on ${p}; allowed: ${allow}` });
          checked++;
        }
      }
    }
    expect(checked).toBe(table.length * 2 * 4);
  });

  it('answers OPTIONS with 204 and Allow', async () => {
    const app = appWith();
    for (const { path, allow } of table) {
      for (const p of bothSlashes(path)) {
        const res = await app.request(p, { method: 'OPTIONS' });
        expect(res.status, p).toBe(204);
        expect(res.headers.get('allow'), p).toBe(allow);
        expect(await res.text()).toBe('');
      }
    }
  });

  it('serves every GET route at both paths (HEAD too), and POST routes reach their handler at both paths', async () => {
    const app = appWith({ adminKey: KEY });
    const auth = { authorization: `Bearer ${KEY}` };
    for (const path of GET_ROUTES) {
      for (const p of bothSlashes(path)) {
        // a route that needs its query answers its own 400 without it: the handler's, not routing's
        const status = NEEDS_QUERY.has(path) ? 400 : 200;
        const res = await app.request(p, { headers: auth });
        expect(res.status, p).toBe(status);
        if (status === 400) expect(((await res.json()) as { error: string }).error, p).toMatch(/missing 'subject'/);
        expect((await app.request(p, { method: 'HEAD', headers: auth })).status, p).toBe(status);
      }
    }
    // an empty POST reaches the handler: its own answer (a list, or a 400 for the missing image...), not routing's
    for (const path of POST_ROUTES) {
      for (const p of bothSlashes(path)) {
        const res = await app.request(p, { method: 'POST', headers: auth });
        const text = await res.text();
        expect(res.status, p).not.toBe(405);
        expect(text, p).not.toMatch(/no such path|not allowed on/);
        expect(JSON.parse(text), p).toHaveProperty('success');
      }
    }
  });

  it('keeps / a GET-only page: any other method is a 404', async () => {
    const app = appWith();
    expect((await app.request('/')).status).toBe(200);
    for (const method of ['POST', 'PUT', 'OPTIONS']) {
      const res = await app.request('/', { method });
      expect(res.status, method).toBe(404);
      expect(await res.json()).toEqual({ success: 'false', error: 'no such path: /' });
    }
  });
});

describe('admin middleware on every gallery-changing route', () => {
  const face = () => photo(FACE);
  // Each is a request that would change or dump the gallery if the guard let it through.
  const requests: { path: string; init: () => RequestInit; deepstack: boolean }[] = [
    {
      path: '/trainer/add/?subject=intruder',
      init: () => ({ method: 'POST', body: face(), headers: { 'content-type': 'image/png' } }),
      deepstack: false,
    },
    { path: '/trainer/remove/?subject=intruder', init: () => ({ method: 'POST' }), deepstack: false },
    { path: '/trainer/import/', init: () => ({ method: 'POST', body: '', headers: { 'content-type': 'application/x-ndjson' } }), deepstack: false },
    { path: '/trainer/export/', init: () => ({ method: 'GET' }), deepstack: false },
    { path: '/v1/vision/face/register', init: () => ({ method: 'POST', body: form({ userid: 'intruder' }, face()) }), deepstack: true },
    { path: '/v1/vision/face/delete', init: () => ({ method: 'POST', body: form({ userid: 'intruder' }) }), deepstack: true },
  ];

  function form(fields: Record<string, string>, image?: Buffer): FormData {
    const fd = new FormData();
    for (const [k, v] of Object.entries(fields)) fd.append(k, v);
    if (image) fd.append('image', new Blob([image]), 'face.png');
    return fd;
  }

  const errorKeys = (deepstack: boolean) => (deepstack ? ['success', 'error', 'duration'] : ['success', 'error']);

  it('with --admin-key: 401 with WWW-Authenticate without the key and with a wrong one; the gallery is unchanged', async () => {
    const app = appWith({ adminKey: KEY });
    for (const { path, init, deepstack } of requests) {
      for (const [headers, error] of [
        [{}, /need the admin key/],
        [{ 'x-api-key': 'not-the-key' }, /^wrong admin key$/],
      ] as const) {
        const base = init();
        const res = await app.request(path, { ...base, headers: { ...(base.headers as Record<string, string>), ...headers } });
        expect(res.status, path).toBe(401);
        expect(res.headers.get('www-authenticate'), path).toBe('Bearer');
        const body = (await res.json()) as Record<string, unknown>;
        expect(Object.keys(body), path).toEqual(errorKeys(deepstack));
        expect(body['error'], path).toMatch(error);
      }
    }
    expect(service.subjects()).toEqual([]);
  });

  it('without --admin-key: 403 to a client that is not on this machine (app.request has no socket)', async () => {
    const app = appWith();
    for (const { path, init, deepstack } of requests) {
      const res = await app.request(path, init());
      expect(res.status, path).toBe(403);
      const body = (await res.json()) as Record<string, unknown>;
      expect(Object.keys(body), path).toEqual(errorKeys(deepstack));
      expect(body['error'], path).toMatch(/loopback/);
    }
    expect(service.subjects()).toEqual([]);
  });

  it('lets the admin through: the header on /trainer, the form key on DeepStack register and delete', async () => {
    const app = appWith({ adminKey: KEY });
    const add = await app.request('/trainer/add/?subject=admin-added', {
      method: 'POST',
      body: face(),
      headers: { 'content-type': 'image/png', authorization: `Bearer ${KEY}` },
    });
    expect(add.status).toBe(200);
    const reg = await app.request('/v1/vision/face/register', { method: 'POST', body: form({ userid: 'ds-added', admin_key: KEY }, face()) });
    expect(await reg.json()).toEqual({ success: true, message: 'face added', duration: 0 });
    expect(
      service
        .subjects()
        .map((s) => s.subject)
        .sort(),
    ).toEqual(['admin-added', 'ds-added']);
    const del = await app.request('/v1/vision/face/delete', { method: 'POST', body: form({ userid: 'ds-added', api_key: KEY }) });
    expect(del.status).toBe(200);
    const rm = await app.request('/trainer/remove/?subject=admin-added', { method: 'POST', headers: { 'x-api-key': KEY } });
    expect(rm.status).toBe(200);
    expect(service.subjects()).toEqual([]);
  });

  it('/metrics: --metrics-access admin needs the admin key, loopback refuses a remote client', async () => {
    const admin = appWith({ adminKey: KEY, metricsAccess: 'admin' });
    const none = await admin.request('/metrics');
    expect(none.status).toBe(401);
    expect(await none.json()).toMatchObject({ success: 'false', error: expect.stringMatching(/^metrics reads need the admin key/) });
    const ok = await admin.request('/metrics', { headers: { authorization: `Bearer ${KEY}` } });
    expect(ok.status).toBe(200);
    expect(await ok.text()).toMatch(/^# HELP /m);
    expect((await appWith({ metricsAccess: 'loopback' }).request('/metrics')).status).toBe(403);
    expect((await appWith({ metricsAccess: 'open' }).request('/metrics')).status).toBe(200);
  });
});
