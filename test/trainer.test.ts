// The recognition HTTP API over a real SQLite gallery: enrolment (every input form and error), admin auth, listing,
// removal, prediction answers, export/import, the "Training data update in progress" window, re-embedding after
// a model change. Real engine, real photos, real SQLite files in a temporary folder.

import https from 'node:https';
import os from 'node:os';
import path from 'node:path';
import { Database } from '../src/sqlite.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadJohns, type LabelledPhoto } from '../testkit/face-verification.js';
import { DEFAULT_BODY_LIMIT } from '../src/config.js';
import { RecognitionService } from '../src/gallery/recognition-service.js';
import { SqliteGalleryStore } from '../src/gallery/sqlite-store.js';
import type { Engine } from '../src/index.js';
import { createApp } from '../src/server/app.js';
import { startServer } from '../src/server/server.js';
import { loadTls } from '../src/server/tls.js';
import { DATA_DIR, garbage, httpsRequest, sharedEngine, photo, useTempDirs } from './helpers.js';
import { expectError } from './support/http-api.js';

const KEY = 'test-admin-key-0123456789';
const AUTH = { authorization: `Bearer ${KEY}` };
const GROUP = 'dlib/faces/2008_002506.jpg';
const NO_FACE = 'skimage/rocket.jpg';
const STRANGER = 'skimage/astronaut.png'; // not one of the johns
const TIME = '\\d+\\.\\d{3}';

const newTmpDir = useTempDirs();
const tmpDir = () => newTmpDir('edgecv-gallery-');

let engine: Engine;
let johns: Map<string, LabelledPhoto[]>;

beforeAll(async () => {
  engine = await sharedEngine({ workers: 2 });
  johns = new Map();
  for (const p of loadJohns(DATA_DIR)) johns.set(p.subject, [...(johns.get(p.subject) ?? []), p]);
});

async function openService(dir: string, storeCrops = true): Promise<RecognitionService> {
  const service = await RecognitionService.open(engine, SqliteGalleryStore.open(dir), { storeCrops, log: () => {} });
  await service.ready;
  return service;
}

/** adminKey null: none configured. */
function appFor(service: RecognitionService, adminKey: string | null = KEY) {
  return createApp({ engine, config: { bodyLimit: DEFAULT_BODY_LIMIT, adminKey: adminKey ?? undefined }, recognition: service });
}

type App = ReturnType<typeof appFor>;

function addRaw(app: App, subject: string, bytes: Buffer, headers: Record<string, string> = AUTH) {
  return app.request(`/trainer/add/?subject=${encodeURIComponent(subject)}`, {
    method: 'POST',
    body: bytes,
    headers: { 'content-type': 'image/jpeg', ...headers },
  });
}

function predict(app: App, bytes: Buffer) {
  return app.request('/recognizer/predict/', { method: 'POST', body: bytes, headers: { 'content-type': 'image/jpeg' } });
}

