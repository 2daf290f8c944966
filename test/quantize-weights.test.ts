// Weight bits of the converter's int8 files (models/convert/quantize.ts): 8-bit weights (-127..127) are the default;
// 7-bit ones (-63..63, yolov5s: models/manifest.json) keep every pair of uint8 x int8 products within 16 bits, so
// onnxruntime's fast int8 kernels cannot saturate on a CPU without VNNI and its precision mode leaves them alone
// (docs/int8.md, "CPUs without VNNI"). A one-convolution QDQ model made by the converter shows both, in
// onnxruntime-node, with inputs at the top of their range.
import * as ort from 'onnxruntime-node';
import { describe, expect, it } from 'vitest';
import { encodeOnnxModel, OnnxDataType, type OnnxModel, type OnnxTensor } from '../models/convert/onnx-writer.js';
import { integerWeightConvs, quantizeModel, quantizeWeights } from '../models/convert/quantize.js';
import { HAS_INT8_DOT_PRODUCT, ORT_PRECISION_MODE } from '../testkit/cpu-int8.js';

/** A float initializer of the test models. */
function f32(name: string, dims: number[], values: number[]): OnnxTensor {
  return { name, dataType: OnnxDataType.FLOAT, dims, raw: new Uint8Array(Float32Array.from(values).buffer) };
}

describe('quantizeWeights', () => {
  for (const [bits, max] of [
    [8, 127],
    [7, 63],
  ] as const) {
    it(`${bits} bits: per channel, the largest weight at ±${max}, every weight within ±${max} and half a step of its value`, () => {
      const w = Float32Array.from({ length: 4 * 50 }, (_, i) => Math.sin(i * 1.7) * (1 + (i % 4)));
      const { q, scales } = quantizeWeights(w, 4, bits);
      for (let c = 0; c < 4; c++) {
        const channel = Array.from(q.subarray(c * 50, (c + 1) * 50));
        expect(Math.max(...channel.map(Math.abs))).toBe(max);
        for (let i = 0; i < 50; i++) expect(Math.abs(channel[i]! * scales[c]! - w[c * 50 + i]!)).toBeLessThanOrEqual(scales[c]! / 2 + 1e-6);
      }
    });
  }
});

describe('sevenBitWeights: 7-bit weights for the named convolutions only', () => {
  // two 1x1 convolutions in a row, 'stem/conv' and 'head/conv' (the converter names a node after its output)
  const conv = (scope: string, input: string) => [
    { name: `${scope}/conv`, opType: 'Conv', inputs: [input, `${scope}/w`], outputs: [`${scope}/conv`], attributes: {} },
    { name: `${scope}/r`, opType: 'Relu', inputs: [`${scope}/conv`], outputs: [`${scope}/r`], attributes: {} },
  ];
  const model: OnnxModel = {
    producer: 'test',
    opset: 13,
    graphName: 'two_convs',
    nodes: [...conv('stem', 'x'), ...conv('head', 'stem/r'), { name: 'z', opType: 'Identity', inputs: ['head/r'], outputs: ['z'], attributes: {} }],
    initializers: [
      f32(
        'stem/w',
        [4, 4, 1, 1],
        Array.from({ length: 16 }, (_, i) => i - 7.5),
      ),
      f32(
        'head/w',
        [4, 4, 1, 1],
        Array.from({ length: 16 }, (_, i) => 7.5 - i),
      ),
    ],
    inputs: [{ name: 'x', dataType: OnnxDataType.FLOAT, shape: [1, 4, 2, 2] }],
    outputs: [{ name: 'z', dataType: OnnxDataType.FLOAT, shape: [1, 4, 2, 2] }],
  };
  const ranges = { x: { min: 0, max: 1 }, 'stem/r': { min: 0, max: 30 }, 'head/r': { min: 0, max: 300 } };
  const largestWeight = (q: OnnxModel, conv: string): number => {
    const t = q.initializers.find((i) => i.name === `${conv}/weight_q`)!;
    return Math.max(...Array.from(new Int8Array(t.raw.buffer, t.raw.byteOffset, t.raw.byteLength), Math.abs));
  };

  for (const [weightBits, sevenBitWeights, stem, head] of [
    [8, ['head/conv'], 127, 63],
    [8, ['stem/'], 63, 127],
    [8, [], 127, 127],
    [7, ['head/conv'], 63, 63],
  ] as const) {
    it(`weightBits ${weightBits}, sevenBitWeights ${JSON.stringify(sevenBitWeights)}: largest weight ${stem} in stem/conv, ${head} in head/conv`, () => {
      const q = quantizeModel(model, { ranges, weightBits, sevenBitWeights });
      expect([largestWeight(q, 'stem/conv'), largestWeight(q, 'head/conv')]).toEqual([stem, head]);
    });
  }

  it('integerWeightConvs finds the convolutions given integer weights by the graph, whatever their names', () => {
    expect(integerWeightConvs(quantizeModel(model, { ranges })).map((n) => n.name)).toEqual(['stem/conv', 'head/conv']);
    // head/conv kept float: its weight is the float initializer itself, no DequantizeLinear feeds it
    expect(integerWeightConvs(quantizeModel(model, { ranges, keepFloat: ['head/'] })).map((n) => n.name)).toEqual(['stem/conv']);
    // renamed tensors (no '/weight_dq' suffix anywhere) are still found by structure
    const q = quantizeModel(model, { ranges });
    const rename = (t: string) => t.replace('/weight_dq', '/w_int8');
    const renamed = { ...q, nodes: q.nodes.map((n) => ({ ...n, inputs: n.inputs.map(rename), outputs: n.outputs.map(rename) })) };
    expect(integerWeightConvs(renamed).map((n) => n.name)).toEqual(['stem/conv', 'head/conv']);
  });

  it('a name that matches no convolution is an error, not a silent 8-bit layer', () => {
    expect(() => quantizeModel(model, { ranges, sevenBitWeights: ['head/conv', 'neck/conv', 'stem/r'] })).toThrow(
      /no convolution named "neck\/conv", "stem\/r"/,
    );
  });
});

