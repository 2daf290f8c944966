// DeepStack's face match: POST /v1/vision/face/match with two image files, `image1` and `image2` (or, as every
// DeepStack route takes `image`, two base64 text fields of those names: urlencoded clients).
//   -> {"success":true,"similarity":0.83,"inferenceMs":41,"processMs":44,"duration":0}
//   no face in either photo: 400 {"success":false,"error":"no face found","duration":0} (DeepStack's words)
// Each photo's first face (highest detection score) is embedded by the gallery's model; `similarity` is the
// DeepStack recognition confidence of their calibrated distance (similarity.ts): 0.67 at the equal-error
// threshold, the same scale /v1/vision/face/recognize answers and min_confidence is compared with. (DeepStack's own
// server answered (cosine + 1) / 2, on its own model's scale; clients compare it with a threshold.)

import type { Context } from 'hono';
import { calibratedDistance } from '../../engine/face-embedding.js';
import type { RecognitionService } from '../../gallery/recognition-service.js';
import type { FaceEngine } from '../engine-types.js';
import { HttpError } from '../errors.js';
import { decodeBase64Image } from '../image-input.js';
import { observed } from '../inference-route.js';
import { dsReply, NO_IMAGE } from './reply.js';
import type { DeepStackEnv } from './request.js';
import { similarityFromDistance } from './similarity.js';
import { codeProjectTimes, modelMs } from './timing.js';

function dot(a: Float32Array, b: Float32Array): number {
  let s = 0;
  for (let i = 0; i < a.length; i++) s += a[i]! * b[i]!;
  return s;
}

export async function faceMatch(c: Context<DeepStackEnv>, engine: FaceEngine, recognition: RecognitionService): Promise<Response> {
  const t0 = performance.now();
  const req = c.get('deepstack');
  const image = (name: string) => {
    const file = req.files.find((f) => f.name === name);
    const text = file ? undefined : req.fields.get(name);
    if (text !== undefined) return decodeBase64Image(text, `form field '${name}'`);
    if (!file) throw new HttpError(400, `${NO_IMAGE}: send two files, image1 and image2`);
    return file.bytes;
  };
  const [one, two] = [image('image1'), image('image2')];
  const model = recognition.embedder.model;
  const a = await observed(engine, model, recognition.embedPhoto(one));
  const b = await observed(engine, model, recognition.embedPhoto(two));
  if (!a.embedding || !b.embedding) throw new HttpError(400, 'no face found');
  // Both are L2-normalized: their dot product is the cosine.
  const distance = calibratedDistance(dot(a.embedding, b.embedding), recognition.embedder.distanceScale);
  const similarity = similarityFromDistance(distance);
  return dsReply(c, { success: true, similarity, ...codeProjectTimes(t0, modelMs(a.timings) + modelMs(b.timings)) });
}
