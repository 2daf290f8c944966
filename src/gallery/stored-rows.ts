// The stored rows as the recognition service loads them: which can go into the index, which were made by another
// model (re-embedded from their crops), which cannot be searched (quarantined, and how the log names them).

import type { FaceEmbedderInfo } from '../engine/face-embedding.js';
import { embeddingProblem, isSampleId } from './sample-check.js';
import type { QuarantinedSample, SampleVector } from './types.js';

/** Quarantined rows named one by one in the log (the count is always given). */
const QUARANTINE_LOG_ROWS = 10;

/** Why a vector of the current model cannot go into the index; null when it can. */
export function vectorProblem(s: SampleVector, dim: number): string | null {
  if (!isSampleId(s.id)) return 'the id is not a positive integer';
  if (typeof s.subject !== 'string' || s.subject === '') return 'no subject';
  return embeddingProblem(s.embedding, dim);
}

/** The store's rows split: the current model's good ones, other models' ids (stale), and the unusable. */
export function sortStoredRows(
  vectors: readonly SampleVector[],
  unreadable: readonly QuarantinedSample[],
  embedder: FaceEmbedderInfo,
): { current: SampleVector[]; stale: Set<number>; bad: QuarantinedSample[] } {
  const bad: QuarantinedSample[] = [...unreadable];
  const current: SampleVector[] = [];
  const stale = new Set<number>();
  for (const v of vectors) {
    if (v.model !== embedder.model || v.modelVersion !== embedder.version) {
      stale.add(v.id); // re-embedded from its crop: its stored vector does not matter
      continue;
    }
    const problem = vectorProblem(v, embedder.dim);
    if (problem === null) current.push(v);
    else bad.push({ id: v.id, subject: v.subject, reason: problem });
  }
  return { current, stale, bad };
}

/** The log line for rows just quarantined (`total`: how many are now). */
export function quarantineMessage(rows: readonly QuarantinedSample[], where: string, total: number): string {
  const named = rows
    .slice(0, QUARANTINE_LOG_ROWS)
    .map((r) => `id ${r.id}${r.subject === null ? '' : ` (${JSON.stringify(r.subject)})`}: ${r.reason}`);
  const more = rows.length > QUARANTINE_LOG_ROWS ? `; and ${rows.length - QUARANTINE_LOG_ROWS} more` : '';
  return `gallery: ${rows.length} ${where} quarantined, left out of the index (${total} in all; remove with POST /trainer/remove/ subject and id): ${named.join('; ')}${more}`;
}
