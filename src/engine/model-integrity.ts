// Every model file an engine loads is checked against the sha256 the converted manifest holds for it (`sha256` for
// `file`, `ortSha256` for `ortFile`, `int8.sha256` for `int8.ortFile`): a damaged fp32 embedder loaded silently and
// answered wrong similarities. Hashing ~100 MB at every start would cost a second, so a file is hashed once per
// size and mtime: what was verified is kept in <modelDir>/.verified-sha256.json (and in memory), and a file whose
// size or mtime changed, or whose manifest hash changed, is hashed again. A model folder that cannot be written
// (a read-only container layer) is hashed at every start instead, unless the record came with it (the image
// build writes it: scripts/image/image-payload.mjs).

import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';

/** What was verified, beside the model files. */
export const INTEGRITY_CACHE_FILE = '.verified-sha256.json';

const FIX = 'run `npm run setup` (node scripts/setup/setup.mjs) to convert the models again';

interface Verified {
  size: number;
  mtimeMs: number;
  sha256: string;
}

function record(value: unknown): Record<string, unknown> | null {
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : null;
}

/** The sha256 the manifest's models give for `fileName`; null where it names the file without one; undefined: not named. */
export function expectedSha256(models: Record<string, unknown>, fileName: string): string | null | undefined {
  const text = (v: unknown) => (typeof v === 'string' && /^[0-9a-f]{64}$/.test(v) ? v : null);
  for (const value of Object.values(models)) {
    const entry = record(value);
    if (!entry) continue;
    if (entry['file'] === fileName) return text(entry['sha256']);
    if (entry['ortFile'] === fileName) return text(entry['ortSha256']);
    const int8 = record(entry['int8']);
    if (int8 && int8['ortFile'] === fileName) return text(int8['sha256']);
  }
  return undefined;
}

async function sha256File(file: string): Promise<string> {
  const hash = createHash('sha256');
  for await (const chunk of fs.createReadStream(file, { highWaterMark: 1 << 20 })) hash.update(chunk as Buffer);
  return hash.digest('hex');
}

function readCache(file: string): Record<string, Verified> {
  try {
    const parsed = record(JSON.parse(fs.readFileSync(file, 'utf8')));
    return (parsed ?? {}) as Record<string, Verified>;
  } catch {
    return {};
  }
}

/** Best effort: another process may write it too (the last one wins; a lost entry is hashed again). */
function writeCache(file: string, cache: Record<string, Verified>): void {
  const tmp = `${file}.${process.pid}-${randomBytes(4).toString('hex')}.tmp`; // worker threads share a pid
  try {
    fs.writeFileSync(tmp, `${JSON.stringify(cache)}\n`);
    fs.renameSync(tmp, file);
  } catch {
    fs.rmSync(tmp, { force: true });
  }
}

/** Files verified in this process: path -> `${size}:${mtimeMs}:${sha256}`. */
const verifiedHere = new Map<string, string>();
const inFlight = new Map<string, Promise<void>>();
/** Checks so far in this process: files hashed and their bytes, and files known from a cache (for the start-up log). */
const counts = { files: 0, bytes: 0, known: 0 };

export function hashedSoFar(): { files: number; bytes: number; known: number } {
  return { ...counts };
}

/**
 * Resolves when `filePath` (a model file of the manifest `manifestFile` lists in `models`) has the sha256 the
 * manifest gives; rejects with an Error naming the file and the fix otherwise, or when the manifest gives none.
 */
export function verifyModelFile(manifestFile: string, models: Record<string, unknown>, filePath: string): Promise<void> {
  const running = inFlight.get(filePath);
  if (running) return running;
  const check = verify(manifestFile, models, filePath).finally(() => inFlight.delete(filePath));
  inFlight.set(filePath, check);
  return check;
}

async function verify(manifestFile: string, models: Record<string, unknown>, filePath: string): Promise<void> {
  const name = path.basename(filePath);
  const want = expectedSha256(models, name);
  if (want === undefined) return; // not a manifest file (an own model): nothing to compare it with
  if (want === null) throw new Error(`${manifestFile} gives no sha256 for the model file ${name}: ${FIX}`);
  const { size, mtimeMs } = await fs.promises.stat(filePath);
  const key = `${size}:${mtimeMs}:${want}`;
  if (verifiedHere.get(filePath) === key) {
    counts.known++;
    return;
  }
  const cacheFile = path.join(path.dirname(filePath), INTEGRITY_CACHE_FILE);
  const cache = readCache(cacheFile);
  const known = record(cache[name]);
  if (!(known && known['size'] === size && known['mtimeMs'] === mtimeMs && known['sha256'] === want)) {
    const got = await sha256File(filePath);
    counts.files++;
    counts.bytes += size;
    if (got !== want) throw new Error(`model file ${filePath} is damaged or was changed: its sha256 is ${got}, ${manifestFile} says ${want}; ${FIX}`);
    writeCache(cacheFile, { ...readCache(cacheFile), [name]: { size, mtimeMs, sha256: got } });
  } else {
    counts.known++;
  }
  verifiedHere.set(filePath, key);
}
