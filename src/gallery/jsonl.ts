// Bulk import/export format: JSON lines (application/x-ndjson), one sample per line.
//
// Export writes every stored sample:
//   {"id":12,"subject":"alice","created":"2026-11-22T10:00:00.000Z","model":"faceres","model_version":"…",
//    "embedding":"<base64 float32 little-endian>","crop":"<base64 JPEG>|null","crop_rect":[l,t,r,b]|null,
//    "quality":{"face_side":96,"sharpness":212.4}|null}   (quality: absent when not measured yet)
// Import takes those lines back (ids are not kept: the store assigns new ones; the embedding is used as is when
// model and model_version match this server's, and recomputed from the crop otherwise; the quality is kept with a
// crop kept as sent, and measured otherwise: import-item.ts), or, to enrol from photos,
//   {"subject":"alice","image":"<base64 PNG or JPEG with exactly one face>"}
// Blank lines are skipped. An embedding must be strict base64 of float32 values, finite and not all zero (the
// service checks its length against the model); one bad line refuses the whole import, before anything is stored.

import { decodeBase64 } from '../base64.js';
import { embeddingFromBase64, embeddingProblem } from './sample-check.js';
import type { SampleQuality } from './sample-quality.js';
import { embeddingToBytes, type Rect, type StoredSample } from './types.js';

export const JSONL_MEDIA_TYPE = 'application/x-ndjson';

export type ImportItem =
  | { line: number; subject: string; image: Buffer }
  | {
      line: number;
      subject: string;
      createdAt: number | null;
      model: string | null;
      modelVersion: string | null;
      embedding: Float32Array | null;
      crop: Buffer | null;
      cropRect: Rect | null;
      /** The crop's quality as exported; undefined when the line has none (measured at import). */
      quality: SampleQuality | null | undefined;
    };

export class ImportError extends Error {
  override name = 'ImportError';
  constructor(
    readonly line: number,
    message: string,
  ) {
    super(`line ${line}: ${message}`);
  }
}

export function exportLine(s: StoredSample): string {
  return JSON.stringify({
    id: s.id,
    subject: s.subject,
    created: new Date(s.createdAt).toISOString(),
    model: s.model,
    model_version: s.modelVersion,
    embedding: embeddingToBytes(s.embedding).toString('base64'),
    crop: s.crop ? s.crop.toString('base64') : null,
    crop_rect: s.cropRect,
    ...(s.quality === undefined ? {} : { quality: s.quality && { face_side: s.quality.faceSide, sharpness: s.quality.sharpness } }),
  });
}

/**
 * A line's `quality`, as export writes it; undefined when absent, or when its face side is not the crop box's
 * shorter side (what it measures: it was measured on another box, so it is measured again). A quality needs a crop.
 */
function importQuality(value: unknown, cropRect: Rect | null, line: number): SampleQuality | null | undefined {
  if (value === undefined) return undefined;
  if (value === null) return null;
  const q = typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : {};
  const [faceSide, sharpness] = [q['face_side'], q['sharpness']];
  if (typeof faceSide !== 'number' || typeof sharpness !== 'number' || !Number.isFinite(sharpness) || sharpness < 0)
    throw new ImportError(line, "'quality' must be {face_side, sharpness} (numbers, as export writes it) or null");
  if (cropRect === null) throw new ImportError(line, "'quality' needs 'crop' and 'crop_rect'");
  const side = Math.min(cropRect[2] - cropRect[0], cropRect[3] - cropRect[1]);
  return faceSide === side ? { faceSide, sharpness } : undefined;
}

/**
 * Which name rules apply: 'new' for a name being given to a sample (enrolment, import, a move's target); 'existing'
 * for one that only looks a subject up (remove, the library, a move's source, a peer's broadcast), so that a name
 * stored before the C1 and lone-surrogate rules came can still be listed, moved away from and removed.
 */
export type SubjectRules = 'new' | 'existing';

/**
 * Subject names: 1 to 128 characters, no control characters (C0, DEL, and for new names C1: U+0080-U+009F), no
 * lone surrogate (new names: SQLite and Redis store U+FFFD for one, so the name would change at the next start),
 * no leading or trailing spaces.
 */
