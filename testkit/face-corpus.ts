// Real embeddings for gallery-scale tests and benches: every face of the project's test photos (dlib's johns crops,
// dlib's faces group photos, skimage's astronaut) embedded by the real engine several times, each time from an
// augmented copy made in JS on the decoded pixels (crop jitter, horizontal flip, brightness), plus distractor
// embeddings drawn to match the real ones' statistics (per-dimension mean and spread, then L2-normalized).
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import jpeg from 'jpeg-js';
import type { Engine } from '../src/index.js';
import { decode, type Rgba } from './vga-photos.js';

export interface RealFace {
  /** Photo file and face number: one physical face. */
  face: string;
  /** Augmentation number (0 = the plain crop). */
  variant: number;
  embedding: Float32Array;
}

/** Deterministic xorshift32 in [0, 1). */
export function random(seed: number): () => number {
  let x = (seed * 2654435761) >>> 0 || 1;
  return () => {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    return (x >>> 0) / 0x100000000;
  };
}

/** The test photos with faces, relative to test/data. */
export function facePhotos(dataDir: string): string[] {
  const johns = join(dataDir, 'dlib', 'johns');
  const out: string[] = [];
  for (const who of readdirSync(johns).sort()) {
    for (const f of readdirSync(join(johns, who))
      .filter((n) => /\.jpe?g$/i.test(n))
      .sort())
      out.push(join('dlib', 'johns', who, f));
  }
  for (const f of readdirSync(join(dataDir, 'dlib', 'faces'))
    .filter((n) => /\.jpe?g$/i.test(n) && !n.startsWith('dogs'))
    .sort()) {
    out.push(join('dlib', 'faces', f));
  }
  out.push(join('skimage', 'astronaut.png'));
  return out;
}

type Rect = [number, number, number, number];

/**
 * A JPEG of the region around `rect` (the face box grown 1x each side, shifted and scaled by up to 8%, clipped to
 * the image), optionally mirrored and brightened, and the face box inside it.
 */
function augmented(src: Rgba, rect: Rect, rnd: () => number, flip: boolean): { jpeg: Buffer; rect: Rect } {
  const [l, t, r, b] = rect;
  const w = r - l;
  const h = b - t;
  const scale = 0.92 + 0.16 * rnd();
  const cx = (l + r) / 2 + (rnd() - 0.5) * 0.16 * w;
  const cy = (t + b) / 2 + (rnd() - 0.5) * 0.16 * h;
  const x0 = Math.max(0, Math.floor(cx - 1.5 * w * scale));
  const y0 = Math.max(0, Math.floor(cy - 1.5 * h * scale));
  const x1 = Math.min(src.width, Math.ceil(cx + 1.5 * w * scale));
  const y1 = Math.min(src.height, Math.ceil(cy + 1.5 * h * scale));
  const cw = x1 - x0;
  const ch = y1 - y0;
  const gain = 0.75 + 0.5 * rnd();
  const data = Buffer.alloc(cw * ch * 4);
  for (let y = 0; y < ch; y++) {
    for (let x = 0; x < cw; x++) {
      const sx = x0 + (flip ? cw - 1 - x : x);
      const s = ((y0 + y) * src.width + sx) * 4;
      const d = (y * cw + x) * 4;
      for (let c = 0; c < 3; c++) data[d + c] = Math.min(255, Math.round(src.data[s + c]! * gain));
      data[d + 3] = 255;
    }
  }
  const fl = l - x0;
  const fr = r - x0;
  const inner: Rect = flip ? [cw - fr, t - y0, cw - fl, b - y0] : [fl, t - y0, fr, b - y0];
  return { jpeg: Buffer.from(jpeg.encode({ width: cw, height: ch, data }, 92).data), rect: inner };
}

/**
 * Every face of the test photos, `variants` times each (variant 0: plain crop; odd variants mirrored; all jittered
 * and brightened but the first). `limit` caps the number of faces (tests keep it small).
 */
export async function embedRealFaces(engine: Engine, dataDir: string, variants: number, limit = Infinity): Promise<RealFace[]> {
  const out: RealFace[] = [];
  let faces = 0;
  for (const file of facePhotos(dataDir)) {
    if (faces >= limit) break;
    const src = decode(join(dataDir, file));
    const bytes = Buffer.from(jpeg.encode({ width: src.width, height: src.height, data: src.data }, 95).data);
    const found = (await engine.embedFace(bytes)).faces;
    for (const [n, f] of found.entries()) {
      if (faces >= limit) break;
      if (f.rect[2] - f.rect[0] < 24) continue; // too small to be a useful enrolment
      faces++;
      const rnd = random(faces * 7919);
      for (let v = 0; v < variants; v++) {
        const crop = v === 0 ? augmented(src, f.rect, () => 0.5, false) : augmented(src, f.rect, rnd, v % 2 === 1);
        const r = await engine.embedFace(crop.jpeg, { rect: crop.rect });
        if (r.embedding) out.push({ face: `${file}#${n}`, variant: v, embedding: r.embedding });
      }
    }
  }
  return out;
}

/** Per-dimension mean and standard deviation of `vectors`. */
export function statistics(vectors: Float32Array[]): { mean: Float32Array; std: Float32Array } {
  const dim = vectors[0]!.length;
  const mean = new Float32Array(dim);
  const std = new Float32Array(dim);
  for (const v of vectors) for (let i = 0; i < dim; i++) mean[i]! += v[i]! / vectors.length;
  for (const v of vectors) for (let i = 0; i < dim; i++) std[i]! += (v[i]! - mean[i]!) ** 2 / vectors.length;
  for (let i = 0; i < dim; i++) std[i] = Math.sqrt(std[i]!);
  return { mean, std };
}

/** `count` distractors (rows of one matrix): mean + std * N(0, 1) per dimension, L2-normalized. */
export function distractors(stats: { mean: Float32Array; std: Float32Array }, count: number, seed: number): Float32Array {
  const dim = stats.mean.length;
  const out = new Float32Array(count * dim);
  const rnd = random(seed);
  for (let r = 0; r < count; r++) {
    let sum = 0;
    for (let i = 0; i < dim; i++) {
      // Box-Muller: a standard normal from two uniforms.
      const g = Math.sqrt(-2 * Math.log(1 - rnd())) * Math.cos(2 * Math.PI * rnd());
      const v = stats.mean[i]! + stats.std[i]! * g;
      out[r * dim + i] = v;
      sum += v * v;
    }
    const n = Math.sqrt(sum);
    for (let i = 0; i < dim; i++) out[r * dim + i]! /= n;
  }
  return out;
}