describe('recognition API', () => {
  let service: RecognitionService;
  let app: App;

  beforeAll(async () => {
    service = await openService(tmpDir());
    app = appFor(service);
  });
  afterAll(async () => {
    await service?.close();
  });

  it('predict with nobody enrolled: 409 and a clear error', async () => {
    const res = await predict(app, johns.get('John_Simm')![0]!.bytes);
    expect(res.status).toBe(409);
    expectError(await res.json(), /no subject is enrolled/);
  });

  it('gallery changes need the admin key (Bearer or X-API-Key); listing does not', async () => {
    const bytes = johns.get('John_Salley')![0]!.bytes;
    const none = await addRaw(app, 'John_Salley', bytes, {});
    expect(none.status).toBe(401);
    expect(none.headers.get('www-authenticate')).toBe('Bearer');
    expectError(await none.json(), /admin key/);
    const wrongKeys: Record<string, string>[] = [
      { authorization: 'Bearer nope' },
      { 'x-api-key': `${KEY}x` },
      { 'x-api-key': KEY.slice(0, -1) },
      { authorization: KEY },
    ];
    for (const headers of wrongKeys) {
      const res = await addRaw(app, 'John_Salley', bytes, headers);
      expect(res.status).toBe(401);
      expectError(await res.json());
    }
    for (const [p, method] of [
      ['/trainer/remove/', 'POST'],
      ['/trainer/import/', 'POST'],
      ['/trainer/export/', 'GET'],
    ] as const) {
      expect((await app.request(p, { method })).status).toBe(401);
    }
    expect(service.size).toBe(0);
    const list = await app.request('/trainer/subjects/');
    expect(list.status).toBe(200);
    expect(await list.json()).toEqual({ success: 'true', subjects: [] });
  });

  it('enrols with a raw body and ?subject=, multipart, and urlencoded base64', async () => {
    const [a, b, c] = johns.get('John_Salley')!;
    const raw = await addRaw(app, 'John_Salley', a!.bytes, { 'x-api-key': KEY });
    expect(raw.status).toBe(200);
    const text = await raw.text();
    expect(text).toMatch(
      new RegExp(
        `^\\{"success":"true","subject":"John_Salley","id":\\d+,"samples":1,"rect":\\[\\d+,\\d+,\\d+,\\d+\\],"rects":\\[\\[\\d+,\\d+,\\d+,\\d+\\]\\],"serverprocessingtime":"${TIME}","server_processing_time":"${TIME}"\\}$`,
      ),
    );

    const fd = new FormData();
    fd.append('subject', 'John_Salley');
    fd.append('image', new Blob([b!.bytes], { type: 'image/jpeg' }), 'b.jpg');
    const multi = await app.request('/trainer/add', { method: 'POST', body: fd, headers: AUTH });
    expect(multi.status).toBe(200);
    expect(await multi.json()).toMatchObject({ success: 'true', subject: 'John_Salley', samples: 2 });

    const form = `subject=John_Salley&image=${encodeURIComponent(c!.bytes.toString('base64'))}`;
    const url = await app.request('/trainer/add/', {
      method: 'POST',
      body: form,
      headers: { 'content-type': 'application/x-www-form-urlencoded', ...AUTH },
    });
    expect(url.status).toBe(200);
    expect(await url.json()).toMatchObject({ subject: 'John_Salley', samples: 3 });
  });

  it('refuses photos without exactly one face, and bad subjects, with a clear reason', async () => {
    const cases: [Response, number, RegExp][] = [
      [
        await app.request('/trainer/add/', {
          method: 'POST',
          body: johns.get('John_Simm')![0]!.bytes,
          headers: { 'content-type': 'image/jpeg', ...AUTH },
        }),
        400,
        /subject/,
      ],
      [await addRaw(app, 'bad\u0001name', johns.get('John_Simm')![0]!.bytes), 400, /control characters/],
      [await addRaw(app, ' padded', johns.get('John_Simm')![0]!.bytes), 400, /spaces/],
      [await addRaw(app, 'x'.repeat(129), johns.get('John_Simm')![0]!.bytes), 400, /128/],
      [await addRaw(app, 'x', garbage()), 400, /./],
      [await addRaw(app, 'x', Buffer.alloc(0)), 400, /missing image/],
    ];
    for (const [res, status, re] of cases) {
      expect(res.status).toBe(status);
      expectError(await res.json(), re);
    }
    expect(service.subjects().map((s) => s.subject)).toEqual(['John_Salley']);
  });

  it('answers a photo without exactly one face as the original training server did: 200, success "false", the reason', async () => {
    for (const [file, reason] of [
      [NO_FACE, 'No face detected'],
      [GROUP, 'More than 1 face'],
    ] as const) {
      const res = await addRaw(app, 'x', photo(file));
      expect(res.status).toBe(200);
      const body = (await res.json()) as Record<string, unknown>;
      expect(Object.keys(body)).toEqual(['success', 'reason', 'serverprocessingtime', 'server_processing_time']);
      expect(body).toMatchObject({ success: 'false', reason });
    }
    expect(service.subjects().map((s) => s.subject)).toEqual(['John_Salley']);
  });

  it('keeps every photo as its own sample; lists subjects with counts and ids', async () => {
    for (const [subject, photos] of johns) {
      const have = service.subjects().find((s) => s.subject === subject)?.samples ?? 0;
      for (const p of photos.slice(have, 4)) expect((await addRaw(app, subject, p.bytes)).status).toBe(200);
    }
    const res = await app.request('/trainer/subjects');
    const body = (await res.json()) as { success: string; subjects: { subject: string; samples: number; ids: number[] }[] };
    expect(body.success).toBe('true');
    expect(body.subjects.map((s) => s.subject)).toEqual([...johns.keys()].sort());
    for (const s of body.subjects) {
      expect(s.samples).toBe(4);
      expect(s.ids).toHaveLength(4);
    }
    expect(new Set(body.subjects.flatMap((s) => s.ids)).size).toBe(20);
  });

  it('predicts the right person with a confidence under 105, in the exact answer shape', async () => {
    for (const [subject, photos] of johns) {
      for (const p of photos.slice(4, 6)) {
        const res = await predict(app, p.bytes);
        expect(res.status).toBe(200);
        const text = await res.text();
        expect(text).toMatch(
          new RegExp(
            `^\\{"success":"true","subject":"[^"]+","confidence":"\\d+\\.\\d{2}","rect":\\[\\d+,\\d+,\\d+,\\d+\\],"serverprocessingtime":"${TIME}","server_processing_time":"${TIME}"\\}$`,
          ),
        );
        const body = JSON.parse(text) as { subject: string; confidence: string };
        expect(body.subject).toBe(subject);
        expect(Number(body.confidence)).toBeLessThan(105);
      }
    }
  });

  it('returns the nearest subject for a stranger too, with a confidence above 105', async () => {
    const res = await app.request('/recognizer/predict', { method: 'POST', body: photo(STRANGER), headers: { 'content-type': 'image/png' } });
    expect(res.status).toBe(200);
    const body = (await res.json()) as { success: string; subject: string; confidence: string };
    expect(body.success).toBe('true');
    expect([...johns.keys()]).toContain(body.subject);
    expect(Number(body.confidence)).toBeGreaterThan(105);
  });

  it('answers exactly {"success":"false","serverprocessingtime","server_processing_time"} when there is no face', async () => {
    const res = await predict(app, photo(NO_FACE));
    expect(res.status).toBe(200);
    expect(await res.text()).toMatch(new RegExp(`^\\{"success":"false","serverprocessingtime":"${TIME}","server_processing_time":"${TIME}"\\}$`));
  });

  it('predict has the image errors of detection', async () => {
    expect((await predict(app, garbage())).status).toBe(400);
    expect((await app.request('/recognizer/predict/', { method: 'POST', body: 'x', headers: { 'content-type': 'text/plain' } })).status).toBe(415);
    expect((await app.request('/recognizer/predict/', { method: 'POST' })).status).toBe(400);
    const get = await app.request('/recognizer/predict/');
    expect(get.status).toBe(405);
    expect(get.headers.get('allow')).toBe('POST, OPTIONS');
    expect((await app.request('/trainer/subjects/', { method: 'POST' })).status).toBe(405);
  });

  it('removes one sample by id, then a whole subject (query, form or JSON); 404 when nothing matches', async () => {
    const simm = () => service.subjects().find((s) => s.subject === 'John_Simm');
    const id = simm()!.ids[0]!;
    const one = await app.request(`/trainer/remove/?subject=John_Simm&id=${id}`, { method: 'POST', headers: AUTH });
    expect(one.status).toBe(200);
    expect(await one.json()).toEqual({ success: 'true', subject: 'John_Simm', removed: [id] });
    expect(simm()!.samples).toBe(3);
    const again = await app.request('/trainer/remove/', {
      method: 'POST',
      body: JSON.stringify({ subject: 'John_Simm', id }),
      headers: { 'content-type': 'application/json', ...AUTH },
    });
    expect(again.status).toBe(404);
    expectError(await again.json(), /no sample/);
    const bad = await app.request('/trainer/remove/', {
      method: 'POST',
      body: 'subject=John_Simm&id=abc',
      headers: { 'content-type': 'application/x-www-form-urlencoded', ...AUTH },
    });
    expect(bad.status).toBe(400);
    const all = await app.request('/trainer/remove/', {
      method: 'POST',
      body: 'subject=John_Simm',
      headers: { 'content-type': 'application/x-www-form-urlencoded', ...AUTH },
    });
    expect(all.status).toBe(200);
    expect(((await all.json()) as { removed: number[] }).removed).toHaveLength(3);
    expect(simm()).toBeUndefined();
    const gone = await app.request('/trainer/remove/?subject=John_Simm', { method: 'POST', headers: AUTH });
    expect(gone.status).toBe(404);
    expect((await app.request('/trainer/remove/', { method: 'POST', headers: AUTH })).status).toBe(400);
    // and nobody is recognized as the removed subject any more
    for (const p of johns.get('John_Simm')!.slice(4, 7)) {
      const body = (await (await predict(app, p.bytes)).json()) as { subject: string };
      expect(body.subject).not.toBe('John_Simm');
    }
  });

  it('exports the gallery as JSON lines and imports it elsewhere (replace), with the same answers', async () => {
    const res = await app.request('/trainer/export/', { headers: AUTH });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^application\/x-ndjson/);
    const text = await res.text();
    const lines = text
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(lines).toHaveLength(service.size);
    // quality: enrolled samples have it (measured at enrolment, kept with the sample).
    expect(Object.keys(lines[0]!)).toEqual(['id', 'subject', 'created', 'model', 'model_version', 'embedding', 'crop', 'crop_rect', 'quality']);

    const other = await openService(tmpDir());
    try {
      const otherApp = appFor(other);
      // something to be replaced
      expect((await addRaw(otherApp, 'someone', johns.get('John_Simm')![0]!.bytes)).status).toBe(200);
      const imported = await otherApp.request('/trainer/import/?mode=replace', {
        method: 'POST',
        body: text,
        headers: { 'content-type': 'application/x-ndjson', ...AUTH },
      });
      expect(imported.status).toBe(200);
      expect(await imported.json()).toEqual({ success: 'true', added: lines.length, samples: lines.length });
      expect(other.subjects().map((s) => [s.subject, s.samples])).toEqual(service.subjects().map((s) => [s.subject, s.samples]));
      for (const p of johns.get('John_Savage')!.slice(5, 8)) {
        const a = (await (await predict(app, p.bytes)).json()) as { subject: string; confidence: string };
        const b = (await (await predict(otherApp, p.bytes)).json()) as { subject: string; confidence: string };
        expect([b.subject, b.confidence]).toEqual([a.subject, a.confidence]);
      }
    } finally {
      await other.close();
    }
  });

  it('imports photos (append), all or nothing: a bad line changes nothing', async () => {
    const before = service.size;
    const good = johns
      .get('John_Simm')!
      .slice(0, 2)
      .map((p) => JSON.stringify({ subject: 'John_Simm', image: p.bytes.toString('base64') }));
    const noFace = JSON.stringify({ subject: 'John_Simm', image: photo(NO_FACE).toString('base64') });
    for (const [body, re] of [
      [[...good, noFace].join('\n'), /line 3: No face detected/],
      [[...good, '{"subject":"x"'].join('\n'), /line 3: not valid JSON/],
      [[good[0], '{"image":"AAAA"}'].join('\n'), /line 2: 'subject'/],
    ] as const) {
      const res = await app.request('/trainer/import/', { method: 'POST', body, headers: { 'content-type': 'application/x-ndjson', ...AUTH } });
      expect(res.status).toBe(400);
      expectError(await res.json(), re);
      expect(service.size).toBe(before);
    }
    expect((await app.request('/trainer/import/', { method: 'POST', body: good[0], headers: { 'content-type': 'image/png', ...AUTH } })).status).toBe(
      415,
    );
    expect(
      (
        await app.request('/trainer/import/?mode=merge', {
          method: 'POST',
          body: good[0],
          headers: { 'content-type': 'application/x-ndjson', ...AUTH },
        })
      ).status,
    ).toBe(400);
    const ok = await app.request('/trainer/import/', {
      method: 'POST',
      body: `${good.join('\n')}\n\n`,
      headers: { 'content-type': 'application/x-ndjson', ...AUTH },
    });
    expect(ok.status).toBe(200);
    expect(await ok.json()).toEqual({ success: 'true', added: 2, samples: before + 2 });
  });

  it('serves predictions while a bulk import embeds, answers 503 "Training data update in progress" only during its swap', async () => {
    // The real SQLite store, whose bulk commit waits for a gate: it holds the import's swap open for the test.
    const store = SqliteGalleryStore.open(tmpDir());
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const addMany = store.addMany.bind(store);
    store.addMany = async (samples, replace) => {
      await gate;
      return addMany(samples, replace);
    };
    const s = await RecognitionService.open(engine, store, { log: () => {} });
    await s.ready;
    const own = appFor(s);
    const probe = johns.get('John_Savage')![9]!.bytes;
    expect((await addRaw(own, 'John_Savage', johns.get('John_Savage')![0]!.bytes)).status).toBe(200);
    const lines = [...johns.values()]
      .flatMap((photos) => photos.slice(6, 9))
      .map((p) => JSON.stringify({ subject: p.subject, image: p.bytes.toString('base64') }));
    const importing = own.request('/trainer/import/', {
      method: 'POST',
      body: lines.join('\n'),
      headers: { 'content-type': 'application/x-ndjson', ...AUTH },
    });
    // While the photos are embedded the window is closed: predictions are answered.
    const whileEmbedding: number[] = [];
    for (let i = 0; i < 200 && !s.updating; i++) {
      whileEmbedding.push((await predict(own, probe)).status);
      await new Promise((r) => setTimeout(r, 5));
    }
    expect(s.updating).toBe(true); // the swap: the store commit is waiting at the gate
    expect(whileEmbedding.length).toBeGreaterThan(0);
    expect(whileEmbedding.every((status) => status === 200)).toBe(true);
    for (const res of [await predict(own, probe), await addRaw(own, 'John_Savage', probe)]) {
      expect(res.status).toBe(503);
      expect(res.headers.get('retry-after')).toBe('2');
      expect(await res.json()).toEqual({ success: 'false', error: 'Training data update in progress' });
    }
    release();
    expect((await importing).status).toBe(200);
    expect(s.updating).toBe(false);
    expect((await predict(own, probe)).status).toBe(200);
    expect(s.size).toBe(1 + lines.length);
    await s.close();
  });

  it('never answers 503 because of single adds and removes', async () => {
    const probe = johns.get('John_Schneider')![10]!.bytes;
    const predictions: (Response | Promise<Response>)[] = [];
    const changes: (Response | Promise<Response>)[] = [];
    for (const p of johns.get('John_Shimkus')!.slice(4, 10)) {
      changes.push(addRaw(app, 'John_Shimkus', p.bytes));
      for (let k = 0; k < 3; k++) predictions.push(predict(app, probe));
    }
    const added = await Promise.all(changes);
    expect(added.map((r) => r.status)).toEqual(Array(6).fill(200));
    const ids = await Promise.all(added.map(async (r) => ((await r.json()) as { id: number }).id));
    for (const id of ids.slice(0, 3)) {
      predictions.push(predict(app, probe));
      changes.push(app.request(`/trainer/remove/?subject=John_Shimkus&id=${id}`, { method: 'POST', headers: AUTH }));
    }
    const statuses = (await Promise.all(predictions)).map((r) => r.status);
    expect(statuses).toEqual(Array(statuses.length).fill(200));
    expect((await Promise.all(changes)).map((r) => r.status)).toEqual(Array(9).fill(200));
  });
});

