// The default gallery store: SQLite (better-sqlite3) in <data-dir>/gallery.db. WAL journal with synchronous=FULL,
// one row per sample, each change one transaction: a change is on disk before its promise resolves, and a
// SIGKILL (or a power cut) loses at most the request in flight, never the file.
//
// Schema version 1, which grew a column: `quality` (JSON of the crop's SampleQuality, or 'null'; NULL: not measured
// yet) was added to the first table. A file written before it gets the column when it opens (ALTER TABLE, its rows
// NULL, measured when first listed); the version stays 1, since an older edgecv reads and writes such a file as it
// always did (it names its columns), so it can still be run over it.

import fs from 'node:fs';
import path from 'node:path';
import { storedQuality } from './sample-check.js';
import type { SampleQuality } from './sample-quality.js';
import { Database, statementCache, type Prepare, type SqliteDatabase, type SqliteStatement } from '../sqlite.js';
import {
  embeddingFromBytes,
  embeddingToBytes,
  type GalleryStore,
  type NewSample,
  type MeasuredQuality,
  type QuarantinedSample,
  type Rect,
  type SamplePage,
  type SamplePageRequest,
  type SampleVector,
  type StoreDurability,
  type StoredSample,
  type StoredVectors,
} from './types.js';

export const GALLERY_DB_FILE = 'gallery.db';
const SCHEMA_VERSION = 1;

interface SampleRow {
  id: number;
  subject: string;
  created_at: number;
  model: string;
  model_version: string;
  embedding: Buffer;
  crop: Buffer | null;
  crop_rect: string | null;
  quality: string | null;
}

function parseRect(text: string | null): Rect | null {
  if (text === null) return null;
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch {
    return null; // a damaged rect only costs the crop's use for re-embedding
  }
  return Array.isArray(v) && v.length === 4 && v.every(Number.isInteger) ? (v as Rect) : null;
}

/** A stored quality (`quality` column); undefined when not measured yet. */
function parseQuality(text: string | null): SampleQuality | null | undefined {
  if (text === null) return undefined;
  try {
    return storedQuality(JSON.parse(text));
  } catch {
    return undefined; // damaged: measured again
  }
}

function qualityText(q: SampleQuality | null | undefined): string | null {
  return q === undefined ? null : JSON.stringify(q && { faceSide: q.faceSide, sharpness: q.sharpness });
}

/** A readable row with its crop and quality. */
function withCrop(v: SampleVector, r: SampleRow): StoredSample {
  const quality = parseQuality(r.quality);
  return { ...v, crop: r.crop, cropRect: parseRect(r.crop_rect), ...(quality === undefined ? {} : { quality }) };
}

/** The row as a vector, or why it cannot be one (a blob that is not float32, a subject that is not text). */
function decodeRow(r: Omit<SampleRow, 'crop' | 'crop_rect' | 'quality'>): SampleVector | QuarantinedSample {
  const subject = typeof r.subject === 'string' ? r.subject : null;
  if (subject === null) return { id: r.id, subject, reason: 'the subject is not text' };
  if (!Buffer.isBuffer(r.embedding)) return { id: r.id, subject, reason: 'the embedding is not a blob' };
  try {
    return toVector(r);
  } catch (e) {
    return { id: r.id, subject, reason: (e as Error).message };
  }
}

function toVector(r: Omit<SampleRow, 'crop' | 'crop_rect' | 'quality'>): SampleVector {
  return {
    id: r.id,
    subject: r.subject,
    createdAt: r.created_at,
    model: r.model,
    modelVersion: r.model_version,
    embedding: embeddingFromBytes(r.embedding),
  };
}

export class SqliteGalleryStore implements GalleryStore {
  readonly kind = 'sqlite' as const;
  readonly file: string;
  readonly #db: SqliteDatabase;
  readonly #prepare: Prepare;

  private constructor(file: string, db: SqliteDatabase) {
    this.file = file;
    this.#db = db;
    this.#prepare = statementCache(db);
  }

  /** Opens (creating if needed) <dataDir>/gallery.db. Throws if the file is not a usable gallery. */
  static open(dataDir: string): SqliteGalleryStore {
    fs.mkdirSync(dataDir, { recursive: true });
    const file = path.join(dataDir, GALLERY_DB_FILE);
    const db = new Database(file);
    try {
      db.pragma('journal_mode = WAL');
      // FULL: each commit is fsynced, so an acknowledged enrolment survives a power cut too, not only a kill.
      db.pragma('synchronous = FULL');
      db.pragma('busy_timeout = 5000');
      const version = db.pragma('user_version', { simple: true }) as number;
      if (version > SCHEMA_VERSION) throw new Error(`${file} has schema version ${version}; this edgecv knows up to ${SCHEMA_VERSION}`);
      db.exec(`
        CREATE TABLE IF NOT EXISTS samples (
          id            INTEGER PRIMARY KEY AUTOINCREMENT,
          subject       TEXT    NOT NULL,
          created_at    INTEGER NOT NULL,
          model         TEXT    NOT NULL,
          model_version TEXT    NOT NULL,
          embedding     BLOB    NOT NULL,
          crop          BLOB,
          crop_rect     TEXT,
          quality       TEXT
        );
        CREATE INDEX IF NOT EXISTS samples_subject ON samples(subject);
      `);
      const columns = db.prepare('PRAGMA table_info(samples)').all() as { name: string }[];
      if (!columns.some((c) => c.name === 'quality')) db.exec('ALTER TABLE samples ADD COLUMN quality TEXT'); // a file from before it
      db.pragma(`user_version = ${SCHEMA_VERSION}`);
    } catch (e) {
      db.close();
      throw e;
    }
    return new SqliteGalleryStore(file, db);
  }

