// Face verification on identity-labelled photos: embeds every photo, scores every pair (genuine = same person,
// impostor = different people) and finds the equal-error-rate threshold. Used by the calibration script, the
// benchmark and the recognition tests.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { EmbedFaceOptions, Engine } from '../src/index.js';

export interface LabelledPhoto {
  subject: string;
  file: string;
  bytes: Buffer;
}

/** dlib's examples/johns: one folder per person, each with face photos. Sorted, so the order is stable. */
export function loadJohns(dataDir: string): LabelledPhoto[] {
  const root = join(dataDir, 'dlib', 'johns');
  const out: LabelledPhoto[] = [];
  for (const subject of readdirSync(root).sort()) {
    for (const name of readdirSync(join(root, subject))
      .filter((f) => /\.jpe?g$/i.test(f))
      .sort()) {
      const file = join(root, subject, name);
      out.push({ subject, file, bytes: readFileSync(file) });
    }
  }
  return out;
}

export interface EmbeddedPhoto extends LabelledPhoto {
  embedding: Float32Array;
}

/** Embeds each photo's first face; photos without a face are returned in `missed`. */
export async function embedAll(
  engine: Engine,
  photos: LabelledPhoto[],
  opts: EmbedFaceOptions = {},
): Promise<{ embedded: EmbeddedPhoto[]; missed: LabelledPhoto[] }> {
  const results = await Promise.all(photos.map((p) => engine.embedFace(p.bytes, opts)));
  const embedded: EmbeddedPhoto[] = [];
  const missed: LabelledPhoto[] = [];
  results.forEach((r, i) => {
    if (r.embedding) embedded.push({ ...photos[i]!, embedding: r.embedding });
    else missed.push(photos[i]!);
  });
  return { embedded, missed };
}

export function cosine(a: Float32Array, b: Float32Array): number {
  let s = 0;
  for (let i = 0; i < a.length; i++) s += a[i]! * b[i]!;
  return s;
}

/** Cosine distance (1 - cosine) of every unordered pair, split by whether the two are the same person. */
export function pairDistances(photos: EmbeddedPhoto[]): { genuine: number[]; impostor: number[] } {
  const genuine: number[] = [];
  const impostor: number[] = [];
  for (let i = 0; i < photos.length; i++) {
    for (let j = i + 1; j < photos.length; j++) {
      const d = 1 - cosine(photos[i]!.embedding, photos[j]!.embedding);
      (photos[i]!.subject === photos[j]!.subject ? genuine : impostor).push(d);
    }
  }
  return { genuine, impostor };
}

/** Share of genuine pairs above t (rejected) and of impostor pairs at or below t (accepted). */
export function errorRates(genuine: number[], impostor: number[], t: number): { frr: number; far: number } {
  return {
    frr: genuine.filter((d) => d > t).length / genuine.length,
    far: impostor.filter((d) => d <= t).length / impostor.length,
  };
}

/**
 * The equal error rate: the threshold where the false-reject and false-accept rates cross. Every observed
 * distance is a candidate; between the two candidates that bracket the crossing the rates are interpolated.
 */
export function equalErrorRate(genuine: number[], impostor: number[]): { eer: number; threshold: number } {
  const candidates = [...new Set([...genuine, ...impostor])].sort((a, b) => a - b);
  let best = { gap: Infinity, eer: 1, threshold: 0 };
  let prev: { t: number; frr: number; far: number } | undefined;
  for (const t of candidates) {
    const { frr, far } = errorRates(genuine, impostor, t);
    if (prev && prev.frr - prev.far > 0 && frr - far <= 0) {
      // The crossing lies between prev.t and t: interpolate both rates linearly to where they meet.
      const a = prev.frr - prev.far;
      const w = a / (a - (frr - far));
      return { eer: prev.frr + w * (frr - prev.frr), threshold: prev.t + w * (t - prev.t) };
    }
    const gap = Math.abs(frr - far);
    if (gap < best.gap) best = { gap, eer: (frr + far) / 2, threshold: t };
    prev = { t, frr, far };
  }
  return { eer: best.eer, threshold: best.threshold };
}

export interface VerificationReport {
  photos: number;
  missed: string[];
  genuinePairs: number;
  impostorPairs: number;
  /** Cosine distances. */
  genuine: number[];
  impostor: number[];
  eer: number;
  /** Cosine distance at the EER. */
  eerThreshold: number;
}

export async function verificationReport(engine: Engine, photos: LabelledPhoto[], opts: EmbedFaceOptions = {}): Promise<VerificationReport> {
  const { embedded, missed } = await embedAll(engine, photos, opts);
  const { genuine, impostor } = pairDistances(embedded);
  const { eer, threshold } = equalErrorRate(genuine, impostor);
  return {
    photos: photos.length,
    missed: missed.map((m) => m.file),
    genuinePairs: genuine.length,
    impostorPairs: impostor.length,
    genuine,
    impostor,
    eer,
    eerThreshold: threshold,
  };
}
