// `node dist/bench/run.js --library-paging [--samples 3000] [--limit 50] [--walks 5]` (or
// `node dist/bench/library-paging.js ...`): what listing a large subject costs (GET /trainer/samples/, issue 48 item 3). A real `edgecv serve` over a SQLite gallery filled directly with
// --samples samples of one subject, each with a real face crop and embedding (a few test photos' crops, reused);
// the rows as an older edgecv wrote them (no quality). The subject is walked page by page (first walk: every
// quality measured; then --walks more: known), then once more after a restart of the server, while another client
// sends 640x480 photos to /v1/vision/face/ one at a time. Prints each phase's first page and page times, the answer
// sizes, the server's RSS, and the other client's latency quiet and during the walks. Loopback only, bounded counts.

import fs from 'node:fs';
import https from 'node:https';
import os from 'node:os';
import path from 'node:path';
import { SqliteGalleryStore } from '../src/gallery/sqlite-store.js';
import { embeddingToBytes } from '../src/gallery/types.js';
import { Engine } from '../src/index.js';
import { median, percentile } from '../src/metrics/percentiles.js';
import { Database } from '../src/sqlite.js';
import { numericFlags } from './fuzz/cli-args.js';
import { loadJohns } from '../testkit/face-verification.js';
import { REPO_ROOT, startServerProcess } from '../testkit/server-process.js';
import { post } from '../testkit/timed-post.js';
import { VGA_FACE_PHOTO, vgaJpeg } from '../testkit/vga-photos.js';
import { table } from '../testkit/table.js';
import { runAsProgram } from './entry.js';

const KEY = 'bench-admin-key-0123456789';
const DATA = path.join(REPO_ROOT, 'test', 'data');
/** Most requests the other client sends in one phase. */
const MAX_OTHER = 2000;

async function fillGallery(dir: string, samples: number): Promise<void> {
  const engine = await Engine.open({ workers: 1 });
  const { model, version } = engine.faceEmbedder()!;
  const made: { crop: Buffer; rect: string; embedding: Buffer }[] = [];
  for (const p of loadJohns(DATA).slice(0, 8)) {
    const r = await engine.embedFace(p.bytes, { keepCrop: true });
    if (r.crop && r.embedding)
      made.push({ crop: Buffer.from(r.crop.jpeg), rect: JSON.stringify(r.crop.rect), embedding: embeddingToBytes(r.embedding) });
  }
  await engine.close();
  await SqliteGalleryStore.open(dir).close();
  const db = new Database(path.join(dir, 'gallery.db'));
  const insert = db.prepare(
    'INSERT INTO samples (subject, created_at, model, model_version, embedding, crop, crop_rect) VALUES (?, ?, ?, ?, ?, ?, ?)',
  );
  db.transaction(() => {
    for (let i = 0; i < samples; i++) {
      const m = made[i % made.length]!;
      insert.run('crowd', Date.now(), model, version, m.embedding, m.crop, m.rect);
    }
  })();
  db.close();
}

function get(url: string, agent: https.Agent): Promise<{ ms: number; bytes: number; body: { next_after: number | null; samples: unknown[] } }> {
  const t0 = performance.now();
  return new Promise((resolve, reject) => {
    const req = https.get(url, { agent, rejectUnauthorized: false, timeout: 120_000, headers: { authorization: `Bearer ${KEY}` } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (d: Buffer) => chunks.push(d));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        if (res.statusCode !== 200) reject(new Error(`GET ${url}: HTTP ${res.statusCode} ${text.slice(0, 200)}`));
        else resolve({ ms: performance.now() - t0, bytes: text.length, body: JSON.parse(text) as { next_after: number | null; samples: unknown[] } });
      });
    });
    req.on('timeout', () => req.destroy(new Error('no answer in 120 s')));
    req.on('error', reject);
  });
}

const ms = (v: number) => v.toFixed(0);

