// One model's forward pass in the engine from two model folders (a converted file before and after a converter
// change, say), the two taking turns in blocks of 10 runs, the first run of each block not counted: an A/B at one
// moment on one machine. Each folder needs its manifest.json, the model's files and the face detector's (the engine
// always loads one). 1 worker x 2 threads, idle cores kept, as the forward-pass benches.
//
//   node dist/bench/model-ab.js <model> <folder A> <folder B> [--precision int8|fp32] [--blocks 40]
import { readFileSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import type { ConvertedManifest } from '../models/model-manifest.js';
import { Engine, type Precision } from '../src/index.js';
import { percentile } from '../src/metrics/percentiles.js';
import { argValue } from '../testkit/args.js';

const BLOCK = 10;

async function main(): Promise<void> {
  const args = process.argv.slice(2);
  const [model, a, b] = args;
  if (!model || !a || !b) throw new Error('usage: node dist/bench/model-ab.js <model> <folder A> <folder B> [--precision int8|fp32] [--blocks 40]');
  const precision = argValue(args, '--precision') ?? ('int8' as Precision);
  const blocks = Number(argValue(args, '--blocks') ?? '40');
  if (!Number.isInteger(blocks) || blocks < 1) throw new Error('--blocks must be a whole number of at least 1');
  if (precision !== 'int8' && precision !== 'fp32') throw new Error('--precision must be int8 or fp32');
  const manifest = JSON.parse(readFileSync(join(a, 'manifest.json'), 'utf8')) as ConvertedManifest;
  const shape = manifest.models[model]?.input.shape;
  if (!shape) throw new Error(`no model ${model} in ${a}/manifest.json`);
  const input = new Float32Array(shape.reduce((x, y) => x * y, 1)).map((_, i) => 127 + 120 * Math.sin(i));
  const only = {
    workers: 1,
    threadsPerWorker: 2,
    idleCores: 'keep',
    poseModel: null,
    objectDetector: null,
    personDetector: null,
    faceEmbedder: null,
  } as const;
  const engines = { A: await Engine.open({ ...only, modelDir: a }), B: await Engine.open({ ...only, modelDir: b }) };
  const samples: Record<'A' | 'B', number[]> = { A: [], B: [] };
  try {
    for (let n = 0; n < blocks; n++) {
      for (const side of n % 2 ? (['B', 'A'] as const) : (['A', 'B'] as const)) {
        await engines[side].runModel(model, input, { precision });
        for (let i = 0; i < BLOCK; i++) {
          const t = performance.now();
          await engines[side].runModel(model, input, { precision });
          samples[side].push(performance.now() - t);
        }
      }
    }
  } finally {
    await Promise.all([engines.A.close(), engines.B.close()]);
  }
  for (const s of Object.values(samples)) s.sort((x, y) => x - y);
  const p50 = (s: number[]) => percentile(s, 50);
  console.log(
    `${model} ${precision}, ${samples.A.length} runs each, ${os.cpus()[0]?.model ?? 'cpu'}, load ${os
      .loadavg()
      .map((l) => l.toFixed(2))
      .join(' ')}`,
  );
  console.log(`A ${a}: p50 ${p50(samples.A).toFixed(2)} ms, p90 ${percentile(samples.A, 90).toFixed(2)}`);
  console.log(`B ${b}: p50 ${p50(samples.B).toFixed(2)} ms, p90 ${percentile(samples.B, 90).toFixed(2)}`);
  console.log(`A / B (p50): ${(p50(samples.A) / p50(samples.B)).toFixed(3)}`);
}

main().catch((err: unknown) => {
  console.error((err as Error).message);
  process.exit(1);
});