  /** PRAGMA integrity_check: 'ok' for a sound file. */
  integrityCheck(): string {
    return this.#db.pragma('integrity_check', { simple: true }) as string;
  }

  async vectors(): Promise<StoredVectors> {
    const rows = this.#prepare('SELECT id, subject, created_at, model, model_version, embedding FROM samples ORDER BY id').all() as SampleRow[];
    const out: StoredVectors = { vectors: [], unreadable: [] };
    for (const r of rows) {
      const v = decodeRow(r);
      if ('reason' in v) out.unreadable.push(v);
      else out.vectors.push(v);
    }
    return out;
  }

  async *samples(batch = 256): AsyncIterable<StoredSample[]> {
    const page = this.#prepare('SELECT * FROM samples WHERE id > ? ORDER BY id LIMIT ?');
    let after = 0;
    for (;;) {
      const rows = page.all(after, batch) as SampleRow[];
      if (rows.length === 0) return;
      after = rows[rows.length - 1]!.id;
      const out: StoredSample[] = [];
      for (const r of rows) {
        const v = decodeRow(r);
        if (!('reason' in v)) out.push(withCrop(v, r)); // unreadable: quarantined at load
      }
      yield out;
    }
  }

  #insert(s: NewSample): StoredSample {
    const info = this.#prepare(
      'INSERT INTO samples (subject, created_at, model, model_version, embedding, crop, crop_rect, quality) VALUES (?, ?, ?, ?, ?, ?, ?, ?)',
    ).run(
      s.subject,
      s.createdAt,
      s.model,
      s.modelVersion,
      embeddingToBytes(s.embedding),
      s.crop,
      s.cropRect ? JSON.stringify(s.cropRect) : null,
      qualityText(s.quality),
    );
    return { ...s, id: Number(info.lastInsertRowid) };
  }

  async add(sample: NewSample): Promise<StoredSample> {
    return this.#insert(sample);
  }

  async addMany(samples: NewSample[], replace: boolean): Promise<StoredSample[]> {
    return this.#db.transaction(() => {
      if (replace) this.#prepare('DELETE FROM samples').run();
      return samples.map((s) => this.#insert(s));
    })();
  }

  async remove(subject: string, id?: number): Promise<number[]> {
    return this.#db.transaction(() => {
      const rows = (
        id === undefined
          ? this.#prepare('SELECT id FROM samples WHERE subject = ?').all(subject)
          : this.#prepare('SELECT id FROM samples WHERE subject = ? AND id = ?').all(subject, id)
      ) as { id: number }[];
      const del = this.#prepare('DELETE FROM samples WHERE id = ?');
      for (const r of rows) del.run(r.id);
      return rows.map((r) => r.id);
    })();
  }

  async samplesOf(subject: string, { after, limit }: SamplePageRequest): Promise<SamplePage> {
    // One more row than asked tells whether there is a next page; (subject, id) is the index samples_subject.
    const rows = this.#prepare('SELECT * FROM samples WHERE subject = ? AND id > ? ORDER BY id LIMIT ?').all(
      subject,
      after,
      limit + 1,
    ) as SampleRow[];
    const { n } = this.#prepare('SELECT count(*) AS n FROM samples WHERE subject = ?').get(subject) as { n: number };
    const page = rows.slice(0, limit);
    const samples: StoredSample[] = [];
    for (const r of page) {
      const v = decodeRow(r);
      if (!('reason' in v)) samples.push(withCrop(v, r));
    }
    return { samples, total: n, next: rows.length > limit ? page[page.length - 1]!.id : null };
  }

  async move(id: number, from: string, to: string): Promise<SampleVector | null> {
    return this.#db.transaction(() => {
      const row = this.#prepare('SELECT id, subject, created_at, model, model_version, embedding FROM samples WHERE id = ? AND subject = ?').get(
        id,
        from,
      ) as SampleRow | undefined;
      if (!row) return null;
      const v = decodeRow(row);
      if ('reason' in v) return null; // unreadable: it stays where it is, quarantined
      this.#prepare('UPDATE samples SET subject = ? WHERE id = ?').run(to, id);
      return { ...v, subject: to };
    })();
  }

  async setQualities(qualities: MeasuredQuality[]): Promise<void> {
    const get = this.#prepare('SELECT quality FROM samples WHERE id = ?');
    const set = this.#prepare('UPDATE samples SET quality = ? WHERE id = ?');
    this.#db.transaction(() => {
      for (const q of qualities) {
        const row = get.get(q.id) as { quality: string | null } | undefined;
        if (row && parseQuality(row.quality) === undefined) set.run(qualityText(q.quality), q.id);
      }
    })();
  }

  async updateEmbeddings(updates: { id: number; model: string; modelVersion: string; embedding: Float32Array }[]): Promise<void> {
    const set = this.#prepare('UPDATE samples SET model = ?, model_version = ?, embedding = ? WHERE id = ?');
    this.#db.transaction(() => {
      for (const u of updates) set.run(u.model, u.modelVersion, embeddingToBytes(u.embedding), u.id);
    })();
  }

  async watch(): Promise<void> {
    // One server owns the file: nobody else changes it.
  }

  durability(): StoreDurability {
    return { kind: 'sqlite', persistence: 'wal-fsync', warning: null };
  }

  async close(): Promise<void> {
    if (this.#db.open) this.#db.close();
  }
}
