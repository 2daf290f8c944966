// Typed loader of the C++ addon (build/Release/edgecv.node). The interfaces here are the exact contract of
// native/bindings/ (addon.cc, native_engine.cc); argument validation happens in options.ts/engine.ts before anything reaches native code, and
// every option is passed explicitly (defaults live in limits.ts, not in the addon).

import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { FaceEmbeddingTimings } from './face-embedding.js';

export interface NativeAnchorLayer {
  stride: number;
  anchors: number;
}

/**
 * Which runtime runs a model: 'opencv' (OpenCV DNN, `path`), 'onnxruntime' (`ortPath`), or 'auto': onnxruntime
 * when the engine loaded it and it can drive the backend's device, else OpenCV.
 */
export type NativeRuntimeChoice = 'auto' | 'opencv' | 'onnxruntime';

/** A model's files and runtime, and the input normalization of an image model: input = (pixel - meanValue) * scale, RGB when swapRB. */
export interface NativeImageInput {
  /** ONNX file with an NCHW input, as written for OpenCV's importer. */
  path: string;
  /** The same graph as standard ONNX, for onnxruntime. */
  ortPath: string;
  runtime: NativeRuntimeChoice;
  /** Square input side in pixels. */
  inputSize: number;
  meanValue: number;
  scale: number;
  /** true: feed RGB (decoded images are BGR). */
  swapRB: boolean;
  /** 'gpu': onnxruntime's WebGPU provider runs it (the engine's backend must be gpu or auto, with an adapter). */
  device?: 'cpu' | 'gpu';
  /** On the GPU: onnxruntime's fusions on (default) or off. */
  gpuGraph?: 'optimized' | 'basic';
}

export interface NativeFaceDetectorSpec extends NativeImageInput {
  anchorLayers: NativeAnchorLayer[];
  /** Output names in anchor order: logits, one per anchor. */
  scoreOutputs: string[];
  /** Output names in anchor order: 16 regressors per anchor. */
  boxOutputs: string[];
}

export interface NativePoseEstimatorSpec extends NativeImageInput {
  /** The 6 MoveNet heads: centre, box scale, box offset, keypoint heatmap, keypoint regression, keypoint offsets. */
  outputs: string[];
}

/** An object detector of the CenterNet family (native/models/centernet_detector.h). */
export interface NativeCenterNetDetectorSpec extends NativeImageInput {
  kind: 'centernet';
  /** [1,S/4,S/4,classes], already sigmoid. */
  heatmapOutput: string;
  /** [1,S/4,S/4,4]: distances from the cell to the left, top, right and bottom box sides, in input pixels. */
  boxOutput: string;
  classes: number;
}

/** An object detector of the YOLOv5 family (native/models/yolo_detector.h). */
export interface NativeYoloDetectorSpec extends NativeImageInput {
  kind: 'yolo';
  /** 'grid': raw head convolutions [1,H,W,anchors*(5+classes)] per stride; 'decoded': one [1,N,5+classes]. */
  layout: 'grid' | 'decoded';
  /** Output names; empty for 'decoded' means the network's own (unconnected) output. */
  outputs: string[];
  /** 'grid' only: input pixels per cell of each output, and its anchors as [w, h, w, h, ...] in input pixels. */
  strides?: number[];
  anchors?: number[][];
  classes: number;
  /** Letterbox border value (YOLO_PAD_VALUE). */
  padValue: number;
  /** 'grid' only: the onnxruntime file takes any input height and width (the manifest's openInputSize). */
  openInputSize: boolean;
  /** Class-aware NMS drops a box overlapping a better one of its class by more than this IoU (YOLO_NMS_IOU). */
  iouThreshold: number;
}

/** An object detector of either family; `kind` says which. */
export type NativeObjectDetectorSpec = NativeCenterNetDetectorSpec | NativeYoloDetectorSpec;

export interface NativePoseOptions {
  scoreThreshold: number;
  maxPoses: number;
  /** >= 0: find this object class first and pose each box (top-down); -1: one whole-image pass. */
  personClassId: number;
  /** Object score above which a box is posed. */
  personThreshold: number;
}

export interface NativePose {
  score: number;
  /** [l, t, r, b] in original-image pixels. */
  box: [number, number, number, number];
  /** 17 COCO keypoints as flat [x, y, score] triples, original-image pixels. */
  keypoints: number[];
}

export interface NativePoseDetection {
  width: number;
  height: number;
  poses: NativePose[];
  timings: NativeTimings;
}

