// Bench section: each model with an int8 file, edgecv running it (Engine precision 'int8', the default) against
// onnxruntime-node running the fp32 file (what a Node user gets) and the int8 file (what the model alone gives),
// interleaved in one run. docs/int8.md.
import { join } from 'node:path';
import * as ort from 'onnxruntime-node';
import type { ConvertedManifest } from '../models/model-manifest.js';
import { Engine } from '../src/index.js';
import type { BenchContext } from './pose-objects.js';

type Row = Record<string, string | number>;

const WARMUP_RUNS = 5;
/** Runs of one side in a row before the next takes its turn (as in engine-speed.ts: thread pools spin on after a run). */
const BLOCK_RUNS = 10;
/** At least this much time of each side, so a fast model is not judged on a handful of runs. */
const MIN_SAMPLE_MS = 1500;

/**
 * Forward pass only, same fp32 input, 1 worker x 2 threads in the addon and 2 intra-op threads in onnxruntime-node.
 * Sides take turns in blocks of BLOCK_RUNS, order rotating, so drifting load on a shared machine hits all alike.
 */
export async function benchInt8Forward(ctx: BenchContext, manifest: ConvertedManifest, only?: readonly string[]): Promise<Row[]> {
  const threads = 2;
  const engine = await Engine.open({ workers: 1, threadsPerWorker: threads, precision: 'int8', poseModel: null, objectDetector: null, faceEmbedder: null });
  const rows: Row[] = [];
  try {
    for (const [name, model] of Object.entries(manifest.models)) {
      if (!model.int8 || (only && !only.includes(name))) continue;
      const size = model.input.shape.reduce((a, b) => a * b, 1);
      const input = new Float32Array(size).map((_, i) => Math.sin(i) * 0.9);
      const options = { intraOpNumThreads: threads, interOpNumThreads: 1, executionMode: 'sequential' as const };
      const fp32 = await ort.InferenceSession.create(join(ctx.root, 'models', 'onnx', model.ortFile), options);
      const int8 = await ort.InferenceSession.create(join(ctx.root, 'models', 'onnx', model.int8.ortFile), options);
      const feeds = { [model.input.name]: new ort.Tensor('float32', input, model.input.shape) };
      const runs = {
        'edgecv int8': () => engine.runModel(name, input, { runtime: 'onnxruntime' }),
        'onnxruntime-node fp32': () => fp32.run(feeds),
        'onnxruntime-node int8': () => int8.run(feeds),
      };
      const sides = Object.keys(runs) as (keyof typeof runs)[];
      const samples: Record<keyof typeof runs, number[]> = { 'edgecv int8': [], 'onnxruntime-node fp32': [], 'onnxruntime-node int8': [] };
      for (const k of sides) await ctx.timeIt(WARMUP_RUNS, runs[k]);
      const estimate = ctx.stats(await ctx.timeIt(5, runs['edgecv int8'])).p50;
      const iterations = ctx.quick ? ctx.iterations : Math.max(ctx.iterations, Math.ceil(MIN_SAMPLE_MS / estimate));
      for (let block = 0; block * BLOCK_RUNS < iterations; block++) {
        for (let i = 0; i < sides.length; i++) {
          const k = sides[(block + i) % sides.length]!;
          await runs[k](); // not counted: the previous side's threads may still be spinning
          samples[k].push(...(await ctx.timeIt(BLOCK_RUNS, runs[k])));
        }
      }
      await fp32.release();
      await int8.release();
      const p50 = (k: keyof typeof runs) => ctx.stats(samples[k]).p50;
      rows.push({
        model: name,
        input: model.input.shape.slice(1).join('x'),
        'edgecv int8 p50 ms': p50('edgecv int8'),
        'onnxruntime-node fp32 p50 ms': p50('onnxruntime-node fp32'),
        'onnxruntime-node int8 p50 ms': p50('onnxruntime-node int8'),
        'ratio ort-node fp32 / edgecv int8': p50('onnxruntime-node fp32') / p50('edgecv int8'),
        'ratio ort-node int8 / edgecv int8': p50('onnxruntime-node int8') / p50('edgecv int8'),
        runs: samples['edgecv int8'].length,
      });
    }
  } finally {
    await engine.close();
  }
  return rows;
}