describe('durable gallery store (SQLite)', () => {
  it('re-embeds stored crops at start when the model version changed, with the 503 window meanwhile', async () => {
    const dir = tmpDir();
    const first = await openService(dir);
    const app1 = appFor(first);
    for (const [subject, photos] of johns) for (const p of photos.slice(0, 2)) expect((await addRaw(app1, subject, p.bytes)).status).toBe(200);
    const expected = (await (await predict(app1, johns.get('John_Schneider')![7]!.bytes)).json()) as { subject: string };
    expect(expected.subject).toBe('John_Schneider');
    await first.close();

    // Pretend the samples were made by another model: other version, useless vectors.
    const db = new Database(path.join(dir, 'gallery.db'));
    db.prepare("UPDATE samples SET model_version = 'an-older-model', embedding = zeroblob(4096)").run();
    db.close();

    const second = await RecognitionService.open(engine, SqliteGalleryStore.open(dir), { log: () => {} });
    const app2 = appFor(second);
    expect(second.updating).toBe(true);
    const busy = await predict(app2, johns.get('John_Schneider')![7]!.bytes);
    expect(busy.status).toBe(503);
    expect(busy.headers.get('retry-after')).toBe('2');
    await second.ready;
    expect(second.updating).toBe(false);
    expect(second.size).toBe(10);
    const body = (await (await predict(app2, johns.get('John_Schneider')![7]!.bytes)).json()) as { subject: string };
    expect(body.subject).toBe('John_Schneider');
    await second.close();
    const check = new Database(path.join(dir, 'gallery.db'), { readonly: true });
    const versions = check.prepare('SELECT DISTINCT model_version FROM samples').all() as { model_version: string }[];
    check.close();
    expect(versions).toEqual([{ model_version: engine.faceEmbedder()!.version }]);
  });

  it('keeps no crops with --no-store-crops', async () => {
    const dir = tmpDir();
    const service = await openService(dir, false);
    expect((await addRaw(appFor(service), 'John_Simm', johns.get('John_Simm')![0]!.bytes)).status).toBe(200);
    await service.close();
    const db = new Database(path.join(dir, 'gallery.db'), { readonly: true });
    const row = db.prepare('SELECT crop, crop_rect, length(embedding) AS bytes, model FROM samples').get() as Record<string, unknown>;
    db.close();
    expect(row).toEqual({ crop: null, crop_rect: null, bytes: 4096, model: 'faceres' });
  });
});

