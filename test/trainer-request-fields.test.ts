// The /trainer routes without an image (remove, move, train) read their fields from the query, a form or JSON: a
// field that comes in a shape the route does not take (JSON null, a boolean, an array, an object; a multipart file
// part; `id[]=4`; a name given twice) is a 400 naming it, and never "absent": an absent id on /trainer/remove/ means
// the whole subject. Real engine, real photos, a real SQLite gallery; the subject must keep every sample.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadJohns } from '../testkit/face-verification.js';
import { DEFAULT_BODY_LIMIT } from '../src/config.js';
import { RecognitionService } from '../src/gallery/recognition-service.js';
import { SqliteGalleryStore } from '../src/gallery/sqlite-store.js';
import type { Engine } from '../src/index.js';
import { createApp } from '../src/server/app.js';
import { DATA_DIR, useTempDirs, sharedEngine } from './helpers.js';
import { expectError } from './support/http-api.js';

const KEY = 'test-admin-key-0123456789';
const AUTH = { authorization: `Bearer ${KEY}` };
const SUBJECT = 'John_Simm';
const newTmpDir = useTempDirs();

let engine: Engine;
let service: RecognitionService;
let app: ReturnType<typeof createApp>;

beforeAll(async () => {
  engine = await sharedEngine({ workers: 1 }); // nothing here reads its stats or closes it
  service = await RecognitionService.open(engine, SqliteGalleryStore.open(newTmpDir('edgecv-gallery-')), { storeCrops: false, log: () => {} });
  await service.ready;
  app = createApp({ engine, config: { bodyLimit: DEFAULT_BODY_LIMIT, adminKey: KEY }, recognition: service });
  for (const p of loadJohns(DATA_DIR)
    .filter((j) => j.subject === SUBJECT)
    .slice(0, 2))
    await service.enrol(SUBJECT, p.bytes);
});
afterAll(async () => {
  await service?.close();
});

const ids = () => service.subjects().find((s) => s.subject === SUBJECT)?.ids ?? [];

function json(body: unknown): RequestInit {
  return { method: 'POST', body: JSON.stringify(body), headers: { 'content-type': 'application/json', ...AUTH } };
}
function form(body: string): RequestInit {
  return { method: 'POST', body, headers: { 'content-type': 'application/x-www-form-urlencoded', ...AUTH } };
}
function multipart(build: (f: FormData) => void): RequestInit {
  const f = new FormData();
  build(f);
  return { method: 'POST', body: f, headers: AUTH };
}

