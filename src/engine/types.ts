// The engine's public types: the option and result shapes of every call, and the choice lists they are made of.
// Defaults and ranges live in limits.ts; checks in options.ts.

import type { ImageFormat } from './image-header.js';
import type { NativeBackendInfo, NativeRuntimeChoice, NativeStats } from './native.js';
import type { Body25Point } from './pose.js';
import { OBJECT_DETECTOR_MODELS, type ObjectDetectorModel, type ObjectModelInfo } from './object-model.js';

export const RUNTIMES = ['auto', 'onnxruntime', 'opencv'] as const;
export type RuntimeChoice = NativeRuntimeChoice;
export const BACKENDS = ['auto', 'cpu', 'cuda', 'gpu'] as const;
/** The nets of an engine, by the keys of backend().runtimes. */
export const NET_KEYS = ['faceDetector', 'faceEmbedder', 'poseEstimator', 'objectDetector', 'personDetector'] as const;
export type NetKey = (typeof NET_KEYS)[number];
/** A net's device with backend 'gpu' or 'auto': 'auto' lets the GPU check decide (gpu-check.ts). */
export const NET_DEVICES = ['auto', 'cpu', 'gpu'] as const;
export type NetDevice = (typeof NET_DEVICES)[number];
/** A GPU net's graph: onnxruntime's fusions on ('optimized') or off ('basic'). */
export type GpuGraph = 'optimized' | 'basic';

export type GpuCheckCode = 'agrees' | 'disagrees' | 'slower' | 'forced' | 'no-gpu' | 'software' | 'own-model';

/** Where the GPU check put one net, and why (backend().gpuChecks). */
export interface GpuNetCheck {
  device: 'cpu' | 'gpu';
  /** The reason in one word (a Prometheus label): agrees, disagrees, slower, forced, no-gpu, software, own-model. */
  code: GpuCheckCode;
  reason: string;
  graph?: GpuGraph;
  /** Worst output's cosine of GPU against CPU on the check's input, and largest difference over the output's range. */
  cosine?: number;
  maxRelativeError?: number;
  /** 'auto': median ms of the net on each device. */
  gpuMs?: number;
  cpuMs?: number;
}
/** 'lend': a job alone in the engine runs on every core; 'keep': each job keeps to its worker's threads. */
export const IDLE_CORES = ['lend', 'keep'] as const;
export type IdleCoresChoice = (typeof IDLE_CORES)[number];
export type BackendChoice = (typeof BACKENDS)[number];

export const FACE_EMBEDDER_MODELS = ['faceres-deep', 'faceres', 'mobilefacenet', 'mobileface'] as const;
export type FaceEmbedderModel = (typeof FACE_EMBEDDER_MODELS)[number];

export const FACE_DETECTOR_MODELS = ['blazeface-back', 'facemesh-detection-full'] as const;
export type FaceDetectorModel = (typeof FACE_DETECTOR_MODELS)[number];

/** MoveNet MultiPose at its exported 256 px input, and converted at larger inputs (small people in wide frames). */
export const POSE_MODELS = ['movenet-multipose', 'movenet-multipose-384', 'movenet-multipose-512'] as const;
export type PoseModel = (typeof POSE_MODELS)[number];

export { OBJECT_DETECTOR_MODELS, type ObjectDetectorModel, type ObjectModelInfo };

/** 'int8': each model with an int8 file (its accuracy held, docs/int8.md) runs it on onnxruntime; 'fp32': none does. */
export const PRECISIONS = ['int8', 'fp32'] as const;
export type Precision = (typeof PRECISIONS)[number];
/** What Engine.open takes: a precision, or 'auto' (each model's faster form on this CPU, timed at open). */
export const PRECISION_CHOICES = ['int8', 'fp32', 'auto'] as const;
export type PrecisionChoice = (typeof PRECISION_CHOICES)[number];

/** precision 'auto': one model's median forward pass in each form, timed at open, and the form chosen. */
export interface PrecisionTiming {
  int8Ms: number;
  fp32Ms: number;
  /** Timed runs of each form. */
  runs: number;
  chosen: Precision;
}

