// Recognition benchmarks: gallery search time at 1,000 / 10,000 / 100,000 enrolled embeddings (one matrix
// product in C++ on a worker), and recognition latency per face (decode, detect, embed, search).
// Part of `npm run bench`; alone: node dist/bench/recognition-bench.js [--quick]
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Engine, type GalleryIndex } from '../src/index.js';

type Row = Record<string, string | number>;

function p(sorted: number[], q: number): number {
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((q / 100) * sorted.length) - 1))]!;
}

function summary(samples: number[]): { p50: number; p99: number } {
  const s = [...samples].sort((a, b) => a - b);
  return { p50: p(s, 50), p99: p(s, 99) };
}

/** Deterministic pseudo-random unit vectors, filled in place. */
function fillUnit(out: Float32Array, dim: number, seed: number): void {
  let x = (seed * 2654435761) >>> 0 || 1;
  for (let r = 0; r < out.length / dim; r++) {
    let sum = 0;
    for (let i = 0; i < dim; i++) {
      x ^= x << 13;
      x ^= x >>> 17;
      x ^= x << 5;
      const v = ((x >>> 0) / 0xffffffff) - 0.5;
      out[r * dim + i] = v;
      sum += v * v;
    }
    const n = Math.sqrt(sum);
    for (let i = 0; i < dim; i++) out[r * dim + i]! /= n;
  }
}

/** Adds `count` random entries in chunks (keeps the peak memory of one batch small). */
function fillGallery(gallery: GalleryIndex, from: number, count: number): void {
  const dim = gallery.dim;
  const chunk = 5000;
  for (let start = 0; start < count; start += chunk) {
    const n = Math.min(chunk, count - start);
    const vectors = new Float32Array(n * dim);
    fillUnit(vectors, dim, from + start + 1);
    gallery.add(Array.from({ length: n }, (_, i) => ({ id: from + start + i + 1, subject: `person-${(from + start + i) % 5000}`, embedding: vectors.subarray(i * dim, (i + 1) * dim) })));
  }
}

export async function benchGallerySearch(quick: boolean): Promise<Row[]> {
  const engine = await Engine.open({ workers: 1, threadsPerWorker: 1 });
  const gallery = engine.createGallery();
  const rows: Row[] = [];
  const query = new Float32Array(gallery.dim);
  fillUnit(query, gallery.dim, 999_999_937);
  let size = 0;
  for (const target of [1_000, 10_000, 100_000]) {
    fillGallery(gallery, size, target - size);
    size = target;
    const n = quick ? 10 : target >= 100_000 ? 30 : 100;
    for (let i = 0; i < 3; i++) await engine.searchGallery(gallery, query);
    const inWorker: number[] = [];
    const roundTrip: number[] = [];
    for (let i = 0; i < n; i++) {
      const t = performance.now();
      const r = await engine.searchGallery(gallery, query);
      roundTrip.push(performance.now() - t);
      inWorker.push(r.searchMs);
    }
    const w = summary(inWorker);
    const rt = summary(roundTrip);
    rows.push({
      embeddings: target,
      'matrix MB': (target * gallery.dim * 4) / 1e6,
      'search p50 ms': w.p50,
      'search p99 ms': w.p99,
      'call p50 ms': rt.p50,
      'embeddings/ms': target / w.p50,
    });
  }
  await engine.close();
  return rows;
}

export async function benchRecognition(root: string, quick: boolean): Promise<Row[]> {
  const iterations = quick ? 8 : 40;
  const engine = await Engine.open({ workers: 1, threadsPerWorker: 1 });
  const gallery = engine.createGallery();
  fillGallery(gallery, 0, 1000);
  const rows: Row[] = [];
  const images = [
    { name: 'face crop 150x150 JPEG (johns; found in the second, padded pass)', file: 'dlib/johns/John_Simm/000306_00470222.jpg' },
    { name: 'portrait 512x512 PNG (astronaut.png)', file: 'skimage/astronaut.png' },
    { name: 'group 500x375 JPEG, 3 faces (first = best score)', file: 'dlib/faces/2008_002506.jpg' },
  ];
  for (const img of images) {
    const bytes = readFileSync(join(root, 'test', 'data', img.file));
    for (let i = 0; i < 3; i++) await engine.recognizeFace(bytes, gallery);
    const total: number[] = [];
    const parts = { decodeMs: [] as number[], detectMs: [] as number[], embedMs: [] as number[], searchMs: [] as number[] };
    for (let i = 0; i < iterations; i++) {
      const t = performance.now();
      const r = await engine.recognizeFace(bytes, gallery);
      total.push(performance.now() - t);
      parts.decodeMs.push(r.timings.decodeMs);
      parts.detectMs.push(r.timings.detectMs);
      parts.embedMs.push(r.timings.embedPreprocessMs + r.timings.embedInferenceMs);
      parts.searchMs.push(r.timings.searchMs);
    }
    const t = summary(total);
    rows.push({
      image: img.name,
      'p50 ms': t.p50,
      'p99 ms': t.p99,
      'decode p50': summary(parts.decodeMs).p50,
      'detect p50': summary(parts.detectMs).p50,
      'embed p50': summary(parts.embedMs).p50,
      'search p50 (1,000)': summary(parts.searchMs).p50,
    });
  }
  await engine.close();
  return rows;
}

function print(title: string, rows: Row[]): void {
  console.log(`\n## ${title}`);
  if (!rows.length) return;
  const cols = Object.keys(rows[0]!);
  const cell = (v: string | number) => (typeof v === 'number' ? (Number.isInteger(v) ? String(v) : v.toFixed(2)) : v);
  console.log(`| ${cols.join(' | ')} |`);
  console.log(`| ${cols.map(() => '---').join(' | ')} |`);
  for (const r of rows) console.log(`| ${cols.map((c) => cell(r[c]!)).join(' | ')} |`);
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const root = join(fileURLToPath(import.meta.url), '..', '..', '..');
  const quick = process.argv.includes('--quick');
  print('Recognition per face (1 worker x 1 thread, gallery of 1,000)', await benchRecognition(root, quick));
  print('Gallery search, 1024-d embeddings (1 worker x 1 thread)', await benchGallerySearch(quick));
}
