// What the HTTP layer needs from the engine: a slice of the library's own Engine, so that
// createApp() takes any engine an embedder opened, and the server uses only what the library exports.
import type { Engine } from '../engine/engine.js';
import { isEngineErrorCode, type EngineErrorCode } from '../engine/errors.js';

export type FaceEngine = Pick<Engine, 'detectFaces' | 'backend'> & Partial<Pick<Engine, 'models' | 'objectModel' | 'serveRequest'>>;
export type PoseObjectEngine = Pick<Engine, 'detectPoses' | 'detectObjects' | 'backend'> & Partial<Pick<Engine, 'models'>>;

/** The EngineErrorCode of an error thrown by the engine, if it is one. */
export function engineErrorCode(err: unknown): EngineErrorCode | undefined {
  if (!(err instanceof Error)) return undefined;
  const code = (err as Error & { code?: unknown }).code;
  return isEngineErrorCode(code) ? code : undefined;
}
