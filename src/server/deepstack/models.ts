// The object models the DeepStack routes can run: /v1/vision/detection runs the server's object model, and
// /v1/vision/custom/<name> runs a model by name. Today that is the one object model the engine loaded; a server
// with more models (e.g. a bring-your-own YOLO one) extends customModels() and nothing else.

import type { ObjectDetection, DetectObjectsOptions } from '../../engine/types.js';
import type { PoseObjectEngine } from '../engine-types.js';

export type ObjectModelRun = (image: Buffer, opts: DetectObjectsOptions) => Promise<ObjectDetection>;

/** Name -> how to run it, for every object model this server has. */
export function customModels(engine: PoseObjectEngine): Map<string, ObjectModelRun> {
  const models = new Map<string, ObjectModelRun>();
  const name = engine.models?.objects;
  if (name) models.set(name, (image, opts) => engine.detectObjects(image, opts));
  return models;
}

/** Whether the server has an object model at all (an engine that does not say is taken to have one). */
export function hasObjectModel(engine: PoseObjectEngine): boolean {
  return engine.models === undefined || engine.models.objects !== null;
}
