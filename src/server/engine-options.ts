// The engine options a server config asks for: the one place where `edgecv serve` turns its options into
// Engine.open() options. An option left out of the config stays out here too, so the engine's default holds.

import type { ServerConfig } from '../config.js';
import type { EngineOptions } from '../engine/types.js';

export function engineOptionsFromConfig(config: ServerConfig): EngineOptions {
  const options: EngineOptions = {
    modelDir: config.modelDir,
    runtime: config.runtime,
    precision: config.precision,
    backend: config.backend,
    workers: config.workers,
    threadsPerWorker: config.threadsPerWorker,
    idleCores: config.idleCores,
    queueLimit: config.queueLimit,
    maxPixels: config.maxPixels,
    maxAspectRatio: config.maxAspectRatio,
    minImageSide: config.minImageSide,
    objectDetector: config.objectModel,
    objectLabels: config.objectLabels,
    objectInputSize: config.objectInputSize,
    // 'objects': pose finds people with the object model itself (the engine's null).
    personDetector: config.posePersonModel === 'objects' ? null : config.posePersonModel,
  };
  return Object.fromEntries(Object.entries(options).filter(([, v]) => v !== undefined)) as EngineOptions;
}
