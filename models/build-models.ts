// Converts every model in models/manifest.json from the TF.js package to ONNX and writes
// <outDir>/manifest.json. Run by set-up: `node dist/models/build-models.js [outDir]`.
import { createHash } from 'node:crypto';
import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { floatBeforeQuantize, floatOnDequantized } from './convert/integer-path.js';
import { nhwcHeads } from './convert/nhwc-heads.js';
import { encodeOnnxModel, type OnnxModel } from './convert/onnx-writer.js';
import { openInputSize } from './convert/open-input-size.js';
import { quantizeModel } from './convert/quantize.js';
import { convertTfjsToOnnx, type OnnxTarget } from './convert/tf-to-onnx.js';
import { loadTfjsGraph } from './convert/tfjs-graph.js';
import {
  CONVERTER_VERSION,
  type ConvertedManifest,
  type CalibrationFile,
  type ConvertedModelEntry,
  type Int8Entry,
  type SourceModel,
} from './model-manifest.js';
import { findRoot, modelPackage, readSourceManifest, type ModelPackage } from './model-packages.js';

function sha256(data: Uint8Array): string {
  return createHash('sha256').update(data).digest('hex');
}

function writeAtomic(path: string, data: Uint8Array | string): void {
  writeFileSync(`${path}.tmp`, data);
  renameSync(`${path}.tmp`, path);
}

/**
 * The int8 (QDQ) onnxruntime file of a model whose source entry asks for one, from its committed calibration
 * (models/calibration/<name>.json): `graph` (the onnxruntime fp32 graph) quantized. Null, with a warning, when the
 * calibration was measured on another fp32 graph than the converted square one (`squareBytes`).
 */
function quantizeConverted(root: string, name: string, model: SourceModel, squareBytes: Uint8Array, graph: OnnxModel, outDir: string): Int8Entry | null {
  const file = join(root, 'models', 'calibration', `${name}.json`);
  const calibration = JSON.parse(readFileSync(file, 'utf8')) as CalibrationFile;
  const fp32Sha256 = sha256(squareBytes);
  if (calibration.fp32Sha256 !== fp32Sha256) {
    console.warn(`models: ${name}: ${file} was measured on another fp32 graph; no int8 file (run node dist/models/calibrate.js ${name})`);
    return null;
  }
  const keepFloat = model.int8?.keepFloat ?? [];
  const keepOutputConvs = model.int8?.keepOutputConvs ?? false;
  const weightBits = model.int8?.weightBits ?? 8;
  if (weightBits !== 7 && weightBits !== 8) throw new Error(`model "${name}": int8.weightBits must be 7 or 8`);
  const sevenBitWeights = model.int8?.sevenBitWeights ?? [];
  const qdq = quantizeModel(graph, { ranges: calibration.ranges, keepFloat, keepOutputConvs, weightBits, sevenBitWeights });
  const { model: quantized, rewritten: nhwcHeadOutputs } = model.int8?.nhwcHeads ? nhwcHeads(qdq) : { model: qdq, rewritten: [] };
  if (model.int8?.nhwcHeads && nhwcHeadOutputs.length === 0) throw new Error(`model "${name}": int8.nhwcHeads is set, but no head ends in a float pointwise convolution`);
  const float = floatBeforeQuantize(quantized);
  if (float.length > 0) {
    throw new Error(
      `model "${name}": its int8 graph computes in float before quantizing (${float.length} nodes: ${float.slice(0, 3).map((n) => n.name).join(', ')}, ...), ` +
        'so its answers would depend on the CPU: keep fp32 only layers after the last quantized one (docs/int8.md, "The same answers on every CPU")',
    );
  }
  const bytes = encodeOnnxModel(quantized);
  const ortFile = `${name}.int8.ort.onnx`;
  writeAtomic(join(outDir, ortFile), bytes);
  const { scoreThreshold, personThreshold } = model.int8 ?? {};
  return {
    ortFile,
    sha256: sha256(bytes),
    calibration: { method: calibration.method, photos: calibration.photos, inputs: calibration.inputs },
    weightBits,
    ...(sevenBitWeights.length > 0 ? { sevenBitWeights } : {}),
    keepFloat,
    ...(keepOutputConvs ? { keepOutputConvs } : {}),
    ...(nhwcHeadOutputs.length > 0 ? { nhwcHeads: nhwcHeadOutputs } : {}),
    ...(scoreThreshold === undefined ? {} : { scoreThreshold }),
    ...(personThreshold === undefined ? {} : { personThreshold }),
    // scored on x64 (the project's machines); a float upsampling on dequantized values rounds otherwise on ARM
    ...(floatOnDequantized(quantized).length > 0 ? { architectures: ['x64'] } : {}),
  };
}

