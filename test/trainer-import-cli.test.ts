// `edgecv trainer import FILE --addr https://...`: a JSON-lines file sent in batches to a real HTTPS server (real
// engine, real SQLite store), resumable: a batch the server refuses stops the run with what came before kept, and
// the same command carries on from there, sending nothing twice.

import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { loadJohns } from '../testkit/face-verification.js';
import { runTrainer } from '../src/commands/trainer.js';
import { RecognitionService } from '../src/gallery/recognition-service.js';
import { SqliteGalleryStore } from '../src/gallery/sqlite-store.js';
import type { Engine } from '../src/index.js';
import { createApp } from '../src/server/app.js';
import { startServer, type RunningServer } from '../src/server/server.js';
import { loadTls } from '../src/server/tls.js';
import { DATA_DIR, sharedEngine, useTempDirs } from './helpers.js';

const KEY = 'import-cli-key';
const tmpDir = useTempDirs();
let engine: Engine;
let service: RecognitionService;
let server: RunningServer;
let lines: string[];
let bodyLimit: number;

beforeAll(async () => {
  engine = await sharedEngine({ workers: 2 });
  // 30 samples as exported lines (real embeddings of johns photos), with one photo line (bigger) at line 15.
  const johns = loadJohns(DATA_DIR);
  const info = engine.faceEmbedder()!;
  lines = [];
  for (const p of johns.slice(0, 30)) {
    const r = await engine.embedFace(p.bytes);
    const bytes = Buffer.from(r.embedding!.buffer, r.embedding!.byteOffset, r.embedding!.byteLength);
    lines.push(
      JSON.stringify({
        subject: p.subject,
        model: info.model,
        model_version: info.version,
        embedding: bytes.toString('base64'),
        crop: null,
        crop_rect: null,
      }),
    );
  }
  const photoLine = JSON.stringify({ subject: johns[40]!.subject, image: johns[40]!.bytes.toString('base64') });
  lines.splice(14, 0, photoLine);
  // Ten exported lines fit in a request; nine and the photo line do not.
  const widest = Math.max(...lines.filter((l) => l !== photoLine).map((l) => l.length));
  bodyLimit = 10 * (widest + 1) + 64;
  expect(9 * lines[0]!.length + photoLine.length).toBeGreaterThan(bodyLimit);
  service = await RecognitionService.open(engine, SqliteGalleryStore.open(tmpDir()), { log: () => {} });
  await service.ready;
  const app = createApp({ engine, config: { bodyLimit, adminKey: KEY }, recognition: service });
  server = await startServer({ app, tls: await loadTls({ dataDir: tmpDir() }), port: 0, host: '127.0.0.1' });
}, 120_000);

afterAll(async () => {
  await server?.close(100);
  await service?.close();
});

async function run(args: string[]): Promise<{ code: number; err: string; out: string }> {
  const err: string[] = [];
  const out: string[] = [];
  const e = vi.spyOn(console, 'error').mockImplementation((m: unknown) => void err.push(String(m)));
  const o = vi.spyOn(console, 'log').mockImplementation((m: unknown) => void out.push(String(m)));
  try {
    return { code: await runTrainer(args), err: err.join('\n'), out: out.join('\n') };
  } finally {
    e.mockRestore();
    o.mockRestore();
  }
}

describe('edgecv trainer import', () => {
  it('imports in batches with progress, stops at a refused batch keeping what came before, and resumes', async () => {
    const file = path.join(tmpDir(), 'gallery.jsonl');
    fs.writeFileSync(file, `${lines.join('\n')}\n`);
    const common = ['import', file, '--addr', `https://127.0.0.1:${server.port}`, '--admin-key', KEY, '--insecure'];

    // Batches of 10: the first goes in, the second (with the photo line) is over the body limit: 413.
    const first = await run([...common, '--batch', '10']);
    expect(first.code).toBe(1);
    expect(first.err).toMatch(/imported 10 \/ 31 lines \(32\.3%\), 10 samples added/);
    expect(first.err).toMatch(/answered 413/);
    expect(first.err).toMatch(/10 lines are imported and kept; run the same command again/);
    expect(service.size).toBe(10);
    expect(JSON.parse(fs.readFileSync(`${file}.progress`, 'utf8'))).toMatchObject({ lines: 10, added: 10, done: false });

    // The same file again, smaller batches: it carries on after line 10 and finishes, nothing twice.
    const second = await run([...common, '--batch', '5']);
    expect(second.code).toBe(0);
    expect(second.err).toMatch(/carrying on after line 10/);
    expect(second.err).toMatch(/imported 31 \/ 31 lines \(100\.0%\), 31 samples added/);
    expect(service.size).toBe(31);

    // Done: a third run refuses rather than enrol everything twice.
    const third = await run([...common]);
    expect(third.code).toBe(1);
    expect(third.err).toMatch(/was imported already/);
    expect(service.size).toBe(31);
  });

  it('refuses a changed file against an old progress record, and bad flags', async () => {
    const file = path.join(tmpDir(), 'g.jsonl');
    fs.writeFileSync(file, `${lines.slice(0, 3).join('\n')}\n`);
    fs.writeFileSync(`${file}.progress`, JSON.stringify({ size: 1, mtimeMs: 0, mode: 'append', lines: 1, added: 1, done: false }));
    await expect(runTrainer(['import', file, '--addr', `https://127.0.0.1:${server.port}`, '--insecure'])).rejects.toThrow(
      /another version of the import file/,
    );
    await expect(runTrainer(['import', file, '--addr', 'x', '--batch', '0'])).rejects.toThrow(/--batch/);
    await expect(runTrainer(['export'])).rejects.toThrow(/only 'import'/);
  });
});