describe('admin without a key: loopback clients only', () => {
  let service: RecognitionService;
  beforeAll(async () => {
    service = await openService(tmpDir());
  });
  afterAll(async () => {
    await service?.close();
  });

  it('refuses a request whose client address is unknown (no socket)', async () => {
    const res = await addRaw(appFor(service, null), 'John_Simm', johns.get('John_Simm')![0]!.bytes, {});
    expect(res.status).toBe(403);
    expectError(await res.json(), /loopback/);
  });

  it('over a real socket: accepts 127.0.0.1, refuses the same machine reached through a non-loopback address', async () => {
    const tls = await loadTls({ dataDir: tmpDir() });
    const running = await startServer({ app: appFor(service, null), tls, port: 0, host: '0.0.0.0' });
    const agent = new https.Agent({ rejectUnauthorized: false });
    const send = (host: string) =>
      httpsRequest(`https://${host}:${running.port}/trainer/add/?subject=John_Simm`, {
        method: 'POST',
        headers: { 'content-type': 'image/jpeg' },
        body: johns.get('John_Simm')![1]!.bytes,
        agent,
      });
    try {
      const local = await send('127.0.0.1');
      expect(local.status).toBe(200);
      const external = Object.values(os.networkInterfaces())
        .flat()
        .find((i) => i && i.family === 'IPv4' && !i.internal);
      if (external) {
        const remote = await send(external.address);
        expect(remote.status).toBe(403);
        expectError(JSON.parse(remote.text), /loopback/);
      } else {
        console.warn('no non-loopback IPv4 interface here: the remote-client half of this test did not run');
      }
    } finally {
      agent.destroy();
      await running.close(500);
    }
  });
});
