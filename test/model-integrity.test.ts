// The engine checks every model file it loads against the sha256 of the converted manifest, once per size and
// mtime: a damaged fp32 embedder (one byte changed, same size) is refused at open with an error naming the file
// and the fix; a manifest that gives no hash for a file it lists is refused too; an intact folder opens, and what
// was verified is kept beside the files. A model folder of links to the real files, one of them a damaged copy.

import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { INTEGRITY_CACHE_FILE } from '../src/engine/model-integrity.js';
import { Engine } from '../src/index.js';
import { useTempDirs } from './helpers.js';

const MODELS = path.resolve('models/onnx');
const EMBEDDER = 'faceres.ort.onnx';
const newTmpDir = useTempDirs();

/** A model folder whose files link to models/onnx, but `copied` (real copies) and its own manifest.json. */
function modelDir(copied: string[] = [], manifest?: (m: { models: Record<string, Record<string, unknown>> }) => void): string {
  const dir = newTmpDir('edgecv-models-');
  for (const f of fs.readdirSync(MODELS)) {
    if (!f.endsWith('.onnx')) continue;
    if (copied.includes(f)) fs.copyFileSync(path.join(MODELS, f), path.join(dir, f));
    else fs.symlinkSync(path.join(MODELS, f), path.join(dir, f));
  }
  const m = JSON.parse(fs.readFileSync(path.join(MODELS, 'manifest.json'), 'utf8')) as { models: Record<string, Record<string, unknown>> };
  manifest?.(m);
  fs.writeFileSync(path.join(dir, 'manifest.json'), JSON.stringify(m));
  return dir;
}

const OPTIONS = { workers: 1, precision: 'fp32', runtime: 'onnxruntime', poseModel: null, objectDetector: null, faceEmbedder: 'faceres' } as const;

describe('model files are checked against the manifest sha256 at open', () => {
  it('an intact folder opens and keeps what it verified; a second open finds it verified', async () => {
    const dir = modelDir();
    const engine = await Engine.open({ ...OPTIONS, modelDir: dir });
    await engine.close();
    const cache = JSON.parse(fs.readFileSync(path.join(dir, INTEGRITY_CACHE_FILE), 'utf8')) as Record<string, { sha256: string }>;
    const manifest = JSON.parse(fs.readFileSync(path.join(dir, 'manifest.json'), 'utf8')) as { models: Record<string, { ortSha256: string }> };
    expect(cache[EMBEDDER]?.sha256).toBe(manifest.models['faceres']!.ortSha256);
    const written = fs.statSync(path.join(dir, INTEGRITY_CACHE_FILE)).mtimeMs;
    await (await Engine.open({ ...OPTIONS, modelDir: dir })).close();
    expect(fs.statSync(path.join(dir, INTEGRITY_CACHE_FILE)).mtimeMs).toBe(written); // nothing hashed again
  });

  it('a damaged fp32 embedder (one byte, same size) is refused, naming the file and the fix', async () => {
    const dir = modelDir([EMBEDDER]);
    const file = path.join(dir, EMBEDDER);
    const bytes = fs.readFileSync(file);
    bytes[Math.floor(bytes.length / 2)]! ^= 0x01;
    fs.writeFileSync(file, bytes);
    await expect(Engine.open({ ...OPTIONS, modelDir: dir })).rejects.toThrow(
      /faceres\.ort\.onnx is damaged or was changed: its sha256 is [0-9a-f]{64}, .*manifest\.json says [0-9a-f]{64}; run `npm run setup`/,
    );
  });

  it('a file damaged after it was verified is caught (its mtime changed)', async () => {
    const dir = modelDir([EMBEDDER]);
    await (await Engine.open({ ...OPTIONS, modelDir: dir })).close();
    const file = path.join(dir, EMBEDDER);
    const bytes = fs.readFileSync(file);
    bytes[bytes.length - 100]! ^= 0x80;
    fs.writeFileSync(file, bytes);
    fs.utimesSync(file, new Date(), new Date(Date.now() + 5_000));
    await expect(Engine.open({ ...OPTIONS, modelDir: dir })).rejects.toThrow(/faceres\.ort\.onnx is damaged/);
  });

  it('a manifest that gives no sha256 for a file it lists (made before ortSha256) is refused with the fix', async () => {
    const dir = modelDir([], (m) => delete m.models['faceres']!['ortSha256']);
    await expect(Engine.open({ ...OPTIONS, modelDir: dir })).rejects.toThrow(
      /gives no sha256 for the model file faceres\.ort\.onnx: run `npm run setup`/,
    );
  });
});
