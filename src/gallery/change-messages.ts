// The fleet's change channel (edgecv:gallery:changes): what a message is, and the check every message passes
// before a server applies it. A message that fails is skipped (and the server resyncs from Redis, see
// redis-store.ts): a broken peer, an older or newer edgecv, or anyone who can publish to Redis must not be able to
// take a server down with it.
//
//   {origin, write, op: 'add', samples: [{id, subject, createdAt, model, modelVersion, embedding}]}
//   {origin, write, op: 'remove', ids}
//   {origin, write, op: 'resync'}

import { checkSubject } from './jsonl.js';
import { embeddingFromBase64, isRecord, isSampleId } from './sample-check.js';
import type { SampleVector } from './types.js';

export const CHANGE_CHANNEL = 'edgecv:gallery:changes';

/** The largest 'add' this store publishes; more samples go as a 'resync'. */
export const MAX_ADD_MESSAGE = 64;

export interface WireVector {
  id: number;
  subject: string;
  createdAt: number;
  model: string;
  modelVersion: string;
  embedding: string;
}

/** `write` names the transaction: a server that timed out waiting for its own write knows it when it comes. */
export type ChangeMessage = { origin: string; write?: string } & (
  { op: 'add'; samples: WireVector[] } | { op: 'remove'; ids: number[] } | { op: 'resync' }
);

/** A checked change message: the vectors decoded. */
export type ChangeOf =
  | { origin: string; write: string | null; op: 'add'; samples: SampleVector[] }
  | { origin: string; write: string | null; op: 'remove'; ids: number[] }
  | { origin: string; write: string | null; op: 'resync' };

/**
 * Enrolment's rules for subject names (checkSubject): a message breaking them did not come from a server. Those
 * for existing names: an older edgecv in the fleet took C1 characters and lone surrogates.
 */
function subjectProblem(subject: string): string | null {
  try {
    checkSubject(subject, 'existing');
    return null;
  } catch (e) {
    return (e as Error).message;
  }
}

/** A sample of an 'add' message, or why it is not one. The embedding's dimension is the service's to check. */
function wireVector(v: unknown): SampleVector | string {
  if (!isRecord(v)) return 'a sample is not an object';
  const { id, subject, createdAt, model, modelVersion, embedding } = v;
  if (!isSampleId(id)) return 'a sample id is not a positive integer';
  if (typeof subject !== 'string' || subjectProblem(subject) !== null)
    return `sample ${id}: ${typeof subject === 'string' ? subjectProblem(subject) : 'no subject'}`;
  if (typeof createdAt !== 'number' || !Number.isFinite(createdAt)) return `sample ${id}: 'createdAt' is not a number`;
  if (typeof model !== 'string' || typeof modelVersion !== 'string') return `sample ${id}: no model or model version`;
  if (typeof embedding !== 'string') return `sample ${id}: no embedding`;
  const vector = embeddingFromBase64(embedding);
  if (vector === null) return `sample ${id}: the embedding is not base64 float32`;
  return { id, subject, createdAt, model, modelVersion, embedding: vector };
}

/** Checks one message of the change channel; a string says why it is malformed. */
export function parseChangeMessage(text: string): ChangeOf | string {
  let m: unknown;
  try {
    m = JSON.parse(text);
  } catch {
    return 'not JSON';
  }
  if (!isRecord(m)) return 'not a JSON object';
  const { origin, write, op } = m;
  if (typeof origin !== 'string' || origin.length === 0) return "no 'origin'";
  if (write !== undefined && typeof write !== 'string') return "'write' is not a string";
  const head = { origin, write: typeof write === 'string' ? write : null };
  if (op === 'resync') return { ...head, op };
  if (op === 'remove') {
    const ids = m['ids'];
    if (!Array.isArray(ids) || !ids.every(isSampleId)) return "'ids' is not a list of sample ids";
    return { ...head, op, ids: ids as number[] };
  }
  if (op === 'add') {
    const list = m['samples'];
    if (!Array.isArray(list) || list.length === 0 || list.length > MAX_ADD_MESSAGE)
      return `'samples' is not a list of 1 to ${MAX_ADD_MESSAGE} samples`;
    const samples: SampleVector[] = [];
    for (const item of list) {
      const v = wireVector(item);
      if (typeof v === 'string') return v;
      samples.push(v);
    }
    return { ...head, op, samples };
  }
  return `unknown op ${JSON.stringify(op)?.slice(0, 40)}`;
}