export const POSE_MODES = ['persons', 'whole'] as const;
export type PoseMode = (typeof POSE_MODES)[number];

export interface EngineModels {
  faceDetector: FaceDetectorModel;
  pose: PoseModel | null;
  /** A built-in model's name, or the file name of an operator's own model. */
  objects: string | null;
  /** The model that finds people for detectPoses' persons mode: the person detector, else `objects`. */
  persons: string | null;
  faceEmbedder: FaceEmbedderModel | null;
}

export interface EngineOptions {
  /** Directory with manifest.json and the converted models. Default: <package root>/models/onnx. */
  modelDir?: string;
  /**
   * Which runtime runs the models: 'onnxruntime' (fails when it cannot load), 'opencv' (OpenCV DNN), or 'auto'
   * (default): onnxruntime when its library loads and can drive the device, else OpenCV.
   */
  runtime?: RuntimeChoice;
  /**
   * 'int8' (default): models with an int8 file (yolov5s, its person detector, ...: the manifest's `int8` entries)
   * run it on onnxruntime; a model keeps its name and fp32 input. 'fp32': every model runs its fp32 file.
   * OpenCV always runs fp32. 'auto': each model with both files runs the one that was faster on this CPU, timed
   * a few runs each at open (backend().precisionTimings has the figures; docs/int8.md, "precision auto").
   */
  precision?: PrecisionChoice;
  /**
   * 'cpu' (Vulkan untouched), 'cuda' (fails without a usable CUDA device), 'gpu' (onnxruntime's WebGPU provider over
   * Vulkan; fails without it or an adapter: each net that agrees with the CPU runs there, docs/gpu.md) or 'auto'
   * (default: EDGECV_BACKEND, else CUDA when usable, else each net that agrees and is faster on a hardware Vulkan GPU).
   */
  backend?: BackendChoice;
  /** With backend 'gpu' or 'auto': nets forced to a device ('cpu' or 'gpu'), by key; the rest 'auto' (the check decides). */
  netDevices?: Partial<Record<NetKey, NetDevice>>;
  /** The onnxruntime library to load; default: EDGECV_ONNXRUNTIME_LIB, else the one onnxruntime-node ships. */
  onnxRuntimeLibrary?: string;
  /** Worker threads, each with its own copy of every model. Default 2. */
  workers?: number;
  /**
   * Compute threads of one inference: onnxruntime's intra-op threads per worker session, and OpenCV's threads
   * (cv::setNumThreads is process-wide). Threads in use are about workers x threadsPerWorker. Default 1.
   */
  threadsPerWorker?: number;
  /**
   * 'lend' (default): while a job is the only one in the engine, its long onnxruntime inferences (models whose
   * fastest run on the worker's threads takes 10 ms or more: yolov5s, movenet) run on a second session of the
   * model with a thread per usable CPU instead of its worker's threads (docs/performance.md, "Idle cores are
   * lent"; concurrent jobs keep their own threads, so throughput stays); its short ones too while the host marks
   * that one request as the only one it serves (serveRequest(); the HTTP server does). It costs a second session
   * of each model (memory).
   * 'keep': always the worker's threads. No effect on OpenCV models, on CUDA, or when threadsPerWorker covers
   * every CPU.
   */
  idleCores?: IdleCoresChoice;
  /**
   * false: open() skips running every model at every input shape a camera gives it, and a made-up photo through
   * every route (so the first calls pay that, counted in stats().coldRuns). For tests and tools that do not measure
   * the first request; a server keeps the default, true.
   */
  warmUp?: boolean;
  /**
   * Called as each phase of open() ends, with its time (src/engine/startup-phases.ts): 'model files' (the manifest
   * read, each file checked against its sha256), 'GPU check' (backend gpu or auto with onnxruntime), 'precision
   * timing' (precision auto), 'models loaded' (every worker's copy, with each model's runs at its own input size)
   * and 'warm-up' (unless warmUp is false). `edgecv serve` logs each one.
   */
  onStartupPhase?: (phase: StartupPhase) => void;
  /** Jobs allowed to wait for a worker; beyond that calls reject at once with OVERLOADED. Default 64. */
  queueLimit?: number;
  /** Images with more pixels (from the header) are rejected with IMAGE_TOO_LARGE. Default 40,000,000. */
  maxPixels?: number;
  /** Images whose longer side exceeds this many times the shorter one are rejected with INVALID_IMAGE. Default 32. */
  maxAspectRatio?: number;
  /** Images with a side shorter than this are rejected with INVALID_IMAGE. Default 8. */
  minImageSide?: number;
  /** Face detection model. Default 'facemesh-detection-full'. */
  faceDetector?: FaceDetectorModel;
  /** Face embedding model for recognition, or null for none. Default 'faceres'. */
  faceEmbedder?: FaceEmbedderModel | null;
  /**
   * false: every face is embedded as the plain box crop, not aligned by its landmarks (benches that measure what
   * alignment costs; the embedder's version says so, so such vectors never mix with an aligned gallery's). Default true.
   */
  faceAlignment?: boolean;
  /** Pose model, or null to load none (detectPoses then rejects). Default 'movenet-multipose'. */
  poseModel?: PoseModel | null;
  /**
   * Object detection model, or null to load none (detectObjects then rejects). Default 'yolov5s'.
   * A path to an .onnx file loads an operator's own YOLO export (YOLOv5 output layout [1,N,5+classes]).
   */
  objectDetector?: ObjectDetectorModel | string | null;
  /**
   * The model that finds people for detectPoses' persons mode, loaded beside the object model; null: the object
   * model does it (no second model). Default 'yolov5s-320' when objectDetector is a stock yolov5s of another size
   * (on the labelled set it finds people within one of yolov5s at 640, in a fraction of the time: docs/models.md),
   * else null.
   * Not loaded without a pose model.
   */
  personDetector?: ObjectDetectorModel | null;
  /** With an own model: its class names, one per line (default: the 80 COCO classes). */
  objectLabels?: string;
  /** With an own model: its square input side, a multiple of 32. Default 640. */
  objectInputSize?: number;
}

