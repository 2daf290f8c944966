// `node dist/bench/run.js --import-qualities [--lines 500] [--rounds 2]` (or `node dist/bench/import-qualities.js ...`):
// what an import costs now that each kept crop's quality is stored with its sample (docs/gallery.md, import). One `RecognitionService.import` of --lines JSON lines
// (the `edgecv trainer import` batch size by default) into a fresh SQLite gallery, the lines made of a few test
// photos' real crops and embeddings (this server's model, so nothing is embedded again): with crops and their
// qualities (an export of this version: nothing measured), with crops and no qualities (an older export: every
// crop measured on the quality worker), without crops. Prints each kind's import time, the median of --rounds.

import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { exportLine } from '../src/gallery/jsonl.js';
import { RecognitionService } from '../src/gallery/recognition-service.js';
import { sampleQuality } from '../src/gallery/sample-quality.js';
import { SqliteGalleryStore } from '../src/gallery/sqlite-store.js';
import type { StoredSample } from '../src/gallery/types.js';
import { Engine } from '../src/index.js';
import { median } from '../src/metrics/percentiles.js';
import { numericFlags } from './fuzz/cli-args.js';
import { loadJohns } from '../testkit/face-verification.js';
import { REPO_ROOT } from '../testkit/server-process.js';
import { table } from '../testkit/table.js';
import { runAsProgram } from './entry.js';

const KINDS = ['crops and their qualities', 'crops, no qualities', 'no crops'] as const;

/** The bench: `argv` holds its flags. */
export async function importQualities(argv: string[]): Promise<void> {
  const flags = numericFlags({ lines: 500, rounds: 2 }, argv);
  const engine = await Engine.open({ workers: 1 });
  try {
    const { model, version } = engine.faceEmbedder()!;
    const made: StoredSample[] = [];
    for (const p of loadJohns(path.join(REPO_ROOT, 'test', 'data')).slice(0, 8)) {
      const r = await engine.embedFace(p.bytes, { keepCrop: true });
      if (!r.crop || !r.embedding) continue;
      const crop = Buffer.from(r.crop.jpeg);
      const base = { id: 0, subject: '', createdAt: Date.now(), model, modelVersion: version, embedding: r.embedding };
      made.push({ ...base, crop, cropRect: r.crop.rect, quality: sampleQuality(crop, r.crop.rect) });
    }
    const body = (kind: (typeof KINDS)[number]) =>
      Array.from({ length: flags.lines }, (_, i) => {
        const { quality, ...s } = made[i % made.length]!;
        const line = { ...s, id: i + 1, subject: `person ${i % 20}` };
        if (kind === 'no crops') return exportLine({ ...line, crop: null, cropRect: null });
        return exportLine(kind === 'crops and their qualities' ? { ...line, quality } : line);
      }).join('\n');
    const times = new Map<string, number[]>(KINDS.map((k) => [k, []]));
    for (let round = 0; round < flags.rounds; round++) {
      for (const kind of KINDS) {
        const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'edgecv-import-bench-'));
        const service = await RecognitionService.open(engine, SqliteGalleryStore.open(dir), { log: () => {} });
        try {
          await service.ready;
          const text = body(kind);
          const t0 = performance.now();
          const { added } = await service.import(text, false);
          times.get(kind)!.push(performance.now() - t0);
          if (added !== flags.lines) throw new Error(`imported ${added} of ${flags.lines}`);
        } finally {
          await service.close();
          fs.rmSync(dir, { recursive: true, force: true });
        }
      }
    }
    table(
      `RecognitionService.import of ${flags.lines} lines, SQLite (median of ${flags.rounds})`,
      KINDS.map((kind) => ({ lines: kind, 'import ms': Math.round(median(times.get(kind)!)) })),
    );
  } finally {
    await engine.close();
  }
}

await runAsProgram(import.meta.url, importQualities);