/** The bench: `argv` holds its flags. */
export async function libraryPaging(argv: string[]): Promise<void> {
  const flags = numericFlags({ samples: 3000, limit: 50, walks: 5 }, argv);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'edgecv-library-bench-'));
  try {
    await fillGallery(dir, flags.samples);
    const serverArgs = ['--data-dir', dir, '--admin-key', KEY, '--workers', '1'];
    let server = await startServerProcess(serverArgs);
    const rss = () => Number(/VmRSS:\s+(\d+)/.exec(fs.readFileSync(`/proc/${server.child.pid}/status`, 'utf8'))?.[1] ?? 0) / 1024;
    try {
      const photo = { path: '/v1/vision/face/', body: vgaJpeg(REPO_ROOT, VGA_FACE_PHOTO), contentType: 'image/jpeg' };
      let agent = new https.Agent({ keepAlive: true, maxSockets: 4 });
      const warm = async () => {
        for (let i = 0; i < 10; i++) await post(server.url, agent, photo);
      };
      await warm();
      /** The other client, one request at a time until `stop()` (at most MAX_OTHER requests). */
      const other = (): { stop: () => Promise<number[]> } => {
        const times: number[] = [];
        let stopped = false;
        const loop = (async () => {
          while (!stopped && times.length < MAX_OTHER) times.push((await post(server.url, agent, photo)).ms);
        })();
        return { stop: async () => ((stopped = true), await loop, times.sort((a, b) => a - b)) };
      };
      const quietRun = other();
      await new Promise((r) => setTimeout(r, 5000));
      const quiet = await quietRun.stop();
      const rows: Record<string, string | number>[] = [
        {
          phase: 'quiet',
          pages: '-',
          'first page ms': '-',
          'page p50 ms': '-',
          'page max ms': '-',
          'answer max KB': '-',
          'server RSS MiB': ms(rss()),
          'other p50 ms': ms(median(quiet)),
          'other p99 ms': ms(percentile(quiet, 99)),
          'other n': quiet.length,
        },
      ];
      const phases = [
        ['first walk', 1],
        [`${flags.walks} more walks`, flags.walks],
        // The server restarted (its memory empty): what the qualities kept with the samples save.
        ['walk after a restart', 1],
      ] as const;
      for (const [phase, walks] of phases) {
        if (phase === 'walk after a restart') {
          agent.destroy();
          await server.stop();
          server = await startServerProcess(serverArgs);
          agent = new https.Agent({ keepAlive: true, maxSockets: 4 });
          await warm();
        }
        const during = other();
        const pages: number[] = [];
        let maxBytes = 0;
        for (let w = 0; w < walks; w++) {
          let listed = 0;
          let after = 0;
          for (let i = 0; i <= flags.samples; i++) {
            const r = await get(`${server.url}trainer/samples/?subject=crowd&limit=${flags.limit}&after=${after}`, agent);
            pages.push(r.ms);
            maxBytes = Math.max(maxBytes, r.bytes);
            listed += r.body.samples.length;
            if (r.body.next_after === null) break;
            after = r.body.next_after;
          }
          if (listed !== flags.samples) throw new Error(`listed ${listed} of ${flags.samples}`);
        }
        const times = await during.stop();
        const first = pages[0]!;
        pages.sort((a, b) => a - b);
        rows.push({
          phase,
          pages: pages.length,
          'first page ms': ms(first),
          'page p50 ms': ms(median(pages)),
          'page max ms': ms(pages.at(-1)!),
          'answer max KB': ms(maxBytes / 1024),
          'server RSS MiB': ms(rss()),
          'other p50 ms': ms(median(times)),
          'other p99 ms': ms(percentile(times, 99)),
          'other n': times.length,
        });
      }
      agent.destroy();
      table(`GET /trainer/samples/ of ${flags.samples} samples, pages of ${flags.limit}; the other client: 640x480 POST /v1/vision/face/`, rows);
    } finally {
      await server.stop();
    }
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

await runAsProgram(import.meta.url, libraryPaging);
