// Float pointwise heads as channels-last products (models/convert/nhwc-heads.ts): on a small QDQ graph shaped like
// movenet-multipose's heads, the rewritten graph gives onnxruntime-node the same outputs as the convolutions it
// replaces, keeps what it must not touch, and the converted movenet-multipose int8 file records its six heads.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import * as ort from 'onnxruntime-node';
import { describe, expect, it } from 'vitest';
import type { ConvertedManifest } from '../models/model-manifest.js';
import { nhwcHeads } from '../models/convert/nhwc-heads.js';
import { encodeOnnxModel, OnnxDataType, type OnnxModel, type OnnxNode } from '../models/convert/onnx-writer.js';
import { tensor } from '../models/convert/graph-index.js';
import { ROOT } from './helpers.js';

const C_IN = 4;
const SIDE = 8;

/** Deterministic values in -1..1. */
function values(n: number, seed: number): Float32Array {
  return new Float32Array(n).map((_, i) => (((i + 1) * 2654435761 * seed) % 2000) / 1000 - 1);
}

function conv(name: string, input: string, cout: number, cin: number, attributes: OnnxNode['attributes'] = {}, kernel = 1) {
  return {
    node: { name, opType: 'Conv', inputs: [input, `${name}/w`, `${name}/b`], outputs: [name], attributes } as OnnxNode,
    inits: [
      tensor(`${name}/w`, OnnxDataType.FLOAT, [cout, cin, kernel, kernel], values(cout * cin * kernel * kernel, cout + 7)),
      tensor(`${name}/b`, OnnxDataType.FLOAT, [cout], values(cout, cout + 3)),
    ],
  };
}

const toNhwc = (input: string, output: string): OnnxNode => ({
  name: `${output}/t`,
  opType: 'Transpose',
  inputs: [input],
  outputs: [output],
  attributes: { perm: { kind: 'ints', value: [0, 2, 3, 1] } },
});

/** x -> Q -> DQ -> three heads: conv+relu+conv, one conv, and a 3x3 conv (not pointwise: left alone). */
function headsModel(): OnnxModel {
  const a1 = conv('a1', 'dq', 6, C_IN);
  const a2 = conv('a2', 'a1/relu', 3, 6);
  const b = conv('b', 'dq', 2, C_IN);
  const c = conv('c', 'dq', 2, C_IN, { pads: { kind: 'ints', value: [1, 1, 1, 1] } }, 3);
  return {
    producer: 'test',
    opset: 13,
    graphName: 'heads',
    nodes: [
      { name: 'q', opType: 'QuantizeLinear', inputs: ['x', 's', 'z'], outputs: ['q'], attributes: {} },
      { name: 'dq', opType: 'DequantizeLinear', inputs: ['q', 's', 'z'], outputs: ['dq'], attributes: {} },
      a1.node,
      { name: 'a1/relu', opType: 'Relu', inputs: ['a1'], outputs: ['a1/relu'], attributes: {} },
      a2.node,
      toNhwc('a2', 'A'),
      b.node,
      toNhwc('b', 'B'),
      c.node,
      toNhwc('c', 'C'),
    ],
    initializers: [
      tensor('s', OnnxDataType.FLOAT, [], new Float32Array([2 / 255])),
      tensor('z', OnnxDataType.UINT8, [], new Uint8Array([128])),
      ...a1.inits,
      ...a2.inits,
      ...b.inits,
      ...c.inits,
    ],
    inputs: [{ name: 'x', dataType: OnnxDataType.FLOAT, shape: [1, C_IN, SIDE, SIDE] }],
    outputs: ['A', 'B', 'C'].map((name, i) => ({ name, dataType: OnnxDataType.FLOAT, shape: [1, SIDE, SIDE, [3, 2, 2][i]!] })),
  };
}

async function run(model: OnnxModel, x: Float32Array): Promise<Record<string, Float32Array>> {
  const session = await ort.InferenceSession.create(encodeOnnxModel(model), { intraOpNumThreads: 1 });
  try {
    const out = await session.run({ x: new ort.Tensor('float32', x, [1, C_IN, SIDE, SIDE]) });
    return Object.fromEntries(Object.entries(out).map(([k, v]) => [k, v.data as Float32Array]));
  } finally {
    await session.release();
  }
}

describe('float pointwise heads as channels-last products', () => {
  it('rewrites the pointwise heads, leaves the 3x3 one, and gives the same outputs', async () => {
    const model = headsModel();
    const { model: rewritten, rewritten: outputs } = nhwcHeads(model);
    expect(outputs).toEqual(['A', 'B']);
    const ops = rewritten.nodes.map((n) => n.opType);
    expect(ops.filter((o) => o === 'Conv')).toHaveLength(1); // the 3x3 head
    expect(ops.filter((o) => o === 'MatMul')).toHaveLength(3);
    expect(rewritten.nodes.find((n) => n.outputs[0] === 'A')?.opType).toBe('Add');
    const x = values(C_IN * SIDE * SIDE, 5);
    const [before, after] = [await run(model, x), await run(rewritten, x)];
    for (const name of ['A', 'B', 'C']) {
      expect(after[name]!.length).toBe(before[name]!.length);
      const worst = Math.max(...before[name]!.map((v, i) => Math.abs(v - after[name]![i]!)));
      expect(worst, name).toBeLessThan(1e-5);
    }
  });

  it('leaves a head whose convolution feeds anything else', () => {
    const model = headsModel();
    const shared: OnnxModel = {
      ...model,
      nodes: [...model.nodes, { name: 'extra', opType: 'Relu', inputs: ['b'], outputs: ['E'], attributes: {} }],
      outputs: [...model.outputs, { name: 'E', dataType: OnnxDataType.FLOAT, shape: [1, 2, SIDE, SIDE] }],
    };
    expect(nhwcHeads(shared).rewritten).toEqual(['A']);
  });

  it('movenet-multipose int8: its six float heads are channels-last products', () => {
    const manifest = JSON.parse(readFileSync(join(ROOT, 'models', 'onnx', 'manifest.json'), 'utf8')) as ConvertedManifest;
    expect(manifest.models['movenet-multipose']?.int8?.nhwcHeads?.sort()).toEqual([
      'box_offset_0',
      'box_scale_0',
      'center_0',
      'kpt_heatmap_0',
      'kpt_offset_0',
      'kpt_regress_0',
    ]);
  });
});