export type StartupPhaseName = 'model files' | 'GPU check' | 'precision timing' | 'models loaded' | 'warm-up';

/** A phase of Engine.open (EngineOptions.onStartupPhase). */
export interface StartupPhase {
  name: StartupPhaseName;
  ms: number;
  /** What it did, in words: files hashed, the GPU's verdict, models and workers, warm-up runs. */
  detail: string;
}

export interface DetectPosesOptions {
  /** Minimum person score (0..1): centre score x mean of its confident keypoint scores. Default 0.2, 0.05 with mode persons. */
  scoreThreshold?: number;
  /** Keypoints scoring below this (0..1) are [0, 0, 0] in `body25`. Default 0.3. */
  keypointThreshold?: number;
  /**
   * 'persons' (default when the engine has an object model with a "person" class): find people with the object
   * detector, then pose each in a crop around its box, so small and crowded people are found. 'whole': one
   * pass of the pose model over the whole image (faster; the model sees at most 6 people).
   */
  mode?: PoseMode;
  /** Most people to return, 1 to 20. Default 20 with mode 'persons', 6 (the model's own top-k) with 'whole'. */
  maxPoses?: number;
}

export interface PoseKeypoint {
  /** Image pixels, not clipped. */
  x: number;
  y: number;
  /** 0..1 */
  score: number;
}

export interface Pose {
  /** 0..1: the centre score times the mean score of the keypoints above the model's own 0.127. */
  score: number;
  /** The model's box of the person, [left, top, right, bottom] in image pixels. */
  box: [number, number, number, number];
  /** The 17 COCO keypoints (COCO_KEYPOINTS order), every one, whatever its score. */
  keypoints: PoseKeypoint[];
  /** The same pose in the BODY_25 layout, keypoints under keypointThreshold as [0, 0, 0]. */
  body25: Body25Point[];
}