export interface NativeObjectOptions {
  scoreThreshold: number;
  maxObjects: number;
  /** Run on the person detector (the object model at a smaller input size) instead of the object model. */
  onPersonDetector: boolean;
}

export interface NativeObject {
  /** [l, t, r, b] in original-image pixels, not clipped. */
  rect: [number, number, number, number];
  classId: number;
  score: number;
}

export interface NativeObjectDetection {
  width: number;
  height: number;
  objects: NativeObject[];
  timings: NativeTimings;
}

export interface NativeFaceEmbedderSpec extends NativeImageInput {
  /** Name of the embedding output. */
  output: string;
}

export interface NativeEmbedRequest {
  detect: NativeDetectOptions;
  /** Embed this box instead of detecting. */
  rect?: [number, number, number, number];
  /** With rect: the face's 12 detector keypoint coordinates to align by (without: the detector runs to find them). */
  keypoints?: number[];
  /** Square crop side / longer side of the face box: the model's own (manifest) unless the caller chose one. */
  cropScale: number;
  keepCrop: boolean;
  /** Warp the face's landmarks onto the alignment template (false: the plain box crop). */
  align: boolean;
  /** Search a photo with no face found again, turned 45 degrees each way. */
  rotatedPasses: boolean;
  /** Searched with the snapshot taken when the call is made. */
  gallery?: NativeGallery;
}

export interface NativeGalleryMatch {
  id: number;
  subject: string;
  cosine: number;
}

export interface NativeFaceEmbedding {
  width: number;
  height: number;
  /** Highest score first. */
  faces: NativeFace[];
  face: { rect: [number, number, number, number]; score: number; rotation: number | null; sharpness: number } | null;
  embedding: Float32Array | null;
  crop: { jpeg: Buffer; rect: [number, number, number, number] } | null;
  /** null when no gallery was given or it is empty. */
  match: NativeGalleryMatch | null;
  timings: FaceEmbeddingTimings;
}

/** The addon's Gallery: updates run synchronously and swap in a new snapshot. */
export interface NativeGallery {
  add(ids: Float64Array, subjects: string[], embeddings: Float32Array): void;
  replace(ids: Float64Array, subjects: string[], embeddings: Float32Array): void;
  remove(ids: Float64Array): number;
  /** The nearest of `ids` to `query` by exact cosine (re-ranks approximate candidates); null when none is present. */
  bestOf(ids: Float64Array, query: Float32Array): NativeGalleryMatch | null;
  size(): { live: number; rows: number };
  dim(): number;
}

export interface NativeEngineOptions {
  workers: number;
  /** onnxruntime intra-op threads of each worker's sessions; also cv::setNumThreads, which is process-wide. */
  threadsPerWorker: number;
  /** 'auto': CUDA when a runtime can drive a device, else CPU; 'cuda' fails without one; 'gpu' without WebGPU. */
  backend: 'auto' | 'cpu' | 'cuda' | 'gpu';
  /** libonnxruntime to dlopen; absent: models run on OpenCV. */
  onnxRuntimeLibrary?: string;
  /** Jobs allowed to wait; more are rejected with OVERLOADED. */
  queueLimit: number;
  /** 'lend': a job alone in the engine runs its onnxruntime models on a wide session, a thread per CPU. */
  idleCores: 'lend' | 'keep';
  /** false: no warm-up run at open (native/jobs/warm_up.cc); left out: true. */
  warmUp?: boolean;
  faceDetector?: NativeFaceDetectorSpec;
  poseEstimator?: NativePoseEstimatorSpec;
  objectDetector?: NativeObjectDetectorSpec;
  /** Finds people for detectPoses' persons mode; absent: objectDetector does. */
  personDetector?: NativeObjectDetectorSpec;
  faceEmbedder?: NativeFaceEmbedderSpec;
}

export interface NativeDetectOptions {
  scoreThreshold: number;
  iouThreshold: number;
  /** 0 = whole image only; N >= 2 also runs an NxN grid of overlapping tiles. */
  tiles: number;
}

export interface NativeFace {
  /** [left, top, right, bottom) in original-image pixels, clipped to the image. */
  rect: [number, number, number, number];
  score: number;
  /** 6 (x, y) pairs, original-image pixels, not clipped. */
  keypoints: number[];
}

export interface NativeTimings {
  queueMs: number;
  decodeMs: number;
  preprocessMs: number;
  inferenceMs: number;
  postprocessMs: number;
  stages?: Record<string, number>;
}

export interface NativeFaceDetection {
  width: number;
  height: number;
  faces: NativeFace[];
  timings: NativeTimings;
}

export type NativeRuntime = 'opencv' | 'onnxruntime';