export function checkSubject(value: unknown, rules: SubjectRules = 'new'): string {
  if (typeof value !== 'string' || value.length === 0) throw new Error("'subject' is missing or empty");
  if (value.length > 128) throw new Error("'subject' is longer than 128 characters");
  // eslint-disable-next-line no-control-regex
  if (/[\u0000-\u001f\u007f]/.test(value)) throw new Error("'subject' contains control characters");
  if (rules === 'new') {
    if (/[\u0080-\u009f]/.test(value)) throw new Error("'subject' contains control characters (U+0080-U+009F)");
    if (/\p{Cs}/u.test(value)) throw new Error("'subject' contains a lone UTF-16 surrogate (not a character)");
  }
  if (value.trim() !== value) throw new Error("'subject' has leading or trailing spaces");
  return value;
}

function optionalString(o: Record<string, unknown>, key: string, line: number): string | null {
  const v = o[key];
  if (v === undefined || v === null) return null;
  if (typeof v !== 'string') throw new ImportError(line, `'${key}' must be a string`);
  return v;
}

function base64Bytes(text: string, what: string, line: number): Buffer {
  try {
    return decodeBase64(text, what);
  } catch (e) {
    throw new ImportError(line, (e as Error).message);
  }
}

/** Parses a whole JSON-lines body; throws ImportError naming the first bad line. */
export function parseImport(text: string): ImportItem[] {
  const items: ImportItem[] = [];
  text.split('\n').forEach((raw, index) => {
    const line = index + 1;
    const trimmed = raw.trim();
    if (trimmed === '') return;
    let o: unknown;
    try {
      o = JSON.parse(trimmed);
    } catch {
      throw new ImportError(line, 'not valid JSON');
    }
    if (typeof o !== 'object' || o === null || Array.isArray(o)) throw new ImportError(line, 'must be a JSON object');
    const rec = o as Record<string, unknown>;
    let subject: string;
    try {
      subject = checkSubject(rec['subject']);
    } catch (e) {
      throw new ImportError(line, (e as Error).message);
    }
    const image = optionalString(rec, 'image', line);
    if (image !== null) {
      items.push({ line, subject, image: base64Bytes(image, "'image'", line) });
      return;
    }
    const crop = optionalString(rec, 'crop', line);
    const embedding = optionalString(rec, 'embedding', line);
    if (crop === null && embedding === null) throw new ImportError(line, "needs 'image', or 'crop' and/or 'embedding'");
    const rectValue = rec['crop_rect'];
    let cropRect: Rect | null = null;
    if (rectValue !== undefined && rectValue !== null) {
      if (
        !Array.isArray(rectValue) ||
        rectValue.length !== 4 ||
        !rectValue.every(Number.isInteger) ||
        !(rectValue[0] < rectValue[2] && rectValue[1] < rectValue[3])
      ) {
        throw new ImportError(line, "'crop_rect' must be [left, top, right, bottom] integers");
      }
      cropRect = rectValue as Rect;
    }
    if (crop !== null && cropRect === null) throw new ImportError(line, "'crop' needs 'crop_rect'");
    const created = optionalString(rec, 'created', line);
    const createdAt = created === null ? null : Date.parse(created);
    if (createdAt !== null && !Number.isFinite(createdAt)) throw new ImportError(line, "'created' is not a date");
    let vector: Float32Array | null = null;
    if (embedding !== null) {
      vector = embeddingFromBase64(embedding);
      if (vector === null) throw new ImportError(line, "'embedding' is not base64 of float32 values");
      const problem = embeddingProblem(vector);
      if (problem !== null) throw new ImportError(line, `'embedding': ${problem}`);
    }
    items.push({
      line,
      subject,
      createdAt,
      model: optionalString(rec, 'model', line),
      modelVersion: optionalString(rec, 'model_version', line),
      embedding: vector,
      crop: crop === null ? null : base64Bytes(crop, "'crop'", line),
      cropRect,
      quality: importQuality(rec['quality'], crop === null ? null : cropRect, line),
    });
  });
  return items;
}
