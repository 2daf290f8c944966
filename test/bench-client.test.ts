// `edgecv bench` against a real server on loopback (HTTPS with its generated certificate, the real engine, real
// photos), over REST and WebSocket for short runs; its errors by status, its messages for an unreachable or
// untrusted server, and the JS resize of --resize.

import fs from 'node:fs';
import path from 'node:path';
import jpeg from 'jpeg-js';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { loadBenchImages, resizeImage } from '../src/client/bench/images.js';
import { runBench, type BenchReport } from '../src/client/bench/run-bench.js';
import { parseDuration, runBenchCommand } from '../src/commands/bench.js';
import { DEFAULT_BODY_LIMIT } from '../src/config.js';
import { RecognitionService } from '../src/gallery/recognition-service.js';
import { SqliteGalleryStore } from '../src/gallery/sqlite-store.js';
import type { Engine } from '../src/index.js';
import { createApp } from '../src/server/app.js';
import { startServer, type RunningServer } from '../src/server/server.js';
import { loadTls } from '../src/server/tls.js';
import { DATA_DIR, openEngine, useTempDirs } from './helpers.js';
import { freePort } from '../testkit/server-process.js';

const newTmpDir = useTempDirs();
const FACES = path.join(DATA_DIR, 'dlib', 'faces');
let engine: Engine;
let service: RecognitionService;
let running: RunningServer;
let certFile: string;
let addr: string;

/** Runs `edgecv bench ...` (the command's own entry: importing src/cli.ts would start it), capturing what it prints. */
async function cli(args: string[]): Promise<{ code: number; out: string; err: string }> {
  const out: string[] = [];
  const err: string[] = [];
  const log = vi.spyOn(console, 'log').mockImplementation((...a: unknown[]) => void out.push(a.join(' ')));
  const error = vi.spyOn(console, 'error').mockImplementation((...a: unknown[]) => void err.push(a.join(' ')));
  try {
    const code = await runBenchCommand(args.slice(1));
    return { code, out: out.join('\n'), err: err.join('\n') };
  } finally {
    log.mockRestore();
    error.mockRestore();
  }
}

beforeAll(async () => {
  engine = await openEngine({ workers: 2 });
  // an empty gallery: the recognizer answers 409, which the bench counts by status
  service = await RecognitionService.open(engine, SqliteGalleryStore.open(newTmpDir('edgecv-bench-')), { log: () => {} });
  await service.ready;
  const dataDir = newTmpDir('edgecv-bench-tls-');
  const tls = await loadTls({ dataDir });
  certFile = tls.certPath;
  const app = createApp({ engine, config: { bodyLimit: DEFAULT_BODY_LIMIT }, recognition: service });
  running = await startServer({ app, tls, port: 0, host: '127.0.0.1', webSocketMaxPayload: DEFAULT_BODY_LIMIT });
  addr = `https://127.0.0.1:${running.port}`;
});
afterAll(async () => {
  await running?.close(1000);
  await service?.close();
  await engine?.close();
});

function expectSane(r: BenchReport) {
  expect(r.frames).toBeGreaterThan(0);
  expect(r.errors).toEqual({});
  expect(r.fps.perClient).toHaveLength(r.clients);
  for (const f of r.fps.perClient) expect(f).toBeGreaterThan(0);
  expect(r.fps.total).toBeCloseTo(
    r.fps.perClient.reduce((a, b) => a + b, 0),
    1,
  );
  expect(r.roundTrip.samples).toBe(r.frames);
  expect(r.serverTime.samples).toBe(r.frames);
  expect(r.roundTrip.p50).toBeLessThanOrEqual(r.roundTrip.p90);
  expect(r.roundTrip.p90).toBeLessThanOrEqual(r.roundTrip.p99);
  // the server's own time is part of the round trip
  expect(r.serverTime.mean).toBeGreaterThan(0);
  expect(r.serverTime.mean).toBeLessThan(r.roundTrip.mean);
  expect(r.networkLatency.samples).toBeGreaterThanOrEqual(1);
  expect(r.networkLatency.p50).toBeGreaterThan(0);
  expect(r.usage?.['cpu_util']?.mean).toBeGreaterThanOrEqual(0);
  expect(r.usage?.['mem_util']?.max).toBeGreaterThan(0);
}

