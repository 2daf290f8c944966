// Public API of the edgecv engine.

export {
  autoTiles,
  DETECT_DEFAULTS,
  Engine,
  ENGINE_DEFAULTS,
  FACE_DETECTOR_MODELS,
  MAX_TILES,
  type BackendInfo,
  type DetectFacesOptions,
  type DetectionTimings,
  type EngineOptions,
  type EngineStats,
  type Face,
  type FaceDetection,
  type FaceDetectorModel,
} from './engine.js';
export {
  calibratedDistance,
  FACE_EMBEDDER_MODELS,
  type EmbedFaceOptions,
  type EmbeddedFace,
  type FaceEmbedderInfo,
  type FaceEmbedderModel,
  type FaceEmbeddingResult,
  type GalleryMatch,
} from './face-embedding.js';
export { GalleryIndex, type GalleryEntry } from './gallery-index.js';
export { ENGINE_ERROR_CODES, EngineError, isEngineErrorCode, toEngineError, type EngineErrorCode } from './errors.js';
export {
  readImageHeader,
  sniffImageFormat,
  tryReadImageHeader,
  type ImageFormat,
  type ImageHeader,
} from './image-header.js';