/**
 * One Conv over 64 channels, every weight of the same sign, in QDQ form with its input calibrated to 0..6: 1x1 into
 * one channel, or depthwise 3x3 (each channel its own).
 */
function oneConv(weightBits: 7 | 8, kind: 'pointwise' | 'depthwise' = 'pointwise'): Uint8Array {
  const channels = 64;
  const depthwise = kind === 'depthwise';
  const weights = depthwise ? [channels, 1, 3, 3] : [1, channels, 1, 1];
  const count = weights.reduce((a, b) => a * b, 1);
  const outChannels = depthwise ? channels : 1;
  const attributes: OnnxModel['nodes'][number]['attributes'] = depthwise
    ? { group: { kind: 'int', value: channels }, pads: { kind: 'ints', value: [1, 1, 1, 1] } }
    : {};
  const model: OnnxModel = {
    producer: 'test',
    opset: 13,
    graphName: 'one_conv',
    nodes: [{ name: 'conv', opType: 'Conv', inputs: ['x', 'w', 'b'], outputs: ['y'], attributes }],
    initializers: [
      f32(
        'w',
        weights,
        Array.from({ length: count }, (_, i) => 0.5 + (i % 3) * 0.25),
      ),
      f32('b', [outChannels], new Array<number>(outChannels).fill(0)),
    ],
    inputs: [{ name: 'x', dataType: OnnxDataType.FLOAT, shape: [1, channels, 4, 4] }],
    outputs: [{ name: 'z', dataType: OnnxDataType.FLOAT, shape: [1, outChannels, 4, 4] }],
  };
  // a Relu after the conv, so that the conv's output is quantized too (graph outputs stay float)
  model.nodes.push({ name: 'relu', opType: 'Relu', inputs: ['y'], outputs: ['r'], attributes: {} });
  model.nodes.push({ name: 'out', opType: 'Identity', inputs: ['r'], outputs: ['z'], attributes: {} });
  return encodeOnnxModel(quantizeModel(model, { ranges: { x: { min: 0, max: 6 }, r: { min: 0, max: depthwise ? 60 : 300 } }, weightBits }));
}

async function run(bytes: Uint8Array, exact: boolean): Promise<Float32Array> {
  const session = await ort.InferenceSession.create(bytes, { intraOpNumThreads: 1, ...(exact ? ORT_PRECISION_MODE : {}) });
  try {
    const x = new ort.Tensor('float32', new Float32Array(64 * 16).fill(6), [1, 64, 4, 4]); // uint8 255 everywhere
    return (await session.run({ x }))['z']!.data as Float32Array;
  } finally {
    await session.release();
  }
}

describe('a QDQ convolution at the top of its input range', () => {
  it("7-bit weights: the same outputs from onnxruntime's fast and exact int8 kernels, on any CPU", async () => {
    const bytes = oneConv(7);
    const fast = await run(bytes, false);
    expect(Array.from(fast)).toEqual(Array.from(await run(bytes, true)));
    // sum over 64 channels of 6 x w: about 6 x 64 x 0.75 = 288
    expect(fast[0]).toBeGreaterThan(270);
  });

  it(`8-bit weights: the fast kernels ${HAS_INT8_DOT_PRODUCT ? 'give the exact outputs (VNNI)' : 'saturate here (no VNNI), the exact ones do not'}`, async () => {
    const bytes = oneConv(8);
    const [fast, exact] = [await run(bytes, false), await run(bytes, true)];
    expect(exact[0]).toBeGreaterThan(270);
    if (HAS_INT8_DOT_PRODUCT) expect(Array.from(fast)).toEqual(Array.from(exact));
    else expect(fast[0]).toBeLessThan(exact[0]! - 10);
  });

  it('8-bit weights in a depthwise convolution: the fast kernels give the exact outputs on any CPU (so sevenBitWeights leaves depthwise ones at 8 bits)', async () => {
    const bytes = oneConv(8, 'depthwise');
    const [fast, exact] = [await run(bytes, false), await run(bytes, true)];
    // the centre pixel of channel 0: 9 taps of 6 x w, about 6 x (0.5 + 0.75 + 1.0) x 3 = 40.5
    expect(exact[5]).toBeGreaterThan(35);
    expect(Array.from(fast)).toEqual(Array.from(exact));
  });
});
