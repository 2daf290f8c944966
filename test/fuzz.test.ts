// A short seeded run of `npm run fuzz` (bench/fuzz/) against a real `edgecv serve` on 127.0.0.1 (DeepStack routes keyed): every class
// of hostile request (truncated and bit-flipped photos, random bytes, extreme shapes, chunk bombs, bad forms,
// compressed bodies, wrong methods, malformed HTTP, long headers, oversize claims, poisoned /trainer/import/
// bodies) in every input form. The server must survive, never answer 500, and answer JSON every time it answers;
// every poisoned import is refused whole (400), and every row the gallery holds afterwards can be indexed.

import { afterAll, beforeAll, expect, it } from 'vitest';
import { KINDS } from '../testkit/fuzz/cases.js';
import { fuzzPhotos, runFuzz } from '../testkit/fuzz/run-fuzz.js';
import https from 'node:https';
import { embeddingProblem } from '../src/gallery/sample-check.js';
import { DATA_DIR, httpsRequest, useTempDirs } from './helpers.js';
import { startServerProcess, type ServerProcess } from '../testkit/server-process.js';

const KEY = 'fuzz-test-admin-key-0123456';
const API_KEY = 'fuzz-test-api-key-0123456';
const CASES = 360;

const newTmpDir = useTempDirs();
let server: ServerProcess;

beforeAll(async () => {
  server = await startServerProcess([
    '--data-dir',
    newTmpDir('edgecv-fuzz-'),
    '--workers',
    '2',
    '--admin-key',
    KEY,
    '--api-key',
    API_KEY,
    '--no-warm-up',
  ]);
});
afterAll(async () => {
  await server?.stop();
});

it(`survives ${CASES} seeded hostile requests with no 500 and only JSON answers`, async () => {
  const url = new URL(server.url);
  const report = await runFuzz({
    host: url.hostname,
    port: Number(url.port),
    pid: server.child.pid!,
    seed: 11,
    cases: CASES,
    concurrency: 4,
    photos: fuzzPhotos(DATA_DIR),
    adminKey: KEY,
    apiKey: API_KEY,
  });
  expect(Object.keys(report.byKind).sort()).toEqual([...KINDS].sort());
  expect(report.serverErrors).toEqual([]);
  expect(report.notJson).toEqual([]);
  expect(report.alive && server.child.exitCode === null, server.output().slice(-3000)).toBe(true);
  expect(report.noAnswer).toEqual([]);
  // the DeepStack routes without their key are 401, forms over the limits 413
  expect(report.unexpected).toEqual([]);
  expect(report.byKind['deepstack-keys']!.statuses['401']).toBeGreaterThan(0);
  expect(report.byKind['many-parts']!.statuses['413']).toBeGreaterThan(0);
  // Every class got answers, and real photos were processed.
  expect(report.statuses['200']).toBeGreaterThan(0);
  expect(report.peakRssBytes).toBeLessThan(1.5 * 1024 ** 3);
  expect(server.output()).not.toMatch(/iCCP|known incorrect sRGB/);

  // Every import case carries at least one bad line: each is refused whole, and nothing of it is stored.
  expect(Object.keys(report.byKind['import']!.statuses)).toEqual(['400']);
  const agent = new https.Agent({ rejectUnauthorized: false });
  const caps = JSON.parse((await httpsRequest(`${server.url}server/capabilities/`, { agent })).text) as {
    gallery: { state: string; quarantined: number; embedder: { dim: number } };
  };
  expect(caps.gallery).toMatchObject({ state: 'ready', quarantined: 0 });
  const exported = await httpsRequest(`${server.url}trainer/export/`, { headers: { authorization: `Bearer ${KEY}` }, agent });
  expect(exported.status).toBe(200);
  const rows = exported.text
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => JSON.parse(l) as { subject: string; embedding: string });
  expect(rows.filter((r) => r.subject.startsWith('fuzz-import'))).toEqual([]);
  for (const r of rows) {
    const bytes = Buffer.from(r.embedding, 'base64');
    const v = new Float32Array(bytes.length / 4).map((_, i) => bytes.readFloatLE(i * 4));
    expect(embeddingProblem(v, caps.gallery.embedder.dim)).toBeNull();
  }
  agent.destroy();
});
