// Which convolutions of a model can take 7-bit weights (docs/int8.md, "CPUs without VNNI"): 7-bit weights run
// onnxruntime's fast int8 kernels on CPUs without VNNI, 8-bit ones its slower exact kernels there. For each
// convolution the quantizer quantizes, the int8 model with that one convolution at 7 bits (the others at 8) runs on
// the calibration inputs, exactly (onnxruntime's precision mode, so the answer is the same on every CPU), and its
// outputs are compared with the fp32 model's: damage = its mean relative RMS error minus the all-8-bit model's.
// Depthwise convolutions are left out: onnxruntime's depthwise kernels never saturate (test/quantize-weights.test.ts).
//
//   node dist/models/weight-sensitivity.js <model> [--max-damage=0.001]
//
// prints each convolution's damage and multiply-adds, cheapest damage per multiply-add first, and the
// `int8.sevenBitWeights` list (damage <= --max-damage) for models/manifest.json. Needs test/data (set-up --test).
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as ort from 'onnxruntime-node';
import { calibrationSubject } from './calibrate.js';
import { foldIntoConvs } from './convert/fold-into-convs.js';
import { encodeOnnxModel, OnnxDataType, type OnnxModel, type OnnxNode } from './convert/onnx-writer.js';
import { integerWeightConvs, quantizeModel, type QuantizeOptions } from './convert/quantize.js';
import type { CalibrationFile } from './model-manifest.js';
import { findRoot, readSourceManifest } from './model-packages.js';

export interface ConvSensitivity {
  name: string;
  /** Multiply-adds of one forward pass on the calibration input size. */
  macs: number;
  /** Mean relative RMS error of the outputs with this convolution at 7 bits, minus that with every one at 8. */
  damage: number;
}

export interface WeightSensitivity {
  /** Mean relative RMS error of the outputs against fp32: every convolution at 8 bits, and every one at 7. */
  error8: number;
  error7: number;
  convs: ConvSensitivity[];
}

const EXACT: ort.InferenceSession.SessionOptions = { intraOpNumThreads: 2, extra: { session: { x64quantprecision: '1' } } };

function isDepthwise(conv: OnnxNode, weightDims: readonly number[]): boolean {
  const group = conv.attributes['group'];
  return group?.kind === 'int' && group.value > 1 && group.value === weightDims[0];
}

async function runAll(model: Uint8Array | OnnxModel, inputs: Float32Array[], shape: number[]): Promise<Float32Array[][]> {
  const session = await ort.InferenceSession.create(model instanceof Uint8Array ? model : encodeOnnxModel(model), EXACT);
  try {
    const out: Float32Array[][] = [];
    for (const x of inputs) {
      const r = await session.run({ [session.inputNames[0]!]: new ort.Tensor('float32', x, shape) });
      out.push(session.outputNames.map((o) => r[o]!.data as Float32Array));
    }
    return out;
  } finally {
    await session.release();
  }
}

function meanRelativeError(got: Float32Array[][], want: Float32Array[][]): number {
  let sum = 0;
  let n = 0;
  want.forEach((outputs, i) =>
    outputs.forEach((w, k) => {
      const g = got[i]![k]!;
      let d = 0;
      let r = 0;
      for (let j = 0; j < w.length; j++) {
        d += (g[j]! - w[j]!) ** 2;
        r += w[j]! ** 2;
      }
      sum += Math.sqrt(d / Math.max(r, 1e-12));
      n++;
    }),
  );
  return sum / n;
}

