// The audit trail: one JSON line per request (pino) in <data-dir>/audit/audit.log, written synchronously
// so that an entry can be read back as soon as its response has gone. Past maxBytes the file is rotated
// to audit.log.1 (one generation kept), so the trail stays bounded.

import fs from 'node:fs';
import path from 'node:path';
import pino from 'pino';

export const AUDIT_DIR = 'audit';
export const AUDIT_FILE = 'audit.log';
export const DEFAULT_AUDIT_MAX_BYTES = 32 * 1024 * 1024;

export interface AuditEntry {
  /** ISO 8601 time the response was complete. */
  time: string;
  tracid: string;
  method: string;
  /** The route pattern that answered (e.g. /detector/detect), or the path when none did. */
  route: string;
  path: string;
  status: number;
  durationMs: number;
  /** Client IP address ('' when unknown, e.g. in-process requests). */
  client: string;
  /** The logged-in user, or null. */
  user: string | null;
}

export type AuditRecord = Omit<AuditEntry, 'time'>;

function isAuditEntry(v: unknown): v is AuditEntry {
  const e = v as Partial<AuditEntry> | null;
  return typeof e === 'object' && e !== null && typeof e.tracid === 'string' && typeof e.time === 'string';
}

export class AuditLog {
  readonly file: string;
  readonly #maxBytes: number;
  readonly #dest: ReturnType<typeof pino.destination>;
  readonly #logger: pino.Logger;
  #bytes: number;

  constructor(dataDir: string, opts: { maxBytes?: number } = {}) {
    const dir = path.join(dataDir, AUDIT_DIR);
    fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
    this.file = path.join(dir, AUDIT_FILE);
    this.#maxBytes = opts.maxBytes ?? DEFAULT_AUDIT_MAX_BYTES;
    try {
      this.#bytes = fs.statSync(this.file).size;
    } catch {
      this.#bytes = 0;
    }
    this.#dest = pino.destination({ dest: this.file, sync: true, mode: 0o600 });
    this.#logger = pino({ base: null, timestamp: pino.stdTimeFunctions.isoTime, formatters: { level: (label) => ({ level: label }) } }, this.#dest);
  }

  write(record: AuditRecord): void {
    this.#logger.info(record);
    this.#bytes += 200; // about one line; the real size is re-read at rotation time
    if (this.#bytes > this.#maxBytes) this.#rotateIfLarge();
  }

  #rotateIfLarge(): void {
    try {
      this.#bytes = fs.statSync(this.file).size;
      if (this.#bytes <= this.#maxBytes) return;
      fs.renameSync(this.file, `${this.file}.1`);
      this.#dest.reopen();
      this.#bytes = 0;
    } catch (e) {
      console.error(`[edgecv] cannot rotate ${this.file}: ${(e as Error).message}`);
    }
  }

  /** Recent entries, newest first, optionally only those of one trace id. */
  recent(opts: { tracid?: string; limit?: number } = {}): AuditEntry[] {
    const limit = opts.limit ?? 100;
    const out: AuditEntry[] = [];
    for (const file of [this.file, `${this.file}.1`]) {
      let text: string;
      try {
        text = fs.readFileSync(file, 'utf8');
      } catch {
        continue;
      }
      const lines = text.split('\n');
      for (let i = lines.length - 1; i >= 0 && out.length < limit; i--) {
        const line = lines[i]!;
        if (line === '' || (opts.tracid !== undefined && !line.includes(opts.tracid))) continue;
        let entry: unknown;
        try {
          entry = JSON.parse(line);
        } catch {
          continue; // a line cut by a crash
        }
        if (isAuditEntry(entry) && (opts.tracid === undefined || entry.tracid === opts.tracid)) out.push(entry);
      }
      if (out.length >= limit) break;
    }
    return out;
  }

  close(): void {
    this.#dest.flushSync();
    this.#dest.end();
  }
}
