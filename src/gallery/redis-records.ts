// The Redis gallery store's sample records (the `samples` hash: id -> JSON), written and read back with checks.

import { embeddingFromBase64, isRecord, isSampleId } from './sample-check.js';
import { embeddingToBytes, type NewSample, type QuarantinedSample, type Rect, type SampleVector } from './types.js';

export interface SampleRecord {
  subject: string;
  createdAt: number;
  model: string;
  modelVersion: string;
  embedding: string;
  cropRect: Rect | null;
}

export function record(s: NewSample): SampleRecord {
  return {
    subject: s.subject,
    createdAt: s.createdAt,
    model: s.model,
    modelVersion: s.modelVersion,
    embedding: embeddingToBytes(s.embedding).toString('base64'),
    cropRect: s.cropRect,
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
  return { subject: r['subject'], createdAt, model: r['model'], modelVersion: r['modelVersion'], embedding: r['embedding'], cropRect };
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
