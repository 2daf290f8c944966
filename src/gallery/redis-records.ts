// The Redis gallery store's sample records (the `samples` hash: id -> JSON), written and read back with checks.

import { createHash } from 'node:crypto';
import { embeddingFromBase64, isRecord, isSampleId, storedQuality } from './sample-check.js';
import type { SampleQuality } from './sample-quality.js';
import {
  embeddingToBytes,
  type MeasuredQuality,
  type NewSample,
  type QuarantinedSample,
  type Rect,
  type SampleVector,
  type StoredSample,
} from './types.js';

export interface SampleRecord {
  subject: string;
  createdAt: number;
  model: string;
  modelVersion: string;
  embedding: string;
  cropRect: Rect | null;
  /** The crop's quality; absent: not measured yet (a record an older edgecv wrote). */
  quality?: SampleQuality | null;
}

export function record(s: NewSample): SampleRecord {
  return {
    subject: s.subject,
    createdAt: s.createdAt,
    model: s.model,
    modelVersion: s.modelVersion,
    embedding: embeddingToBytes(s.embedding).toString('base64'),
    cropRect: s.cropRect,
    ...(s.quality === undefined ? {} : { quality: s.quality }),
  };
}

/** A stored record, checked; a string says why it cannot be read. */
export function parseRecord(text: string): SampleRecord | string {
  let r: unknown;
  try {
    r = JSON.parse(text);
  } catch {
    return 'the record is not JSON';
  }
  if (!isRecord(r)) return 'the record is not a JSON object';
  if (typeof r['subject'] !== 'string' || r['subject'] === '') return 'the record has no subject';
  if (typeof r['embedding'] !== 'string') return 'the record has no embedding';
  if (typeof r['model'] !== 'string' || typeof r['modelVersion'] !== 'string') return 'the record has no model or model version';
  const rect = r['cropRect'];
  const cropRect = Array.isArray(rect) && rect.length === 4 && rect.every(Number.isInteger) ? (rect as Rect) : null;
  const createdAt = typeof r['createdAt'] === 'number' && Number.isFinite(r['createdAt']) ? r['createdAt'] : 0;
  const quality = storedQuality(r['quality']);
  return {
    subject: r['subject'],
    createdAt,
    model: r['model'],
    modelVersion: r['modelVersion'],
    embedding: r['embedding'],
    cropRect,
    ...(quality === undefined ? {} : { quality }),
  };
}

/** A readable record's sample with its crop and quality. */
export function withCrop(v: SampleVector, text: string, crop: Buffer | null): StoredSample {
  const { cropRect, quality } = parseRecord(text) as SampleRecord;
  return { ...v, crop, cropRect, ...(quality === undefined ? {} : { quality }) };
}

/**
 * The record `text` with `quality` set, every other field kept as it is (a newer edgecv's too); null when it
 * cannot be read or already has a quality.
 */
export function withQuality(text: string, quality: SampleQuality | null): string | null {
  const r = parseRecord(text);
  if (typeof r === 'string' || r.quality !== undefined) return null;
  return JSON.stringify({ ...(JSON.parse(text) as Record<string, unknown>), quality });
}

/** A stored row as a vector, or why it is quarantined. */
export function decodeRow(idText: string, text: string): SampleVector | QuarantinedSample {
  const id = Number(idText);
  if (!isSampleId(id))
    return { id: Number.isFinite(id) ? id : -1, subject: null, reason: `the key ${JSON.stringify(idText.slice(0, 40))} is not a sample id` };
  const r = parseRecord(text);
  if (typeof r === 'string') return { id, subject: null, reason: r };
  const embedding = embeddingFromBase64(r.embedding);
  if (embedding === null) return { id, subject: r.subject, reason: 'the embedding is not base64 float32' };
  return { id, subject: r.subject, createdAt: r.createdAt, model: r.model, modelVersion: r.modelVersion, embedding };
}

/**
 * QUALITY_SCRIPT's arguments (redis-scripts.ts) for measured qualities, given the records as read now (null: gone):
 * the records without a quality yet, each with the SHA-1 it was read with.
 */
export function qualityWrites(qualities: MeasuredQuality[], current: (string | null)[]): string[] {
  return qualities.flatMap(({ id, quality }, i) => {
    const text = current[i];
    const next = text == null ? null : withQuality(text, quality);
    return next === null ? [] : [String(id), createHash('sha1').update(text!).digest('hex'), next];
  });
}