/** What the engine fused in one model's int8 graph. */
export interface FusedOps {
  /** QLinearSigmoid + QLinearMul pairs run as one 256-entry lookup. */
  siluLookups: number;
  /** Nearest Resizes by whole factors run as copies. */
  upsamples: number;
  /** QLinearConcats run as vector lookups and copies over the session's threads. */
  concats: number;
}

export interface NativeBackendInfo {
  /** 'cuda' only if a runtime can drive a CUDA device (OpenCV built with CUDA, or an onnxruntime with its CUDA provider). */
  backend: 'cpu' | 'cuda';
  /** CPU model name or CUDA device name. */
  device: string;
  /** The runtime that runs each loaded model, by spec key (faceDetector, poseEstimator, objectDetector, personDetector, faceEmbedder). */
  runtimes: Record<string, NativeRuntime>;
  /**
   * By the same keys: edgecv's own operators in the model's int8 graph (native/ops/int8_graph_fusion.h):
   * SiLUs run as one table lookup, nearest upsamplings as copies, concatenations with vector lookups. All 0 for a model with nothing to fuse,
   * on CUDA, and on CPUs without AVX-512 VBMI.
   */
  fusedOps: Record<string, FusedOps>;
  /**
   * The onnxruntime library the process loaded, or null. int8DotProduct: the CPU sums uint8 x int8 products in
   * 32 bits (x86 VNNI, or not x86); where false, int8 models with 8-bit weights run onnxruntime's exact (slower)
   * kernels instead of its fast ones, which saturate there (docs/int8.md, "CPUs without VNNI").
   */
  onnxRuntime: { version: string; path: string; cuda: boolean; webGpu: boolean; int8DotProduct: boolean } | null;
  /** By the same keys: 'gpu' for a net on the GPU (until a failure moves it), else the backend's device. */
  devices: Record<string, 'cpu' | 'cuda' | 'gpu'>;
  /** By the same keys: why a GPU net left the GPU at run time (native/runtime/gpu_sessions.h). */
  gpuLost: Record<string, string>;
  /** The Vulkan adapter, looked for with backend gpu or auto; null with cpu and cuda. */
  gpu: NativeGpuAdapter | null;
  /** Why onnxruntime is not loaded, when it is not. */
  onnxRuntimeMissing?: string;
}

export interface NativeGpuAdapter {
  found: boolean;
  /** onnxruntime's WebGPU provider can run nets on it. */
  usable: boolean;
  /** Why not, when not usable. */
  why?: string;
  vendor?: string;
  device?: string;
  driver?: string;
  /** 'discrete', 'integrated', 'virtual', 'cpu' or 'other' */
  type?: string;
  api?: string;
  /** A software rasterizer (lavapipe, llvmpipe, SwiftShader): backend auto never uses it. */
  software?: boolean;
  /** Vulkan devices the loader listed. */
  adapters: number;
}

export interface NativeStats {
  /** Jobs waiting now. */
  queued: number;
  /** Jobs executing now. */
  running: number;
  /** Jobs finished successfully since open. */
  completed: number;
  /** Jobs finished with an error (e.g. INVALID_IMAGE) since open. */
  failed: number;
  /** Calls refused by the native queue (OVERLOADED, CLOSED) since open; TS-side validation failures are not counted. */
  rejected: number;
  workers: number;
  threadsPerWorker: number;
  queueLimit: number;
  /** Inferences that ran on every core because their job was alone in the engine (idleCores 'lend'). */
  lentRuns: number;
  /**
   * Inferences since open that ran a session at an input shape it had not been warmed at: the engine warms every
   * model at every input shape it can see before open() resolves, so this stays 0 unless a shape was missed (raw
   * runModel() models load and warm on first use, and count).
   */
  coldRuns: number;
  /** Forward passes of GPU nets on the GPU, and on the CPU after the GPU failed them (docs/gpu.md). */
  gpuRuns: number;
  gpuFallbackRuns: number;
  /**
   * The warm-up at open: runs of the models at input shapes (beyond each model's own load-time runs), and the time
   * of those and of one made-up photo through every route's path on each worker.
   */
  warmUp: { runs: number; ms: number };
  /**
   * A call's large buffers (decoded photo, model input and outputs), process-wide (every engine's): a freed one is
   * kept for the next buffer of the same size, up to 64 MB idle, because a fresh one's pages must be faulted in
   * and zeroed again.
   */
  recycledBuffers: { allocated: number; reused: number; idleBytes: number };
}

