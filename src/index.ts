// Public API of the edgecv engine.

export { Engine } from './engine/engine.js';
export {
  autoTiles,
  DETECT_DEFAULTS,
  ENGINE_DEFAULTS,
  MAX_POSES,
  MAX_POSES_LIMIT,
  MAX_TILES,
  OBJECT_DEFAULTS,
  POSE_DEFAULTS,
} from './engine/limits.js';
export {
  FACE_DETECTOR_MODELS,
  OBJECT_DETECTOR_MODELS,
  POSE_MODES,
  POSE_MODELS,
  PRECISIONS,
  PRECISION_CHOICES,
  type BackendInfo,
  type DetectedObject,
  type DetectObjectsOptions,
  type DetectPosesOptions,
  type ObjectDetection,
  type ObjectDetectorModel,
  type ObjectModelInfo,
  type Pose,
  type PoseDetection,
  type PoseKeypoint,
  type PoseModel,
  type PoseMode,
  type Precision,
  type PrecisionChoice,
  type PrecisionTiming,
  type StartupPhase,
  type StartupPhaseName,
  type DetectFacesOptions,
  type DetectionTimings,
  type EngineModels,
  type EngineOptions,
  type EngineStats,
  type Face,
  type FaceDetection,
  type FaceDetectorModel,
} from './engine/types.js';
export { COCO_CLASSES, type CocoClass } from './engine/objects.js';
export {
  BODY_25_BONES,
  BODY_25_KEYPOINTS,
  COCO_KEYPOINTS,
  cocoToBody25,
  type Body25KeypointName,
  type Body25Point,
  type CocoKeypointName,
} from './engine/pose.js';
export {
  calibratedDistance,
  FACE_EMBEDDER_MODELS,
  type EmbedFaceOptions,
  type EmbeddedFace,
  type FaceEmbedderInfo,
  type FaceEmbedderModel,
  type FaceEmbeddingResult,
  type GalleryMatch,
} from './engine/face-embedding.js';
export { GalleryIndex, type GalleryEntry } from './engine/gallery/gallery-index.js';
export { ENGINE_ERROR_CODES, EngineError, isEngineErrorCode, toEngineError, type EngineErrorCode } from './engine/errors.js';
export { readImageHeader, sniffImageFormat, tryReadImageHeader, type ImageFormat, type ImageHeader } from './engine/image-header.js';
