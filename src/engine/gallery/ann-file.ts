// The HNSW graph kept in a file beside the durable gallery store, so that a restart loads it instead of rebuilding
// it. Two files:
//   <file>        the usearch graph (Index.save)
//   <file>.json   what that graph holds: its parameters, the graph file's SHA-256, and every key with a 53-bit hash
//                 of the L2-normalized embedding it was added with.
// A graph is loaded only when the SHA-256 of its file matches (a torn or damaged file never reaches usearch) and
// its parameters match this server's; its rows are then compared one by one with the store's content, so a change
// made after the save (another server's, or one saved in the store before a crash) is found and applied.
// Both files are written under temporary names, synced and renamed into place: a crash mid-save leaves the old
// pair or a pair whose checksum does not match, never a wrong graph in use.

import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';

/** Everything that must match for a saved graph to be usable here. */
export interface AnnParams {
  dim: number;
  quantization: string;
  connectivity: number;
  expansionAdd: number;
}

interface MetaFile extends AnnParams {
  format: 1;
  count: number;
  sha256: string;
  /** base64 of a Float64Array of keys, and of a Float64Array of their row hashes. */
  keys: string;
  hashes: string;
}

export interface SavedGraph {
  /** Key -> row hash of everything in the graph file. */
  rows: Map<number, number>;
}

/** 53-bit hash of each `dim`-long row (two 32-bit FNV-style lanes over the float bits): tells a changed row apart. */
export function rowHashes(embeddings: Float32Array, dim: number): Float64Array {
  const words = new Uint32Array(embeddings.buffer, embeddings.byteOffset, embeddings.length);
  const out = new Float64Array(embeddings.length / dim);
  for (let r = 0; r < out.length; r++) {
    let h1 = 0x811c9dc5;
    let h2 = 0x9747b28c;
    for (let i = r * dim, end = i + dim; i < end; i++) {
      const v = words[i]!;
      h1 = Math.imul(h1 ^ v, 0x01000193);
      h2 = Math.imul((h2 ^ v) + (h2 >>> 15), 0x85ebca6b);
    }
    out[r] = (h1 >>> 0) * 0x200000 + ((h2 >>> 0) & 0x1fffff);
  }
  return out;
}

async function sha256Of(file: string): Promise<string> {
  const hash = createHash('sha256');
  for await (const chunk of createReadStream(file, { highWaterMark: 1 << 22 })) hash.update(chunk as Buffer);
  return hash.digest('hex');
}

function toBase64(a: Float64Array): string {
  return Buffer.from(a.buffer, a.byteOffset, a.byteLength).toString('base64');
}

function fromBase64(s: string): Float64Array {
  const b = Buffer.from(s, 'base64');
  if (b.length % 8 !== 0) throw new Error('bad array');
  return new Float64Array(b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength));
}

async function syncFile(file: string): Promise<void> {
  const h = await fs.open(file, 'r');
  try {
    await h.sync();
  } finally {
    await h.close();
  }
}

const metaPath = (file: string) => `${file}.json`;
let saves = 0;

/**
 * Reads and checks a saved graph: resolves with its rows when `<file>` is intact and made with `params`, or with a
 * reason it cannot be used (missing, other parameters, checksum mismatch). Loading it is the caller's (`load(file)`).
 */
export async function checkSavedGraph(file: string, params: AnnParams): Promise<SavedGraph | string> {
  let meta: MetaFile;
  try {
    meta = JSON.parse(await fs.readFile(metaPath(file), 'utf8')) as MetaFile;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'ENOENT' ? 'no saved graph' : `unreadable ${path.basename(metaPath(file))}`;
  }
  if (meta.format !== 1) return 'saved graph of another format';
  for (const k of ['dim', 'quantization', 'connectivity', 'expansionAdd'] as const) {
    if (meta[k] !== params[k]) return `saved graph has ${k} ${String(meta[k])}, not ${String(params[k])}`;
  }
  let keys: Float64Array;
  let hashes: Float64Array;
  try {
    keys = fromBase64(meta.keys);
    hashes = fromBase64(meta.hashes);
  } catch {
    return 'unreadable key list';
  }
  if (keys.length !== meta.count || hashes.length !== meta.count) return 'key list does not match its count';
  try {
    if ((await sha256Of(file)) !== meta.sha256) return 'graph file does not match its checksum';
  } catch {
    return 'graph file missing or unreadable';
  }
  const rows = new Map<number, number>();
  for (let i = 0; i < keys.length; i++) rows.set(keys[i]!, hashes[i]!);
  return { rows };
}

/**
 * Saves a graph: `write(tmp)` writes the usearch file and returns, in the same synchronous turn, the rows it holds;
 * its checksum and key list go beside it and both are renamed into place.
 */
export async function saveGraph(file: string, params: AnnParams, write: (tmp: string) => Map<number, number>): Promise<void> {
  const tag = `${process.pid}-${++saves}.tmp`;
  const graphTmp = `${file}.${tag}`;
  const metaTmp = `${metaPath(file)}.${tag}`;
  try {
    await fs.mkdir(path.dirname(file), { recursive: true });
    const rows = write(graphTmp);
    const keys = Float64Array.from(rows.keys());
    const hashes = Float64Array.from(rows.values());
    await syncFile(graphTmp);
    const meta: MetaFile = {
      format: 1,
      ...params,
      count: keys.length,
      sha256: await sha256Of(graphTmp),
      keys: toBase64(keys),
      hashes: toBase64(hashes),
    };
    await fs.writeFile(metaTmp, JSON.stringify(meta));
    await syncFile(metaTmp);
    await fs.rename(graphTmp, file);
    await fs.rename(metaTmp, metaPath(file));
    await syncFile(path.dirname(file));
  } finally {
    await fs.rm(graphTmp, { force: true });
    await fs.rm(metaTmp, { force: true });
  }
}
