// Shared test helpers: test photos, the real engine, crafted images, HTTPS requests.

import fs from 'node:fs';
import os from 'node:os';
import https from 'node:https';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll } from 'vitest';
import { Engine, type EngineOptions } from '../src/index.js';
import { PNG_SIGNATURE, pngChunk, rgbIhdr } from '../testkit/fuzz/hostile-images.js';

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
export const DATA_DIR = path.join(ROOT, 'test', 'data');

/** A test photo from test/data (made by `node scripts/setup/setup.mjs --test`, which `npm test` runs). */
export function photo(name: string): Buffer {
  const file = path.join(DATA_DIR, name);
  if (!fs.existsSync(file)) {
    throw new Error(`${file} is missing: run \`node scripts/setup/setup.mjs --test\` (npm test does) to fetch the test photos`);
  }
  return fs.readFileSync(file);
}

/** A maker of temporary folders for one test file; they are removed after its last test. */
export function useTempDirs(): (prefix?: string) => string {
  const dirs: string[] = [];
  afterAll(() => {
    for (const d of dirs) fs.rmSync(d, { recursive: true, force: true });
  });
  return (prefix = 'edgecv-test-') => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
    dirs.push(dir);
    return dir;
  };
}

/** The real engine with real models: no test here mocks it. */
export function openEngine(opts: EngineOptions = {}): Promise<Engine> {
  return Engine.open(opts);
}

const sharedEngines = new Map<string, Promise<Engine>>();

/**
 * The real engine for `opts`, opened once per option set and shared by every test file of this worker: the engine
 * tier runs its files one after another in one worker that is not reset between them (vitest.config.ts), so the
 * models are loaded and warmed once, not once per file. For files that neither close the engine nor count on a
 * fresh one (its stats, its cold runs); it is closed when the worker exits.
 */
export function sharedEngine(opts: EngineOptions = {}): Promise<Engine> {
  // No warm-up at open unless asked for: no file on a shared engine measures the first request or its cold runs.
  const options: EngineOptions = { warmUp: false, ...opts };
  const key = JSON.stringify(Object.entries(options).sort(([a], [b]) => a.localeCompare(b)));
  let engine = sharedEngines.get(key);
  if (!engine) {
    engine = Engine.open(options);
    sharedEngines.set(key, engine);
    engine.catch(() => sharedEngines.delete(key)); // a failed open is not kept: the next file tries again
  }
  return engine;
}

// ------------------------------------------------------------------ crafted images

/**
 * A PNG whose valid IHDR claims width x height (8-bit RGB), followed by a tiny IDAT and IEND: the header
 * alone says it is too large, and decoding it would fail.
 */
export function pngClaiming(width: number, height: number): Buffer {
  return Buffer.concat([
    PNG_SIGNATURE,
    pngChunk('IHDR', rgbIhdr(width, height)),
    pngChunk('IDAT', Buffer.from([0x78, 0x9c, 0x03, 0x00, 0x00, 0x00, 0x00, 0x01])),
    pngChunk('IEND', Buffer.alloc(0)),
  ]);
}

/** Deterministic bytes that are no image format at all. */
export function garbage(n = 4096): Buffer {
  const b = Buffer.alloc(n);
  let x = 12345;
  for (let i = 0; i < n; i++) {
    x = (x * 1103515245 + 12345) & 0x7fffffff;
    b[i] = x >>> 16;
  }
  b[0] = 0x42; // not a PNG/JPEG/GIF/WebP magic
  return b;
}

// ------------------------------------------------------------------ HTTPS client

export interface HttpsResult {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
  /** ms from sending to the full answer */
  ms: number;
  /** performance.now() when the answer was complete */
  doneAt: number;
}

export function httpsRequest(
  url: string,
  opts: { method?: string; headers?: Record<string, string>; body?: Buffer | string; ca?: string; agent?: https.Agent },
): Promise<HttpsResult> {
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    const req = https.request(url, { method: opts.method ?? 'GET', headers: opts.headers, ca: opts.ca, agent: opts.agent }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (d: Buffer) => chunks.push(d));
      res.on('end', () => {
        const doneAt = performance.now();
        resolve({
          status: res.statusCode ?? 0,
          headers: res.headers,
          text: Buffer.concat(chunks).toString('utf8'),
          ms: doneAt - t0,
          doneAt,
        });
      });
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(opts.body);
  });
}
