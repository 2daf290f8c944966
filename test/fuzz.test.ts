// A short seeded run of `npm run fuzz` (bench/fuzz/) against a real `edgecv serve` on 127.0.0.1: every class
// of hostile request (truncated and bit-flipped photos, random bytes, extreme shapes, chunk bombs, bad forms,
// compressed bodies, wrong methods, malformed HTTP, long headers, oversize claims) in every input form.
// The server must survive, never answer 500, and answer JSON every time it answers.

import { afterAll, beforeAll, expect, it } from 'vitest';
import { KINDS } from './support/fuzz/cases.js';
import { fuzzPhotos, runFuzz } from './support/fuzz/run-fuzz.js';
import { DATA_DIR, useTempDirs } from './helpers.js';
import { startServerProcess, type ServerProcess } from './support/server-process.js';

const KEY = 'fuzz-test-admin-key-0123456';
const CASES = 360;

const newTmpDir = useTempDirs();
let server: ServerProcess;

beforeAll(async () => {
  server = await startServerProcess(['--data-dir', newTmpDir('edgecv-fuzz-'), '--workers', '2', '--admin-key', KEY]);
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
  });
  expect(Object.keys(report.byKind).sort()).toEqual([...KINDS].sort());
  expect(report.serverErrors).toEqual([]);
  expect(report.notJson).toEqual([]);
  expect(report.alive && server.child.exitCode === null).toBe(true);
  expect(report.noAnswer).toEqual([]);
  // Every class got answers, and real photos were processed.
  expect(report.statuses['200']).toBeGreaterThan(0);
  expect(report.peakRssBytes).toBeLessThan(1.5 * 1024 ** 3);
  expect(server.output()).not.toMatch(/iCCP|known incorrect sRGB/);
});
