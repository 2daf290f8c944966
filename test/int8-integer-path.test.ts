// int8 answers that do not depend on the CPU (docs/int8.md, "The same answers on every CPU"): every int8 file
// computes in integers from its input to its quantized layers, so that no float kernel, which rounds differently on
// AVX2, AVX-512 and ARM, feeds a quantization step. models/convert/integer-path.ts finds the float operators that
// do; set-up refuses to build such a file (models/build-models.ts).
// Tier: engine (it calibrates and runs int8 files through models/calibrate.ts)
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { convertForOnnxRuntime } from '../models/calibrate.js';
import { floatBeforeQuantize, floatOnDequantized } from '../models/convert/integer-path.js';
import { OnnxDataType, type OnnxModel, type OnnxNode } from '../models/convert/onnx-writer.js';
import { quantizeModel } from '../models/convert/quantize.js';
import type { CalibrationFile } from '../models/model-manifest.js';
import { readSourceManifest } from '../models/model-packages.js';
import { modelPrecision, readManifest } from '../src/engine/manifest.js';
import { ROOT } from './helpers.js';

const node = (name: string, opType: string, inputs: string[], outputs = [name]): OnnxNode => ({ name, opType, inputs, outputs, attributes: {} });
const scalar = (name: string) => ({ name, dataType: OnnxDataType.FLOAT, dims: [], raw: new Uint8Array(4) });

/** image -> (x - mean) * scale -> [layers] -> Q -> DQ -> integer conv -> Q -> DQ -> output, with the given layers. */
function graph(layers: OnnxNode[], last: string): OnnxModel {
  return {
    producer: 'test',
    opset: 13,
    graphName: 'g',
    inputs: [{ name: 'image', dataType: OnnxDataType.FLOAT, shape: [1, 3, 8, 8] }],
    outputs: [{ name: 'out', dataType: OnnxDataType.FLOAT, shape: [1, 3, 8, 8] }],
    initializers: ['mean', 'scale', 'w', 'qs', 'qz'].map(scalar),
    nodes: [
      node('sub', 'Sub', ['image', 'mean']),
      node('norm', 'Mul', ['sub', 'scale']),
      ...layers,
      node('q1', 'QuantizeLinear', [last, 'qs', 'qz']),
      node('dq1', 'DequantizeLinear', ['q1', 'qs', 'qz']),
      node('wq', 'DequantizeLinear', ['w', 'qs', 'qz']),
      node('intconv', 'Conv', ['dq1', 'wq']),
      node('relu', 'Relu', ['intconv']),
      node('q2', 'QuantizeLinear', ['relu', 'qs', 'qz']),
      node('dq2', 'DequantizeLinear', ['q2', 'qs', 'qz'], ['out']),
    ],
  };
}

describe('floatBeforeQuantize', () => {
  it('passes a graph that is integer from its normalized input, and names each float kernel that feeds a quantization', () => {
    expect(floatBeforeQuantize(graph([], 'norm'))).toEqual([]);
    // a float convolution on the input, then a SiLU (a sigmoid kernel and a product of two activations), then concat
    const stem = [
      node('conv', 'Conv', ['norm', 'w']),
      node('sig', 'Sigmoid', ['conv']),
      node('silu', 'Mul', ['conv', 'sig']),
      node('cat', 'Concat', ['silu', 'norm']),
    ];
    expect(
      floatBeforeQuantize(graph(stem, 'cat'))
        .map((n) => n.name)
        .sort(),
    ).toEqual(['conv', 'sig', 'silu']);
    // a float convolution on dequantized values is still a float kernel
    const onDequantized = [
      node('q0', 'QuantizeLinear', ['norm', 'qs', 'qz']),
      node('dq0', 'DequantizeLinear', ['q0', 'qs', 'qz']),
      node('fconv', 'Conv', ['dq0', 'w']),
    ];
    expect(floatBeforeQuantize(graph(onDequantized, 'fconv')).map((n) => n.name)).toEqual(['fconv']);
    // data movement and a Relu keep the values exactly
    expect(floatBeforeQuantize(graph([node('t', 'Transpose', ['norm']), node('r', 'Relu', ['t'])], 'r'))).toEqual([]);
  });
});

describe('the int8 files', () => {
  const source = readSourceManifest(ROOT);
  // Each model is converted from TF.js once and quantized once as set-up quantizes it (seconds each): several tests
  // read the same graph (quantizeModel copies what it changes, so one conversion serves a second quantization).
  const converted = new Map<string, OnnxModel>();
  const quantized = new Map<string, OnnxModel>();
  const quantize = (name: string, keepFloat?: readonly string[]) => {
    if (!keepFloat && quantized.has(name)) return quantized.get(name)!;
    const int8 = source.models[name]!.int8!;
    const calibration = JSON.parse(readFileSync(join(ROOT, 'models', 'calibration', `${name}.json`), 'utf8')) as CalibrationFile;
    if (!converted.has(name)) converted.set(name, convertForOnnxRuntime(ROOT, name).converted.model);
    const model = quantizeModel(converted.get(name)!, {
      ranges: calibration.ranges,
      keepFloat: keepFloat ?? int8.keepFloat ?? [],
      keepOutputConvs: int8.keepOutputConvs ?? false,
      weightBits: int8.weightBits ?? 8,
      sevenBitWeights: int8.sevenBitWeights ?? [],
    });
    if (!keepFloat) quantized.set(name, model);
    return model;
  };

  const int8Models = Object.entries(source.models)
    .filter(([, m]) => m.int8)
    .map(([name]) => name);
  it('are the four models docs/int8.md names', () => {
    expect(int8Models.sort()).toEqual(['faceres', 'movenet-multipose', 'yolov5s', 'yolov5s-320']);
  });

  for (const name of int8Models) {
    it(`${name}: integer from its input to its last quantized layer`, () => {
      expect(floatBeforeQuantize(quantize(name)).map((n) => n.name)).toEqual([]);
    }, 60_000);
  }

  it('yolov5s-320 with its stem, second conv and first C3 block kept fp32 (the file that gave other answers on AVX-512 and arm64) is refused', () => {
    const float = floatBeforeQuantize(
      quantize('yolov5s-320', [
        'StatefulPartitionedCall/model/tf_conv/',
        'StatefulPartitionedCall/model/tf_conv_1/',
        'StatefulPartitionedCall/model/tfc3/',
      ]),
    );
    expect(float.filter((n) => n.opType === 'Conv').map((n) => n.name)).toContain('StatefulPartitionedCall/model/tf_conv/sequential/conv2d/BiasAdd');
    expect(float.length).toBeGreaterThan(10);
  }, 60_000);

  it('movenet-multipose alone upsamples in float between integer layers: int8 by default on x64 only, fp32 on arm64', async () => {
    const upsampling = Object.fromEntries(int8Models.map((name) => [name, floatOnDequantized(quantize(name)).map((n) => n.opType)]));
    expect(upsampling).toEqual({ faceres: [], 'movenet-multipose': ['Resize', 'Resize', 'Resize'], yolov5s: [], 'yolov5s-320': [] });
    const manifest = await readManifest(join(ROOT, 'models', 'onnx'));
    for (const name of int8Models) {
      const onArm = modelPrecision(manifest, name, 'int8', 'auto', 'arm64');
      expect([name, modelPrecision(manifest, name, 'int8', 'auto', 'x64'), onArm]).toEqual([
        name,
        'int8',
        name === 'movenet-multipose' ? 'fp32' : 'int8',
      ]);
      expect(modelPrecision(manifest, name, 'fp32', 'auto', 'x64')).toBe('fp32');
    }
  }, 60_000);
});