export function convertModel(name: string, model: SourceModel, pkg: ModelPackage, outDir: string, root = findRoot()): ConvertedModelEntry {
  const jsonPath = join(pkg.dir, model.source);
  const graph = loadTfjsGraph(jsonPath);
  const modelJson = readFileSync(jsonPath);
  const shards = (JSON.parse(modelJson.toString('utf8')) as { weightsManifest: { paths: string[] }[] }).weightsManifest.flatMap((g) => g.paths);
  const files: Record<OnnxTarget, string> = { opencv: `${name}.opencv.onnx`, ort: `${name}.ort.onnx` };
  let converted: ReturnType<typeof convertTfjsToOnnx> | undefined;
  let opencvSha = '';
  for (const target of ['opencv', 'ort'] as const) {
    converted = convertTfjsToOnnx(graph, { input: model.input, outputs: model.outputs, target, graphName: name });
    if (target === 'opencv') {
      writeAtomic(join(outDir, files.opencv), converted.bytes);
      opencvSha = sha256(converted.bytes);
    }
  }
  if (!converted) throw new Error('unreachable');
  // onnxruntime's graph: the square one, or that with its input size opened (the fp32 and the int8 file alike)
  const ortGraph = model.openInputSize ? openInputSize(converted.model, converted.resizeInputs) : converted.model;
  const ortBytes = ortGraph === converted.model ? converted.bytes : encodeOnnxModel(ortGraph);
  writeAtomic(join(outDir, files.ort), ortBytes);
  const int8 = model.int8 ? quantizeConverted(root, name, model, converted.bytes, ortGraph, outDir) : null;
  const { source, task, input, outputs, package: _package, int8: _int8, ...extra } = model;
  return {
    ...extra,
    ...(int8 ? { int8 } : {}),
    task,
    file: files.opencv,
    ortFile: files.ort,
    sha256: opencvSha,
    // the engine checks every file it loads against these (src/engine/model-integrity.ts)
    ortSha256: sha256(ortBytes),
    source: {
      package: pkg.name,
      version: pkg.version,
      licence: pkg.licence,
      file: source,
      sha256: sha256(modelJson),
      weightsSha256: shards.map((s) => sha256(readFileSync(join(dirname(jsonPath), s)))),
    },
    input: { name: input.name, shape: converted.inputShape, layout: 'NCHW', color: input.color, mean: input.mean, scale: input.scale, tfNode: input.node },
    outputs: converted.outputs.map((o, i) => ({ ...o, tfNode: outputs[i].node })),
  };
}

export function buildModels(outDir: string, only?: string[]): ConvertedManifest {
  const root = findRoot();
  const manifest = readSourceManifest(root);
  mkdirSync(outDir, { recursive: true });
  const result: ConvertedManifest = { converter: CONVERTER_VERSION, models: {} };
  for (const [name, model] of Object.entries(manifest.models)) {
    if (only && !only.includes(name)) continue;
    const started = performance.now();
    result.models[name] = convertModel(name, model, modelPackage(root, manifest, model.package), outDir, root);
    console.log(`models: ${name} -> ${result.models[name].file} (${(performance.now() - started).toFixed(0)} ms)`);
  }
  writeAtomic(join(outDir, 'manifest.json'), `${JSON.stringify(result, null, 2)}\n`);
  return result;
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const outDir = resolve(process.argv[2] ?? join(findRoot(), 'models', 'onnx'));
  try {
    buildModels(outDir);
  } catch (err) {
    console.error(`models: conversion failed: ${(err as Error).message}`);
    process.exit(1);
  }
}