describe('edgecv bench', () => {
  it.each(['rest', 'ws'] as const)('measures detection over %s with 2 clients (CLI, --json)', async (transport) => {
    const { code, out, err } = await cli([
      'bench',
      '--addr',
      addr,
      '--cacert',
      certFile,
      '--route',
      'detector',
      '--transport',
      transport,
      '--clients',
      '2',
      '--duration',
      '2s',
      '--images',
      FACES,
      '--json',
    ]);
    expect(err).toBe('');
    expect(code).toBe(0);
    const report = JSON.parse(out) as BenchReport;
    expect(report).toMatchObject({ addr, route: '/detector/detect/', transport, clients: 2 });
    expect(report.images).toBe(fs.readdirSync(FACES).filter((f) => f.endsWith('.jpg')).length);
    expect(report.durationS).toBeGreaterThanOrEqual(2);
    expectSane(report);
  });

  it('prints a readable report, and --resize sends smaller images', async () => {
    const { code, out } = await cli([
      'bench',
      '--addr',
      addr,
      '--insecure',
      '--route',
      'object',
      '--transport',
      'ws',
      '--duration',
      '1s',
      '--images',
      path.join(DATA_DIR, 'darknet', 'dog.jpg'),
      '--resize',
      '240',
    ]);
    expect(code).toBe(0);
    expect(out).toMatch(/over WebSocket, 1 client/);
    expect(out).toMatch(/round trip\s+[0-9.]+/);
    expect(out).toMatch(/FPS: [0-9.]+ total/);
    expect(out).toMatch(/no errors/);
  });

  it('counts failed frames by status', async () => {
    const images = loadBenchImages(path.join(DATA_DIR, 'dlib', 'johns', 'John_Savage'));
    for (const transport of ['rest', 'ws'] as const) {
      const r = await runBench({ addr, route: 'recognizer', transport, clients: 1, durationMs: 500, images, tls: { cacert: certFile } });
      expect(r.frames).toBe(0);
      expect(Object.keys(r.errors)).toEqual(['409']); // nobody enrolled
      expect(r.errors['409']).toBeGreaterThan(0);
    }
  });

  it('says clearly when the server is unreachable or its certificate untrusted', async () => {
    const closed = await freePort();
    const gone = await cli(['bench', '--addr', `https://127.0.0.1:${closed}`, '--insecure', '--duration', '1s', '--images', FACES]);
    expect(gone.code).toBe(1);
    expect(gone.err).toMatch(/cannot reach https:\/\/127\.0\.0\.1:\d+ \(ECONNREFUSED\)/);
    const untrusted = await cli(['bench', '--addr', addr, '--duration', '1s', '--images', FACES]);
    expect(untrusted.code).toBe(1);
    expect(untrusted.err).toMatch(/certificate .* is not trusted.*--cacert FILE.*--insecure/);
    const noImages = await cli(['bench', '--addr', addr, '--insecure', '--images', path.join(DATA_DIR, 'dlib', 'faces', 'testing.xml')]);
    expect(noImages.code).toBe(1);
    expect(noImages.err).toMatch(/no JPEG or PNG image/);
  });

  it('resizes in JS to the given width, keeping the aspect ratio', () => {
    const src = fs.readFileSync(path.join(DATA_DIR, 'darknet', 'dog.jpg'));
    const original = jpeg.decode(src);
    const small = jpeg.decode(resizeImage(src, 240));
    expect(small.width).toBe(240);
    expect(small.height).toBe(Math.round((original.height * 240) / original.width));
    // a PNG too
    const png = jpeg.decode(resizeImage(fs.readFileSync(path.join(DATA_DIR, 'skimage', 'astronaut.png')), 100));
    expect([png.width, png.height]).toEqual([100, 100]);
    // the picture survives: mean brightness close to the original's
    const mean = (d: Uint8Array) => d.reduce((a, v, i) => (i % 4 === 3 ? a : a + v), 0) / ((d.length / 4) * 3);
    expect(Math.abs(mean(small.data) - mean(original.data))).toBeLessThan(3);
  });

  it('parses durations', () => {
    expect(parseDuration('30s')).toBe(30_000);
    expect(parseDuration('500ms')).toBe(500);
    expect(parseDuration('2m')).toBe(120_000);
    expect(parseDuration('1.5')).toBe(1500);
    expect(() => parseDuration('soon')).toThrow(/--duration/);
  });
});
