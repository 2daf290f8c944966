// POST /pose/detect/ (also /openpose/detect/, the original server's path): BODY_25 poses.
//   people:    {"success":"true","serverprocessingtime":"12.345","poses":[[[x,y,c] x 25], ...]}
//   nobody:    {"success":"false","serverprocessingtime":"12.345"}
// x, y in image pixels; [0,0,0] for a point not detected. With --pose-requires-gpu and no CUDA backend, the
// original server's answer: 501 with a plain-text body.
// Optional parameters (query or form field): threshold (person score, 0..1), keypoint_threshold (0..1).

import type { Context, Hono } from 'hono';
import type { ServerConfig } from '../../config.js';
import type { Body25Point } from '../../engine/pose.js';
import type { PoseObjectEngine } from '../engine-types.js';
import { readImageInput } from '../image-input.js';
import { observeInference } from '../prometheus.js';
import { resource } from '../routing.js';
import { unitParameter } from './detection-options.js';

export const POSE_PATHS = ['/pose/detect/', '/openpose/detect/'] as const;
export const POSE_NEEDS_GPU_MESSAGE = 'The pose engine is not supported on this server: it requires a GPU.';

export interface PoseResponse {
  success: 'true' | 'false';
  serverprocessingtime: string;
  poses?: Body25Point[][];
}

/** Pixels to 2 decimals, confidences to 3: enough for drawing, and a compact answer. */
function roundPoint([x, y, c]: Body25Point): Body25Point {
  return [Math.round(x * 100) / 100, Math.round(y * 100) / 100, Math.round(c * 1000) / 1000];
}

export function registerPoseRoutes(
  app: Hono,
  deps: { engine: PoseObjectEngine; config: Pick<ServerConfig, 'poseRequiresGpu' | 'poseMode'> },
): void {
  const detect = async (c: Context) => {
    if (deps.config.poseRequiresGpu && deps.engine.backend().backend !== 'cuda') {
      return c.text(POSE_NEEDS_GPU_MESSAGE, 501);
    }
    const t0 = performance.now();
    const { bytes, fields } = await readImageInput(c);
    const result = await deps.engine.detectPoses(bytes, {
      scoreThreshold: unitParameter(c, fields, 'threshold'),
      keypointThreshold: unitParameter(c, fields, 'keypoint_threshold'),
      ...(deps.config.poseMode ? { mode: deps.config.poseMode } : {}),
    });
    observeInference(deps.engine.models?.pose ?? 'pose', deps.engine.backend().backend, result.timings);
    const poses = result.poses.map((p) => p.body25.map(roundPoint));
    const ms = (performance.now() - t0).toFixed(3);
    const body: PoseResponse =
      poses.length > 0 ? { success: 'true', serverprocessingtime: ms, poses } : { success: 'false', serverprocessingtime: ms };
    return c.json(body);
  };
  for (const path of POSE_PATHS) resource(app, path, { POST: detect });
}
