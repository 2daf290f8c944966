// Every default and every accepted range of the engine's options, and the server's request body limit: the one
// definition of each. The engine validates against these and always passes every value to the native addon
// explicitly, so the addon holds no defaults of its own and checks only what memory safety needs.

import type { ImageLimits } from './image-admission.js';
import type { ObjectDetectorModel } from './object-model.js';
import type { BackendChoice, FaceDetectorModel, FaceEmbedderModel, IdleCoresChoice, PoseMode, PoseModel, Precision, RuntimeChoice } from './types.js';

/** The accepted range of an integer option, both ends included. */
export interface IntRange {
  readonly min: number;
  readonly max: number;
}

/** The largest number of people one image can yield by default: MoveNet MultiPose's own top-k. */
export const MAX_POSES = 6;

/** Largest accepted maxPoses: the centre heatmap has room for more peaks than the model's own top-k of 6. */
export const MAX_POSES_LIMIT = 20;

/** Largest accepted `tiles` (an NxN grid costs N*N + 1 inferences). */
export const MAX_TILES = 8;

/** With tiles 'auto', one tile grid step per this many pixels of the image's longer side. */
export const AUTO_TILE_PIXELS = 960;
export const AUTO_MAX_TILES = 4;

/** Largest request body the server reads, bytes (--body-limit). */
export const DEFAULT_BODY_LIMIT = 20 * 1024 * 1024;

/** What admitImage() refuses, by default (engine options maxPixels, maxAspectRatio, minImageSide). */
export const IMAGE_LIMIT_DEFAULTS = {
  maxPixels: 40_000_000,
  // Every model letterboxes to a square input: at 32:1 the picture is already a 4-pixel strip of a 128-pixel
  // input, and a 65500x1 "image" would cost recognition seconds and gigabytes (docs/http-api.md, "Hostile input").
  maxAspectRatio: 32,
  // Nothing a face, pose or object model finds fits in fewer pixels.
  minSide: 8,
} as const satisfies ImageLimits;

/** Default input side of an operator's own YOLO model (YOLOv5's export default). */
export const CUSTOM_OBJECT_INPUT_SIZE = 640;

/** Letterbox border of YOLO models: the grey YOLOv5 trains with. */
export const YOLO_PAD_VALUE = 114;

/** YOLO models' class-aware NMS drops a box overlapping a better one of its class by more than this IoU (YOLOv5's own). */
export const YOLO_NMS_IOU = 0.45;

/** Defaults; workers/threadsPerWorker are for a 2-core box and are to be tuned by the bench. */
export const ENGINE_DEFAULTS = {
  // 'auto': onnxruntime where it loaded (faster than OpenCV 4.6 DNN on every model: docs/performance.md,
  // "Engine speed"), else OpenCV.
  runtime: 'auto' as RuntimeChoice,
  // int8 files run faster on onnxruntime at the same accuracy on the labelled sets (docs/int8.md, "Speed", "Accuracy").
  precision: 'int8' as Precision,
  backend: 'auto' as BackendChoice,
  workers: 2,
  threadsPerWorker: 1,
  // Measured (docs/performance.md, "Idle cores are lent"): a lone request on every core, concurrent ones on their own.
  idleCores: 'lend' as IdleCoresChoice,
  queueLimit: 64,
  maxPixels: IMAGE_LIMIT_DEFAULTS.maxPixels,
  maxAspectRatio: IMAGE_LIMIT_DEFAULTS.maxAspectRatio,
  minImageSide: IMAGE_LIMIT_DEFAULTS.minSide,
  // Chosen by measurement (docs/models.md, "Face detection"): higher recall and no false positives on faceless photos.
  faceDetector: 'facemesh-detection-full' as FaceDetectorModel,
  // Chosen by measurement (docs/models.md, "Face recognition"): lowest equal error rate on dlib's johns.
  faceEmbedder: 'faceres' as FaceEmbedderModel,
  poseModel: 'movenet-multipose' as PoseModel,
  // Chosen by measurement on the labelled set (docs/models.md, "Pose and objects"): the only model and size that finds
  // >= 90% of the labelled boxes with the right class, with no wrong top label and few unmatched boxes.
  objectDetector: 'yolov5s' as ObjectDetectorModel,
  // Finds people for pose's persons mode when the object model is a stock YOLOv5s of another size: on the labelled
  // set it poses within one person of yolov5s at 640, in a fraction of its time (docs/models.md, "Pose and objects").
  personDetector: 'yolov5s-320' as ObjectDetectorModel,
} as const;

export const POSE_DEFAULTS = {
  /** Whole-image pass: the lowest person score (centre score x mean of its confident keypoint scores). */
  scoreThreshold: 0.2,
  /**
   * Person crops: the detector has already found the person, so a faint pose (a small or partly hidden
   * person) is kept; on the labelled set this added no pose outside a labelled person (docs/models.md).
   */
  scoreThresholdPersons: 0.05,
  keypointThreshold: 0.3,
  /** Whole-image pass: the model's own top-k. */
  maxPoses: MAX_POSES,
  /** Person crops: one pose per person found, so as many as a crowd needs (MAX_POSES_LIMIT). */
  maxPosesPersons: MAX_POSES_LIMIT,
  // Measured on the labelled persons (docs/models.md, "Pose and objects"): crops around the object detector's
  // persons pose most of them, the whole-image pass misses small and crowded people.
  mode: 'persons' as PoseMode,
  /** Object-detector score above which a box is a person to pose (recall on the labelled persons: docs/models.md). */
  personThreshold: 0.2,
} as const;

export const OBJECT_DEFAULTS = {
  /** By kind of model. centernet: at 384 px it scores some obvious objects (the dog in dog.jpg) between 0.2 and 0.3. */
  scoreThreshold: { centernet: 0.2, yolo: 0.3 },
  maxObjects: 100,
} as const;

export const DETECT_DEFAULTS = {
  scoreThreshold: 0.6,
  iouThreshold: 0.3,
  tiles: 'auto',
} as const;

/** The accepted range of every integer option of the engine. */
export const ENGINE_RANGES = {
  workers: { min: 1, max: 64 },
  threadsPerWorker: { min: 1, max: 64 },
  queueLimit: { min: 1, max: 1_000_000 },
  maxPixels: { min: 1, max: Number.MAX_SAFE_INTEGER },
  maxAspectRatio: { min: 1, max: 1_000_000 },
  minImageSide: { min: 1, max: 65_535 },
  /** Also a multiple of 32. */
  objectInputSize: { min: 32, max: 4096 },
  tiles: { min: 0, max: MAX_TILES },
  maxPoses: { min: 1, max: MAX_POSES_LIMIT },
  maxObjects: { min: 1, max: 1000 },
} as const satisfies Record<string, IntRange>;

/** Face crop side for embedding, as a multiple of the face box's longer side (embedFace cropScale, manifest). */
export const CROP_SCALE_RANGE = { min: 0.5, max: 4 } as const;

/**
 * The tile grid 'auto' picks: none up to ~1440 px on the longer side (faces there are large enough for
 * the whole-image pass), then N x N with N = round(longer side / 960), at most 4.
 */
export function autoTiles(width: number, height: number): number {
  const n = Math.min(AUTO_MAX_TILES, Math.round(Math.max(width, height) / AUTO_TILE_PIXELS));
  return n >= 2 ? n : 0;
}
