// The checks every gallery row passes before it is written, indexed or taken from another server: an embedding
// the index can use (the model's dimension, finite values, a direction), a subject name, a sample id. The same
// checks run at import (before anything is written), at load (a row that fails is quarantined, not fatal) and on
// the fleet's change channel (a message that fails is skipped).

import type { SampleQuality } from './sample-quality.js';

/** Why `v` cannot be indexed as an embedding of `dim` values; null when it can. */
export function embeddingProblem(v: Float32Array, dim?: number): string | null {
  if (dim !== undefined && v.length !== dim) return `the embedding has ${v.length} values, the model makes ${dim}`;
  if (v.length === 0) return 'the embedding is empty';
  let sum = 0;
  for (let i = 0; i < v.length; i++) {
    const x = v[i]!;
    if (!Number.isFinite(x)) return `the embedding holds a non-finite value (${x} at ${i})`;
    sum += x * x;
  }
  // The index L2-normalizes every row: a zero vector (or one whose norm underflows or overflows) has no direction.
  const norm = Math.sqrt(sum);
  if (!(norm > 0) || !Number.isFinite(norm)) return 'the embedding is a zero vector (no direction)';
  return null;
}

/** A JSON object (not null, not an array). */
export const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * A stored quality (JSON-decoded): null when the crop had none; undefined when absent or not a quality (not measured
 * yet, or damaged: then it is measured again).
 */
export function storedQuality(v: unknown): SampleQuality | null | undefined {
  if (v === null) return null;
  if (!isRecord(v) || typeof v['faceSide'] !== 'number' || typeof v['sharpness'] !== 'number') return undefined;
  return Number.isFinite(v['faceSide']) && Number.isFinite(v['sharpness']) ? { faceSide: v['faceSide'], sharpness: v['sharpness'] } : undefined;
}

/** Sample ids: positive safe integers (both stores count from 1). */
export function isSampleId(value: unknown): value is number {
  return typeof value === 'number' && Number.isSafeInteger(value) && value > 0;
}

const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

/**
 * Strict base64 (the standard alphabet, padded, as export writes it). Node's decoder skips any character it does
 * not know, so "AAA" or "a*b" would decode to something; here they are refused. Returns null when malformed.
 */
export function strictBase64(text: string): Buffer | null {
  if (text.length % 4 !== 0 || !BASE64.test(text)) return null;
  return Buffer.from(text, 'base64');
}

/** A float32 little-endian embedding from strict base64; null when the text is not one. */
export function embeddingFromBase64(text: string): Float32Array | null {
  const bytes = strictBase64(text);
  if (bytes === null || bytes.length % 4 !== 0) return null;
  const out = new Float32Array(bytes.length / 4);
  for (let i = 0; i < out.length; i++) out[i] = bytes.readFloatLE(i * 4);
  return out;
}
