// POST /pose/detect/ (also /openpose/detect/, the original server's path): BODY_25 poses.
//   people:    {"success":"true","serverprocessingtime":"12.345","server_processing_time":"12.345","poses":[[[x,y,c] x 25], ...]}
//   nobody:    {"success":"false","serverprocessingtime":"12.345","server_processing_time":"12.345"}
// x, y in image pixels; [0,0,0] for a point not detected. With --pose-requires-gpu and no CUDA backend, the
// original server's answer: 501 with a plain-text body.
// Optional parameters (query or form field): threshold (person score, 0..1), keypoint_threshold (0..1).

import { Hono, type MiddlewareHandler } from 'hono';
import { onGpu } from '../gpu-support.js';
import type { ServerConfig } from '../../config.js';
import type { Body25Point } from '../../engine/pose.js';
import type { PoseObjectEngine } from '../engine-types.js';
import { imageRoute } from '../inference-route.js';
import { unitParameter } from './detection-options.js';

/** Where poseRoutes() is mounted: edgecv's path and the original server's. */
export const POSE_MOUNTS = ['/pose', '/openpose'] as const;
export const POSE_NEEDS_GPU_MESSAGE = 'The pose engine is not supported on this server: it requires a GPU.';

export interface PoseResponse {
  success: 'true' | 'false';
  serverprocessingtime: string;
  server_processing_time: string;
  poses?: Body25Point[][];
}

/** Pixels to 2 decimals, confidences to 3: enough for drawing, and a compact answer. */
function roundPoint([x, y, c]: Body25Point): Body25Point {
  return [Math.round(x * 100) / 100, Math.round(y * 100) / 100, Math.round(c * 1000) / 1000];
}

/** The route's answer for one detectPoses() result; `ms` is the server time, formatted. */
export function poseResponse(result: { poses: readonly { body25: Body25Point[] }[] }, ms: string): PoseResponse {
  const poses = result.poses.map((p) => p.body25.map(roundPoint));
  return poses.length > 0
    ? { success: 'true', serverprocessingtime: ms, server_processing_time: ms, poses }
    : { success: 'false', serverprocessingtime: ms, server_processing_time: ms };
}

/** --pose-requires-gpu without a CUDA backend: the original server's 501. */
function requireGpu(deps: PoseDeps): MiddlewareHandler {
  return async (c, next) => {
    if (deps.config.poseRequiresGpu && !onGpu(deps.engine.backend(), ['poseEstimator'])) return c.text(POSE_NEEDS_GPU_MESSAGE, 501);
    await next();
  };
}

interface PoseDeps {
  engine: PoseObjectEngine;
  config: Pick<ServerConfig, 'poseRequiresGpu' | 'poseMode'>;
}

/** Mounted at each of POSE_MOUNTS. */
export function poseRoutes(deps: PoseDeps): Hono {
  const { engine, config } = deps;
  return new Hono().post(
    '/detect',
    requireGpu(deps),
    imageRoute({
      engine,
      model: () => engine.models?.pose ?? 'pose',
      run: (c, { bytes, fields }) =>
        engine.detectPoses(bytes, {
          scoreThreshold: unitParameter(c, fields, 'threshold'),
          keypointThreshold: unitParameter(c, fields, 'keypoint_threshold'),
          ...(config.poseMode ? { mode: config.poseMode } : {}),
        }),
      reply: (result, ms) => poseResponse(result, ms),
    }),
  );
}