export interface NativeRawModelSpec {
  /** ONNX file for `runtime`. */
  path: string;
  runtime: NativeRuntime;
  /** Input tensor shape, e.g. [1, 3, 256, 256]; the product must equal the input length. */
  inputShape: number[];
  /** Output names; the result arrays come in this order. */
  outputs: string[];
  device?: 'cpu' | 'gpu';
  gpuGraph?: 'optimized' | 'basic';
}

export interface NativeEngine {
  /** Rejects with an Error whose `.code` is OVERLOADED, INVALID_IMAGE, CLOSED, INVALID_ARGUMENT or INTERNAL. */
  detectFaces(image: Uint8Array, options: NativeDetectOptions): Promise<NativeFaceDetection>;
  detectPoses(image: Uint8Array, options: NativePoseOptions): Promise<NativePoseDetection>;
  detectObjects(image: Uint8Array, options: NativeObjectOptions): Promise<NativeObjectDetection>;
  /** One forward pass on a raw tensor (the model is loaded by each worker on first use). */
  runModel(input: Float32Array, model: NativeRawModelSpec): Promise<Float32Array[]>;
  /** Detects, picks the highest-scoring face, embeds it; searches options.gallery when given. */
  embedFace(image: Uint8Array, options: NativeEmbedRequest): Promise<NativeFaceEmbedding>;
  /** The nearest gallery entry to `query`, on a worker. */
  searchGallery(gallery: NativeGallery, query: Float32Array): Promise<{ match: NativeGalleryMatch | null; searchMs: number }>;
  /** Length of the embedding model's output; 0 without one. */
  embeddingSize(): number;
  backend(): NativeBackendInfo;
  stats(): NativeStats;
  /** How many requests the host is serving now (idle cores lend a short run only while it is 1). */
  setHostRequests(count: number): void;
  /** Lets queued jobs finish, joins the workers. Idempotent. */
  close(): Promise<void>;
}

export interface NativeBinding {
  /** Loads every model once per worker; throws an Error with a clear message if a model cannot be loaded. */
  createEngine(options: NativeEngineOptions): NativeEngine;
  /** new Gallery(dim) */
  Gallery: new (dim: number) => NativeGallery;
  opencvVersion: string;
  /** false when the addon was built without the onnxruntime headers. */
  onnxRuntimeCompiledIn: boolean;
}

let cachedRoot: string | undefined;

/**
 * The package root: the nearest ancestor directory whose package.json is named "edgecv". Works from src/ (vitest,
 * one level down) and from dist/src/ (compiled, two levels down).
 */
export function packageRoot(): string {
  if (cachedRoot !== undefined) return cachedRoot;
  let dir = path.dirname(fileURLToPath(import.meta.url));
  for (;;) {
    const pkg = path.join(dir, 'package.json');
    try {
      const parsed: unknown = JSON.parse(fs.readFileSync(pkg, 'utf8'));
      if (typeof parsed === 'object' && parsed !== null && (parsed as { name?: unknown }).name === 'edgecv') {
        cachedRoot = dir;
        return dir;
      }
    } catch {
      // no (readable) package.json here: keep walking up
    }
    const parent = path.dirname(dir);
    if (parent === dir) throw new Error(`edgecv: cannot find the package root (package.json named "edgecv") above ${fileURLToPath(import.meta.url)}`);
    dir = parent;
  }
}

export function nativeAddonPath(): string {
  return path.join(packageRoot(), 'build', 'Release', 'edgecv.node');
}

function isBinding(value: unknown): value is NativeBinding {
  return (
    typeof value === 'object' &&
    value !== null &&
    typeof (value as { createEngine?: unknown }).createEngine === 'function' &&
    typeof (value as { opencvVersion?: unknown }).opencvVersion === 'string'
  );
}

let cachedBinding: NativeBinding | undefined;

/** Loads the addon once. Throws an Error telling the user how to build it when it is missing. */
export function loadNative(): NativeBinding {
  if (cachedBinding !== undefined) return cachedBinding;
  const file = nativeAddonPath();
  if (!fs.existsSync(file)) {
    throw new Error(`edgecv: native addon not built (${file} is missing): run \`npm run setup\``);
  }
  const require = createRequire(import.meta.url);
  let loaded: unknown;
  try {
    loaded = require(file);
  } catch (e) {
    throw new Error(`edgecv: cannot load the native addon ${file}: ${(e as Error).message}; rebuild it with \`npm run build\``, {
      cause: e,
    });
  }
  if (!isBinding(loaded)) throw new Error(`edgecv: ${file} is not the edgecv addon (no createEngine export)`);
  cachedBinding = loaded;
  return loaded;
}
