// GET /server/capabilities/ : what this server can do, and which object model answers /object/detect/
// (name, input size, licence of its weights: an operator who needs permissive weights can check).

import type { Hono } from 'hono';
import type { FaceEngine } from '../engine-types.js';
import { resource } from '../routing.js';

export function registerCapabilitiesRoutes(app: Hono, deps: { engine: FaceEngine }): void {
  resource(app, '/server/capabilities/', {
    GET: (c) => {
      const gpu = deps.engine.backend().backend === 'cuda';
      const model = deps.engine.objectModel;
      if (!model) return c.json({ success: 'true', gpu_support: gpu });
      const object_model = { name: model.name, kind: model.kind, input_size: model.inputSize, classes: model.classes, licence: model.licence };
      return c.json({ success: 'true', gpu_support: gpu, object_model });
    },
  });
}