describe('a malformed field is a 400, never "absent"', () => {
  it('remove: id as null, a boolean, an array, an object, a file part, id[]=, twice: 400 naming id, nothing removed', async () => {
    const before = ids();
    expect(before).toHaveLength(2);
    const id = before[0]!;
    const cases: [string, string, RequestInit][] = [
      ['JSON null', '/trainer/remove/', json({ subject: SUBJECT, id: null })],
      ['JSON true', '/trainer/remove/', json({ subject: SUBJECT, id: true })],
      ['JSON false', '/trainer/remove/', json({ subject: SUBJECT, id: false })],
      ['JSON array', '/trainer/remove/', json({ subject: SUBJECT, id: [id] })],
      ['JSON empty array', '/trainer/remove/', json({ subject: SUBJECT, id: [] })],
      ['JSON object', '/trainer/remove/', json({ subject: SUBJECT, id: { id } })],
      ['multipart file part', '/trainer/remove/', multipart((f) => (f.append('subject', SUBJECT), f.append('id', new Blob([String(id)]), 'id.txt')))],
      ['urlencoded id[]=', '/trainer/remove/', form(`subject=${SUBJECT}&id[]=${id}`)],
      ['urlencoded id[0]=', '/trainer/remove/', form(`subject=${SUBJECT}&id%5B0%5D=${id}`)],
      ['multipart id[]', '/trainer/remove/', multipart((f) => (f.append('subject', SUBJECT), f.append('id[]', String(id))))],
      ['query id[]=', `/trainer/remove/?subject=${SUBJECT}&id[]=${id}`, { method: 'POST', headers: AUTH }],
      ['urlencoded id twice', '/trainer/remove/', form(`subject=${SUBJECT}&id=${id}&id=${before[1]}`)],
      ['query id twice', `/trainer/remove/?subject=${SUBJECT}&id=${id}&id=${id}`, { method: 'POST', headers: AUTH }],
      ['JSON empty string', '/trainer/remove/', json({ subject: SUBJECT, id: '' })],
      ['urlencoded empty', '/trainer/remove/', form(`subject=${SUBJECT}&id=`)],
    ];
    for (const [what, url, init] of cases) {
      const res = await app.request(url, init);
      expect(res.status, what).toBe(400);
      expectError(await res.json(), /'id'/);
      expect(ids(), what).toEqual(before);
    }
  });

  it('remove: subject in a shape not taken is a 400 too', async () => {
    const before = ids();
    for (const init of [
      json({ subject: [SUBJECT] }),
      json({ subject: null }),
      form(`subject[]=${SUBJECT}`),
      multipart((f) => f.append('subject', new Blob([SUBJECT]), 's')),
    ]) {
      const res = await app.request('/trainer/remove/', init);
      expect(res.status).toBe(400);
      expectError(await res.json(), /'subject'/);
    }
    expect(ids()).toEqual(before);
  });

  it('move and train take their fields the same way', async () => {
    const before = ids();
    const move = await app.request('/trainer/move/', json({ subject: SUBJECT, id: before[0], to: ['x'] }));
    expect(move.status).toBe(400);
    expectError(await move.json(), /'to'/);
    const move2 = await app.request('/trainer/move/', form(`subject=${SUBJECT}&id=${before[0]}&to=a&to=b`));
    expect(move2.status).toBe(400);
    const train = await app.request('/trainer/train/', json({ subject: { name: SUBJECT } }));
    expect(train.status).toBe(400);
    expectError(await train.json(), /'subject'/);
    expect(ids()).toEqual(before);
  });

  it('add: subject as a file part, twice or as subject[] is a 400 naming it, nothing enrolled', async () => {
    const before = service.subjects();
    const john = loadJohns(DATA_DIR).find((j) => j.subject === SUBJECT)!;
    const image = new Blob([john.bytes], { type: 'image/jpeg' });
    const b64 = encodeURIComponent(john.bytes.toString('base64'));
    const cases: RequestInit[] = [
      multipart((f) => (f.append('image', image, 'a.jpg'), f.append('subject', new Blob([SUBJECT]), 's.txt'))),
      multipart((f) => (f.append('image', image, 'a.jpg'), f.append('subject', SUBJECT), f.append('subject', 'other'))),
      form(`image=${b64}&subject[]=${SUBJECT}`),
      form(`image=${b64}&subject=${SUBJECT}&subject=other`),
    ];
    for (const init of cases) {
      const res = await app.request('/trainer/add/', init);
      expect(res.status).toBe(400);
      expectError(await res.json(), /'subject' must be one text value/);
    }
    expect(service.subjects()).toEqual(before);
  });

  it('names: C1 control characters and lone surrogates are refused for new names (enrol, import, move target)', async () => {
    const before = ids();
    const john = loadJohns(DATA_DIR).find((j) => j.subject === SUBJECT)!;
    let line = '';
    for await (const l of service.exportLines()) line = l;
    const exported = JSON.parse(line) as Record<string, unknown>;
    for (const name of ['a\u0085b', 'nbsp\u009f', 'x\ud800', '\udc00y', 'a\ud800\ud800']) {
      if (!/[\ud800-\udfff]/.test(name)) {
        const add = await app.request(`/trainer/add/?subject=${encodeURIComponent(name)}`, {
          method: 'POST',
          body: john.bytes,
          headers: { 'content-type': 'image/jpeg', ...AUTH },
        });
        expect(add.status, JSON.stringify(name)).toBe(400);
        expectError(await add.json(), /control characters/);
      }
      // a lone surrogate only travels as a JSON escape: import lines and move's JSON body
      const imp = await app.request('/trainer/import/', {
        method: 'POST',
        body: JSON.stringify({ ...exported, subject: name }),
        headers: { 'content-type': 'application/x-ndjson', ...AUTH },
      });
      expect(imp.status, JSON.stringify(name)).toBe(400);
      expectError(await imp.json(), /line 1: 'subject' contains (control characters|a lone UTF-16 surrogate)/);
      const move = await app.request('/trainer/move/', json({ subject: SUBJECT, id: before[0], to: name }));
      expect(move.status, JSON.stringify(name)).toBe(400);
      expectError(await move.json(), /'subject' contains (control characters|a lone UTF-16 surrogate)/);
    }
    // a surrogate pair is a character: kept as is
    expect((await app.request('/trainer/move/', json({ subject: SUBJECT, id: before[0], to: 'emoji \u{1F600}' }))).status).toBe(200);
    expect((await app.request('/trainer/move/', json({ subject: 'emoji \u{1F600}', id: before[0], to: SUBJECT }))).status).toBe(200);
    expect(ids()).toEqual(before);
  });

  it('well-formed requests work as before: fields the route does not take are ignored, whole subject without id', async () => {
    const before = ids();
    // the original Android app's train and remove: urlencoded owner_name, owner_id, subject
    const train = await app.request('/trainer/train/', form(`owner_name=me&owner_id=7&owner_id=8&subject=${SUBJECT}`));
    expect(train.status).toBe(200);
    const one = await app.request('/trainer/remove/', json({ subject: SUBJECT, id: before[0], extra: null }));
    expect(await one.json()).toEqual({ success: 'true', subject: SUBJECT, removed: [before[0]] });
    const all = await app.request('/trainer/remove/', form(`owner_name=me&owner_id[]=7&subject=${SUBJECT}`));
    expect(await all.json()).toEqual({ success: 'true', subject: SUBJECT, removed: [before[1]] });
    expect(ids()).toEqual([]);
  });
});