export interface PoseDetection {
  width: number;
  height: number;
  format: ImageFormat;
  /** Best first. */
  poses: Pose[];
  timings: DetectionTimings;
}

export interface DetectObjectsOptions {
  /** Minimum score (0..1). Default 0.3 with a YOLO model, 0.2 with centernet (OBJECT_DEFAULTS). */
  scoreThreshold?: number;
  /** Most objects to return, 1 to 1000. Default 100 (the model's own top-k). */
  maxObjects?: number;
}

export interface DetectedObject {
  /** [left, top, right, bottom] in image pixels, not clipped: a box crossing the image edge goes past it. */
  rect: [number, number, number, number];
  /** A COCO class name (COCO_CLASSES), or a label of an operator's own model. */
  className: string;
  /** Index in COCO_CLASSES (or in the own model's labels). */
  classId: number;
  /** 0..1 */
  score: number;
}

export interface ObjectDetection {
  width: number;
  height: number;
  format: ImageFormat;
  /** Best first. */
  objects: DetectedObject[];
  timings: DetectionTimings;
}

export interface DetectFacesOptions {
  /** Minimum score (0..1) of a face. Default 0.6. */
  scoreThreshold?: number;
  /** IoU (0..1) above which detections are merged by weighted NMS. Default 0.3. */
  iouThreshold?: number;
  /**
   * 0 = whole image only. N >= 2: also an NxN grid of overlapping tiles (for small faces in large
   * images), merged with the whole-image pass; costs N*N extra inferences; at most 8.
   * 'auto' (default): chosen from the image size, see autoTiles().
   */
  tiles?: number | 'auto';
}

export interface Face {
  /** [left, top, right, bottom) in pixels of the (EXIF-oriented) image, clipped to it: width = right - left. */
  rect: [number, number, number, number];
  /** 0..1 */
  score: number;
  /**
   * 12 numbers: (x, y) of right eye, left eye, nose tip, mouth centre, right ear tragion, left ear tragion
   * (MediaPipe order; "right" is the subject's right), in image pixels, not clipped.
   */
  keypoints: number[];
}

export interface DetectionTimings {
  /** Waiting for a worker. */
  queueMs: number;
  /** Decoding the image: every decode of it (pose may decode a JPEG a second time, larger, for small people). */
  decodeMs: number;
  /** Letterbox resize + blob. */
  preprocessMs: number;
  /** net.forward (all passes when tiling). */
  inferenceMs: number;
  /** Decoding, NMS, mapping back to image pixels. */
  postprocessMs: number;
  /**
   * detectPoses() only: each model's part of the three sums above. personPreprocessMs, personInferenceMs,
   * personPostprocessMs (the person detector; 0 in 'whole' mode), posePreprocessMs (the crops and MoveNet's
   * letterbox), poseInferenceMs, posePostprocessMs, posePasses (MoveNet runs: one per person, or 1), and decodes
   * (of the image: 2 when the crops need a larger copy of a baseline JPEG; a progressive one is decoded once).
   */
  stages?: Record<string, number>;
}

export interface FaceDetection {
  /** Decoded image size (after EXIF orientation). */
  width: number;
  height: number;
  format: ImageFormat;
  faces: Face[];
  timings: DetectionTimings;
}

/** The device in use ('cuda' only where a runtime can drive one) and the runtime of each model. */
export type BackendInfo = NativeBackendInfo & {
  /** The precision each loaded model runs at, by the same keys as `runtimes`. */
  precisions: Record<string, Precision>;
  /**
   * With precision 'auto', by the same keys, for each model that has both files: the median ms of a forward pass
   * of each form on one worker at open, and the one chosen. Absent otherwise.
   */
  precisionTimings?: Record<string, PrecisionTiming>;
  /** With backend 'gpu' or 'auto' on a machine with a usable Vulkan adapter: each net's GPU check (gpu-check.ts). */
  gpuChecks?: Partial<Record<NetKey, GpuNetCheck>>;
};

/** Queue and job counters of the engine's worker pool. */
export type EngineStats = NativeStats;
