// GET /server/capabilities/ : what this server can do. The original answer was {"success":"true","gpu_support":..};
// those two keys stay first and unchanged; the device, each model with the runtime that runs it, and the object
// model's details (name, input size, licence of its weights: an operator who needs permissive weights can check)
// follow.

import { Hono } from 'hono';
import { anyOnGpu } from '../gpu-support.js';
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

interface ModelCapability {
  name: string;
  runtime: string;
  precision: string;
  /** 'gpu', 'cpu' or 'cuda'; with backend gpu or auto, why (the GPU check, or the failure that moved it off the GPU). */
  device: string;
  device_reason?: string;
  precision_timing?: { int8_ms: number; fp32_ms: number };
}

const round2 = (ms: number) => Math.round(ms * 100) / 100;

/** Mounted at /server/capabilities. */
export function capabilitiesRoutes(deps: { engine: FaceEngine; recognition?: Pick<RecognitionService, 'status'> }): Hono {
  return new Hono().get('/', (c) => {
    const info = deps.engine.backend();
    const { backend, device, runtimes, precisions, precisionTimings, onnxRuntime, devices, gpuLost, gpuChecks, gpu } = info;
    const loaded = deps.engine.models;
    const models: Record<string, ModelCapability> = {};
    for (const [role, [modelKey, runtimeKey]] of Object.entries(ROLES)) {
      const name = loaded?.[modelKey];
      const runtime = runtimes[runtimeKey];
      if (!name || !runtime) continue;
      const timed = precisionTimings?.[runtimeKey];
      const reason = gpuLost[runtimeKey] ? `the GPU failed: ${gpuLost[runtimeKey]}` : gpuChecks?.[runtimeKey]?.reason;
      models[role] = {
        name,
        runtime,
        precision: precisions?.[runtimeKey] ?? 'fp32',
        device: devices[runtimeKey] ?? backend,
        ...(reason ? { device_reason: reason } : {}),
        // precision auto: what the choice was made on (ms a forward pass of each file at start)
        ...(timed ? { precision_timing: { int8_ms: round2(timed.int8Ms), fp32_ms: round2(timed.fp32Ms) } } : {}),
      };
    }
    const model = deps.engine.objectModel;
    return c.json({
      success: 'true',
      gpu_support: anyOnGpu(info),
      backend: anyOnGpu(info) && backend !== 'cuda' ? 'gpu' : backend,
      device,
      // The Vulkan adapter (backend gpu or auto): null when none was looked for.
      gpu: gpu
        ? gpu.found
          ? {
              vendor: gpu.vendor,
              device: gpu.device,
              driver: gpu.driver,
              type: gpu.type,
              api: gpu.api,
              software: gpu.software,
              usable: gpu.usable,
              ...(gpu.why ? { why: gpu.why } : {}),
            }
          : { usable: false, why: gpu.why }
        : null,
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
