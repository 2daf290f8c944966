// The TF.js reference outputs are kept in .cache/tfjs-reference/ (TfjsReference.cached): a cached run gives what a
// computed run gives, bit for bit, and a second reference of the same graph reads it back from the file.
import fs from 'node:fs';
import path from 'node:path';
import { expect, it } from 'vitest';
import type { ConvertedManifest } from '../models/model-manifest.js';
import { TfjsReference, useTfjsBackend } from '../testkit/tfjs-reference.js';
import { ROOT } from './helpers.js';

const CACHE = path.join(ROOT, '.cache', 'tfjs-reference');
const cacheFiles = () => new Set(fs.existsSync(CACHE) ? fs.readdirSync(CACHE) : []);

it('keeps a run of the original graph by its inputs and gives it back unchanged', async () => {
  await useTfjsBackend('cpu');
  const manifest = JSON.parse(fs.readFileSync(path.join(ROOT, 'models', 'onnx', 'manifest.json'), 'utf8')) as ConvertedManifest;
  const model = manifest.models['facemesh-detection-full']!;
  const [, c, h, w] = model.input.shape;
  const shape = [1, h, w, c];
  const args = [model.source.file, model.input.tfNode, model.outputs.map((o) => o.tfNode), shape, model.source.package] as const;
  // an input no earlier run had: this run computes it and keeps it
  const input = Float32Array.from({ length: h * w * c }, () => Math.random() * 2 - 1);
  const before = cacheFiles();
  const computed = await (await TfjsReference.load(...args)).run(input, shape);
  const first = await (await TfjsReference.cached(...args)).run(input, shape);
  const added = [...cacheFiles()].filter((f) => !before.has(f));
  expect(added).toHaveLength(1);
  try {
    const second = await (await TfjsReference.cached(...args)).run(input, shape);
    for (const outputs of [first, second]) {
      expect(outputs).toHaveLength(computed.length);
      outputs.forEach((o, i) =>
        expect(
          Buffer.from(o.buffer, o.byteOffset, o.byteLength).equals(
            Buffer.from(computed[i]!.buffer, computed[i]!.byteOffset, computed[i]!.byteLength),
          ),
        ).toBe(true),
      );
    }
    // the second came from the file: with the file changed, it gives the change back
    const file = path.join(CACHE, added[0]!);
    const bytes = fs.readFileSync(file);
    bytes.writeFloatLE(12345, 4);
    fs.writeFileSync(file, bytes);
    const [changed] = await (await TfjsReference.cached(...args)).run(input, shape);
    expect(changed![0]).toBe(12345);
  } finally {
    fs.rmSync(path.join(CACHE, added[0]!), { force: true });
  }
}, 120_000);
