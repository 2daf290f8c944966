// What the HTTP layer needs from the engine (src/engine.ts). Depending on this small interface instead of the
// Engine class keeps createApp() independent of how the engine is built.

export type Rect = readonly [left: number, top: number, right: number, bottom: number] | readonly number[];

export interface DetectedFace {
  rect: Rect;
  score: number;
  keypoints?: unknown;
}

export interface FaceDetectionResult {
  width: number;
  height: number;
  faces: readonly DetectedFace[];
  timings?: Partial<Record<'queueMs' | 'decodeMs' | 'inferenceMs' | 'postprocessMs', number>>;
}

export interface DetectFacesOptions {
  scoreThreshold?: number;
}

export interface FaceEngine {
  detectFaces(image: Buffer, options?: DetectFacesOptions): Promise<FaceDetectionResult>;
  backend(): { backend: string; device: string };
}

/** Codes of the engine's EngineError (src/engine.ts). */
export const ENGINE_ERROR_CODES = [
  'OVERLOADED',
  'INVALID_IMAGE',
  'IMAGE_TOO_LARGE',
  'UNSUPPORTED_FORMAT',
  'CLOSED',
  'INTERNAL',
  'INVALID_ARGUMENT',
] as const;
export type EngineErrorCode = (typeof ENGINE_ERROR_CODES)[number];

/** Recognises an EngineError by its code, without importing the engine. */
export function engineErrorCode(err: unknown): EngineErrorCode | undefined {
  if (!(err instanceof Error)) return undefined;
  const code = (err as Error & { code?: unknown }).code;
  return typeof code === 'string' && (ENGINE_ERROR_CODES as readonly string[]).includes(code)
    ? (code as EngineErrorCode)
    : undefined;
}