export async function weightSensitivity(root: string, name: string, int8: { keepFloat?: string[]; keepOutputConvs?: boolean }): Promise<WeightSensitivity> {
  const { converted, inputs } = await calibrationSubject(root, name);
  const calibration = JSON.parse(readFileSync(join(root, 'models', 'calibration', `${name}.json`), 'utf8')) as CalibrationFile;
  const graph = converted.model;
  const shape = graph.inputs[0]!.shape!.map(Number);
  const base: QuantizeOptions = { ranges: calibration.ranges, keepFloat: int8.keepFloat ?? [], keepOutputConvs: int8.keepOutputConvs ?? false, weightBits: 8 };
  const fp32 = await runAll(converted.bytes, inputs, shape);
  const quantized = quantizeModel(graph, base);
  const error8 = meanRelativeError(await runAll(quantized, inputs, shape), fp32);
  const error7 = meanRelativeError(await runAll(quantizeModel(graph, { ...base, weightBits: 7 }), inputs, shape), fp32);

  // multiply-adds: each convolution's weight count times its output's area, from one fp32 pass with them exposed
  const folded = foldIntoConvs(graph);
  const weights = new Map(folded.initializers.map((t) => [t.name, t.dims]));
  const intConvs = new Set(integerWeightConvs(quantized).map((n) => n.name));
  const convs = folded.nodes.filter((n) => intConvs.has(n.name) && !isDepthwise(n, weights.get(n.inputs[1]!)!));
  const probe: OnnxModel = { ...folded, outputs: [...folded.outputs, ...convs.map((c) => ({ name: c.outputs[0]!, dataType: OnnxDataType.FLOAT }))] };
  const session = await ort.InferenceSession.create(encodeOnnxModel(probe), { intraOpNumThreads: 2 });
  const areas = await session.run({ [session.inputNames[0]!]: new ort.Tensor('float32', inputs[0]!, shape) });
  await session.release();

  const rows: ConvSensitivity[] = [];
  for (const conv of convs) {
    const dims = areas[conv.outputs[0]!]!.dims;
    const macs = weights.get(conv.inputs[1]!)!.reduce((a, b) => a * b, 1) * Number(dims[2]) * Number(dims[3]);
    const error = meanRelativeError(await runAll(quantizeModel(graph, { ...base, sevenBitWeights: [conv.name] }), inputs, shape), fp32);
    rows.push({ name: conv.name, macs, damage: error - error8 });
  }
  rows.sort((a, b) => a.damage / a.macs - b.damage / b.macs);
  return { error8, error7, convs: rows };
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const root = findRoot();
  const args = process.argv.slice(2);
  const name = args.find((a) => !a.startsWith('--'));
  const maxDamage = Number(args.find((a) => a.startsWith('--max-damage='))?.slice(13) ?? '0.001');
  if (!name || !Number.isFinite(maxDamage)) {
    console.error('usage: node dist/models/weight-sensitivity.js <model> [--max-damage=0.001]');
    process.exit(2);
  }
  const int8 = readSourceManifest(root).models[name]?.int8;
  if (!int8) {
    console.error(`weight-sensitivity: ${name} has no int8 entry in models/manifest.json`);
    process.exit(2);
  }
  const s = await weightSensitivity(root, name, int8);
  const total = s.convs.reduce((a, c) => a + c.macs, 0);
  console.log(`${name}: relative error against fp32, all 8-bit ${s.error8.toFixed(4)}, all 7-bit ${s.error7.toFixed(4)}`);
  console.log('damage x1000 | M multiply-adds | cumulative | convolution');
  let cumulative = 0;
  for (const c of s.convs) {
    cumulative += c.macs;
    console.log(`${(c.damage * 1000).toFixed(3)} | ${(c.macs / 1e6).toFixed(1)} | ${((cumulative / total) * 100).toFixed(0)}% | ${c.name}`);
  }
  const chosen = s.convs.filter((c) => c.damage <= maxDamage);
  const share = chosen.reduce((a, c) => a + c.macs, 0) / total;
  console.log(`sevenBitWeights (damage <= ${maxDamage}: ${chosen.length} of ${s.convs.length} convolutions, ${(share * 100).toFixed(0)}% of their multiply-adds):`);
  console.log(JSON.stringify(chosen.map((c) => c.name).sort()));
}
