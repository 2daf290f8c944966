// GET /server/capabilities/ : what this server can do. The original answer was {"success":"true","gpu_support":..};
// those two keys stay first and unchanged; the device, each model with the runtime that runs it, and the object
// model's details (name, input size, licence of its weights: an operator who needs permissive weights can check)
// follow.

import { Hono } from 'hono';
import type { RecognitionService } from '../../gallery/recognition-service.js';
import type { FaceEngine } from '../engine-types.js';

/** Capability name -> [name in engine.models, key in backend().runtimes]. */
const ROLES = {
  face_detection: ['faceDetector', 'faceDetector'],
  face_recognition: ['faceEmbedder', 'faceEmbedder'],
  pose: ['pose', 'poseEstimator'],
  objects: ['objects', 'objectDetector'],
  // Only when pose finds people with a model of its own (Engine personDetector); else the objects model does.
  pose_persons: ['persons', 'personDetector'],
} as const;

/** Mounted at /server/capabilities. */
export function capabilitiesRoutes(deps: { engine: FaceEngine; recognition?: Pick<RecognitionService, 'status'> }): Hono {
  return new Hono().get('/', (c) => {
      const { backend, device, runtimes, precisions, onnxRuntime } = deps.engine.backend();
      const loaded = deps.engine.models;
      const models: Record<string, { name: string; runtime: string; precision: string }> = {};
      for (const [role, [modelKey, runtimeKey]] of Object.entries(ROLES)) {
        const name = loaded?.[modelKey];
        const runtime = runtimes[runtimeKey];
        if (name && runtime) models[role] = { name, runtime, precision: precisions?.[runtimeKey] ?? 'fp32' };
      }
      const model = deps.engine.objectModel;
      return c.json({
        success: 'true',
        gpu_support: backend === 'cuda',
        backend,
        device,
        onnxruntime: onnxRuntime?.version ?? null,
        models,
        ...(model
          ? { object_model: { name: model.name, kind: model.kind, input_size: model.inputSize, classes: model.classes, licence: model.licence } }
          : {}),
        // The gallery's state, quarantined rows, and whether its store keeps what it acknowledged.
        ...(deps.recognition ? { gallery: deps.recognition.status() } : {}),
      });
  });
}
