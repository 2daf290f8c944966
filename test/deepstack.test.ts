// The DeepStack-compatible API (/v1/vision/*) as its real clients call it. Each describe block replays one client's
// request shape, written from that client's source (cited in the block), and asserts the fields, types and
// statuses that client reads. Real engine, real photos, a real SQLite gallery, and a real plain-HTTP socket for
// --http-port.

import http from 'node:http';
import https from 'node:https';
import path from 'node:path';
import jpeg from 'jpeg-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadJohns, type LabelledPhoto } from '../testkit/face-verification.js';
import { DEFAULT_BODY_LIMIT } from '../src/config.js';
import { RecognitionService } from '../src/gallery/recognition-service.js';
import { SqliteGalleryStore } from '../src/gallery/sqlite-store.js';
import { calibratedDistance, type Engine } from '../src/index.js';
import { createApp, createDeepStackApp } from '../src/server/app.js';
import { similarityFromDistance } from '../src/server/deepstack/similarity.js';
import { startServer, type RunningServer } from '../src/server/server.js';
import { DATA_DIR, garbage, httpsRequest, openEngine, photo, useTempDirs } from './helpers.js';
import { freePort, startServerProcess } from '../testkit/server-process.js';

const ADMIN = 'deepstack-admin-key-0123456789';
const API = 'deepstack-api-key-9876543210';
const GROUP = 'dlib/faces/2008_002506.jpg'; // 3 faces
const NO_FACE = 'skimage/rocket.jpg';
const STRANGER = 'skimage/astronaut.png'; // not one of the johns
const PREDICTION_KEYS = ['label', 'confidence', 'x_min', 'y_min', 'x_max', 'y_max'];
const FACE_KEYS = ['confidence', 'x_min', 'y_min', 'x_max', 'y_max'];
const RECOGNIZED_KEYS = ['userid', 'confidence', 'x_min', 'y_min', 'x_max', 'y_max'];

const newTmpDir = useTempDirs();
let engine: Engine;
let johns: Map<string, LabelledPhoto[]>;
const services: RecognitionService[] = [];

beforeAll(async () => {
  engine = await openEngine({ workers: 2 });
  johns = new Map();
  for (const p of loadJohns(DATA_DIR)) johns.set(p.subject, [...(johns.get(p.subject) ?? []), p]);
});
afterAll(async () => {
  for (const s of services) await s.close();
  await engine?.close();
});

async function newService(): Promise<RecognitionService> {
  const service = await RecognitionService.open(engine, SqliteGalleryStore.open(newTmpDir('edgecv-deepstack-')), { log: () => {} });
  await service.ready;
  services.push(service);
  return service;
}

function appWith(service: RecognitionService | undefined, keys: { apiKey?: string; adminKey?: string } = {}) {
  return createApp({ engine, config: { bodyLimit: DEFAULT_BODY_LIMIT, ...keys }, recognition: service });
}
type App = ReturnType<typeof appWith>;

function johnsOf(name: string): LabelledPhoto[] {
  const list = johns.get(name);
  if (!list || list.length !== 11) throw new Error(`expected 11 photos of ${name}`);
  return list;
}

/**
 * What Frigate posts: its detector's model input, a 320x320 RGB frame, JPEG-encoded by PIL (default quality 75).
 * Here: the centre square of a real photo, resized (nearest neighbour) to 320x320 and encoded at quality 75.
 */
function frigateFrame(name: string): Buffer {
  const src = jpeg.decode(photo(name), { useTArray: true });
  const side = Math.min(src.width, src.height);
  const x0 = Math.floor((src.width - side) / 2);
  const y0 = Math.floor((src.height - side) / 2);
  const data = Buffer.alloc(320 * 320 * 4);
  for (let y = 0; y < 320; y++) {
    for (let x = 0; x < 320; x++) {
      const sx = x0 + Math.floor(((x + 0.5) * side) / 320);
      const sy = y0 + Math.floor(((y + 0.5) * side) / 320);
      const from = (sy * src.width + sx) * 4;
      data.set(src.data.subarray(from, from + 4), (y * 320 + x) * 4);
    }
  }
  return jpeg.encode({ data, width: 320, height: 320 }, 75).data;
}

/** A form as Python `requests.post(url, data=..., files={"image": bytes})` sends it: the file part is named and filed as "image". */
function pythonForm(data: Record<string, string>, files: Record<string, Buffer> = {}): FormData {
  const form = new FormData();
  for (const [k, v] of Object.entries(data)) form.append(k, v);
  for (const [k, v] of Object.entries(files)) form.append(k, new Blob([v]), k);
  return form;
}

/** A form as Node's form-data package sends fs.createReadStream(file): the file's base name and its MIME type. */
function nodeFormData(fields: Record<string, string>, file?: LabelledPhoto): FormData {
  const form = new FormData();
  if (file) form.append('image', new Blob([file.bytes], { type: 'image/jpeg' }), path.basename(file.file));
  for (const [k, v] of Object.entries(fields)) form.append(k, v);
  return form;
}

async function post(app: App, route: string, body: FormData | string, headers: Record<string, string> = {}) {
  const init: RequestInit =
    typeof body === 'string'
      ? { method: 'POST', body, headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers } }
      : { method: 'POST', body, headers };
  const res = await app.request(route, init);
  const text = await res.text();
  expect(res.headers.get('content-type')).toMatch(/^application\/json/);
  expect(res.headers.get('content-length')).toBe(String(Buffer.byteLength(text)));
  return { status: res.status, body: JSON.parse(text) as Record<string, unknown> };
}

function expectDsError(r: { status: number; body: Record<string, unknown> }, status: number, error: string | RegExp): void {
  expect(r.status).toBe(status);
  expect(Object.keys(r.body)).toEqual(['success', 'error', 'duration']);
  expect(r.body.success).toBe(false);
  expect(r.body.duration).toBe(0);
  if (typeof error === 'string') expect(r.body.error).toBe(error);
  else expect(r.body.error).toMatch(error);
}

/** CodeProject.AI's timing fields: integer milliseconds, the models' time within the request's. */
function expectCodeProjectTimes(body: Record<string, unknown>): void {
  const { inferenceMs, processMs } = body as { inferenceMs: number; processMs: number };
  expect(Number.isInteger(inferenceMs) && Number.isInteger(processMs)).toBe(true);
  expect(inferenceMs).toBeGreaterThanOrEqual(0);
  expect(inferenceMs).toBeLessThanOrEqual(processMs + 1); // each rounded on its own
}

interface Box {
  x_min: number;
  y_min: number;
  x_max: number;
  y_max: number;
}

function expectBox(p: Box, width: number, height: number): void {
  for (const k of ['x_min', 'y_min', 'x_max', 'y_max'] as const) expect(Number.isInteger(p[k])).toBe(true);
  expect(0 <= p.x_min && p.x_min < p.x_max && p.x_max <= width).toBe(true);
  expect(0 <= p.y_min && p.y_min < p.y_max && p.y_max <= height).toBe(true);
}

function predictionsOf<T>(body: Record<string, unknown>): T[] {
  expect(body.success).toBe(true);
  expect(body.duration).toBe(0);
  expect(Array.isArray(body.predictions)).toBe(true);
  return body.predictions as T[];
}

type ObjectPrediction = Box & { label: string; confidence: number };
type RecognizedFace = Box & { userid: string; confidence: number };

// ------------------------------------------------------------------ Frigate

// blakeblackshear/frigate, frigate/detectors/plugins/deepstack.py: posts data={"api_key": api_key} (default "") and
// files={"image": <320x320 JPEG>} to api_url (default http://localhost:80/v1/vision/detection); reads
// response_json["predictions"], and for each: "confidence" (a number, compared with 0.4: it stops at the first one
// under it), "label" (lower-cased, looked up in its label map), y_min/x_min/y_max/x_max divided by the image size;
// it has room for 20 detections.
describe('Frigate deepstack detector plugin', () => {
  let app: App;
  beforeAll(() => {
    app = appWith(undefined);
  });

  it('answers a 320x320 JPEG with sorted, labelled, integer boxes inside the frame', async () => {
    const frame = frigateFrame('darknet/dog.jpg');
    const r = await post(app, '/v1/vision/detection', pythonForm({ api_key: '' }, { image: frame }));
    expect(r.status).toBe(200);
    expect(Object.keys(r.body)).toEqual(['success', 'predictions', 'inferenceMs', 'processMs', 'duration']);
    expectCodeProjectTimes(r.body);
    const predictions = predictionsOf<ObjectPrediction>(r.body);
    expect(predictions.length).toBeGreaterThan(0);
    expect(predictions.length).toBeLessThanOrEqual(20);
    for (const p of predictions) {
      expect(Object.keys(p)).toEqual(PREDICTION_KEYS);
      expect(typeof p.confidence).toBe('number');
      expect(p.confidence).toBeGreaterThanOrEqual(0.4); // the default min_confidence
      expect(p.label).toBe(p.label.toLowerCase());
      expectBox(p, 320, 320);
    }
    const confidences = predictions.map((p) => p.confidence);
    expect(confidences).toEqual([...confidences].sort((a, b) => b - a));
    expect(predictions.map((p) => p.label)).toContain('dog');

    // Frigate's own loop: every prediction is kept (none under 0.4 before the end), boxes normalized into 0..1.
    const kept = [];
    for (const p of predictions) {
      if (p.confidence < 0.4) break;
      kept.push([p.y_min / 320, p.x_min / 320, p.y_max / 320, p.x_max / 320]);
    }
    expect(kept).toHaveLength(predictions.length);
    expect(kept.flat().every((v) => v >= 0 && v <= 1)).toBe(true);
  });

  it('caps the answer at 20 predictions (Frigate has room for 20), unless a limit is asked for', async () => {
    const frame = frigateFrame('dlib/faces/2008_002079.jpg');
    const capped = predictionsOf<ObjectPrediction>(
      (await post(app, '/v1/vision/detection', pythonForm({ api_key: '', min_confidence: '0.001' }, { image: frame }))).body,
    );
    expect(capped).toHaveLength(20);
    const more = predictionsOf<ObjectPrediction>(
      (await post(app, '/v1/vision/detection', pythonForm({ api_key: '', min_confidence: '0.001', limit: '40' }, { image: frame }))).body,
    );
    expect(more.length).toBeGreaterThan(20);
    expect(more.slice(0, 20)).toEqual(capped);
  });

  it('uses COCO names in lower case with spaces', async () => {
    const r = await post(
      app,
      '/v1/vision/detection',
      pythonForm({ api_key: '', min_confidence: '0.05', limit: '100' }, { image: photo('darknet/dog.jpg') }),
    );
    const labels = predictionsOf<ObjectPrediction>(r.body).map((p) => p.label);
    expect(labels.length).toBeGreaterThan(1);
    for (const l of labels) expect(l).toMatch(/^[a-z]+( [a-z]+)*$/);
  });
});

// ------------------------------------------------------------------ Agent DVR

// Agent DVR is closed source; its request is the documented one (ispyconnect.com/userguide-agent-deepstack-ai.aspx:
// "AI Server URL" + "Model Endpoint", default /v1/vision/detection, or /v1/vision/custom/<model> for a custom model):
// a multipart POST with the frame as the file part "image", reading predictions[].label, .confidence and the box.
describe('Agent DVR AI server', () => {
  let app: App;
  beforeAll(() => {
    app = appWith(undefined);
  });

  it('detects people and animals in a full-size JPEG, boxes in its pixels', async () => {
    const form = new FormData();
    form.append('image', new Blob([photo('darknet/person.jpg')], { type: 'image/jpeg' }), 'frame.jpg');
    const r = await post(app, '/v1/vision/detection', form);
    expect(r.status).toBe(200);
    const predictions = predictionsOf<ObjectPrediction>(r.body);
    const labels = new Set(predictions.map((p) => p.label));
    expect(labels.has('person')).toBe(true);
    expect(labels.has('dog')).toBe(true);
    for (const p of predictions) expectBox(p, 640, 424); // darknet/person.jpg is 640x424
  });

  it('lists the custom models and runs one by name; an unknown name is 404, a malformed one 400', async () => {
    const list = await post(app, '/v1/vision/custom/list', pythonForm({ api_key: '' }));
    expect(list.status).toBe(200);
    expect(list.body).toEqual({ success: true, models: [engine.models.objects], duration: 0 });
    const model = (list.body.models as string[])[0]!;

    const form = new FormData();
    form.append('image', new Blob([photo('darknet/person.jpg')], { type: 'image/jpeg' }), 'frame.jpg');
    const custom = await post(app, `/v1/vision/custom/${model}`, form);
    expect(custom.status).toBe(200);
    const viaDetection = await post(app, '/v1/vision/detection', pythonForm({}, { image: photo('darknet/person.jpg') }));
    expect(predictionsOf(custom.body)).toEqual(predictionsOf(viaDetection.body));

    expectDsError(
      await post(app, '/v1/vision/custom/no-such-model', pythonForm({}, { image: photo('darknet/person.jpg') })),
      404,
      /no custom model 'no-such-model'/,
    );
    expectDsError(await post(app, '/v1/vision/custom/bad%20name', pythonForm({}, { image: photo('darknet/person.jpg') })), 400, 'invalid model name');
  });
});

// ------------------------------------------------------------------ Home Assistant

// robmarkcole/deepstack-python, deepstack/core.py (used by Home Assistant's deepstack_object / deepstack_face):
// process_image() posts files={"image": bytes} with data {"api_key": ..., "min_confidence": ...} (plus "userid" to
// register); anything but HTTP 200 raises. detect() and recognize() read response["predictions"], register() reads
// response["success"] == True and response["message"], get_registered_faces() posts data={"api_key": ...} alone
// (urlencoded, no file) and reads response["faces"]. get_recognized_faces() reads userid and confidence x 100.
describe('Home Assistant (deepstack-python), one key for everything', () => {
  let app: App;
  let service: RecognitionService;
  const data = (extra: Record<string, string> = {}) => ({ api_key: ADMIN, min_confidence: '0.45', ...extra });

  beforeAll(async () => {
    service = await newService();
    app = appWith(service, { apiKey: ADMIN, adminKey: ADMIN });
  });

  it('object detection: predictions over min_confidence', async () => {
    const r = await post(app, '/v1/vision/detection', pythonForm(data(), { image: photo('darknet/horses.jpg') }));
    expect(r.status).toBe(200);
    const predictions = predictionsOf<ObjectPrediction>(r.body);
    expect(predictions.map((p) => p.label)).toContain('horse');
    for (const p of predictions) expect(p.confidence).toBeGreaterThanOrEqual(0.45);
  });

  it('face detection: every face, with confidence and box and no label, on both /face and /face/', async () => {
    for (const route of ['/v1/vision/face', '/v1/vision/face/']) {
      const r = await post(app, route, pythonForm(data(), { image: photo(GROUP) }));
      expect(r.status).toBe(200);
      const faces = predictionsOf<Box & { confidence: number }>(r.body);
      expect(faces).toHaveLength(3);
      for (const f of faces) {
        expect(Object.keys(f)).toEqual(FACE_KEYS);
        expect(f.confidence).toBeGreaterThanOrEqual(0.45);
      }
    }
    const none = await post(app, '/v1/vision/face', pythonForm(data(), { image: photo(NO_FACE) }));
    expect(none.body).toMatchObject({ success: true, predictions: [], duration: 0 });
    expectCodeProjectTimes(none.body);
  });

  it('register, recognize, list', async () => {
    const salley = johnsOf('John_Salley');
    const reg = await post(app, '/v1/vision/face/register', pythonForm(data({ userid: 'John Salley' }), { image: salley[0]!.bytes }));
    expect(reg.status).toBe(200);
    expect(reg.body).toEqual({ success: true, message: 'face added', duration: 0 });

    const rec = await post(app, '/v1/vision/face/recognize', pythonForm(data(), { image: salley[5]!.bytes }));
    expect(rec.status).toBe(200);
    const [face] = predictionsOf<RecognizedFace>(rec.body);
    expect(Object.keys(face!)).toEqual(RECOGNIZED_KEYS);
    expect(face!.userid).toBe('John Salley');
    expect(face!.confidence).toBeGreaterThan(0.45);
    expect(face!.confidence).toBeLessThanOrEqual(1);

    const list = await post(app, '/v1/vision/face/list', `api_key=${ADMIN}`);
    expect(list.status).toBe(200);
    expect(list.body).toEqual({ success: true, faces: ['John Salley'], duration: 0 });
  });

  it('a wrong or missing api_key is 401 "Incorrect api key" on every route', async () => {
    for (const route of ['/v1/vision/detection', '/v1/vision/face', '/v1/vision/face/recognize', '/v1/vision/face/register']) {
      const r = await post(app, route, pythonForm({ api_key: 'wrong', min_confidence: '0.45', userid: 'x' }, { image: photo(GROUP) }));
      expectDsError(r, 401, 'Incorrect api key');
    }
    expectDsError(await post(app, '/v1/vision/face/list', 'api_key='), 401, 'Incorrect api key');
    expectDsError(await post(app, '/v1/vision/custom/list', pythonForm({})), 401, 'Incorrect api key');
    // the key as a header works too
    const viaHeader = await post(app, '/v1/vision/face/list', pythonForm({}), { 'x-api-key': ADMIN });
    expect(viaHeader.status).toBe(200);
  });
});

// ------------------------------------------------------------------ Double Take

// jakowenko/double-take, api/src/util/detectors/deepstack.js: form-data posts with the photo as the file part
// "image" (fs.createReadStream: the file's base name) and api_key only when a key is configured. recognize ->
// /v1/vision/face/recognize, reads data.success === false (no result), predictions[].confidence x 100,
// .userid (lower-cased), x_min/y_min/x_max/y_max; train -> /v1/vision/face/register with image + userid, one photo
// per call, and axios rejects any status but 2xx; remove -> /v1/vision/face/delete with userid.
describe('Double Take: register two people, recognize them, a stranger is unknown', () => {
  let app: App;
  let service: RecognitionService;
  const people = ['John_Salley', 'John_Savage'];

  beforeAll(async () => {
    service = await newService();
    app = appWith(service, { adminKey: ADMIN }); // no --api-key: Double Take's key is the admin key
  });

  const recognize = async (bytes: Buffer) => {
    const form = new FormData();
    form.append('image', new Blob([bytes], { type: 'image/jpeg' }), 'snapshot.jpg');
    form.append('api_key', ADMIN);
    const r = await post(app, '/v1/vision/face/recognize', form);
    expect(r.status).toBe(200);
    return predictionsOf<RecognizedFace>(r.body);
  };

  it('trains one photo per call, keeping every sample', async () => {
    for (const name of people) {
      for (const p of johnsOf(name).slice(0, 5)) {
        const r = await post(app, '/v1/vision/face/register', nodeFormData({ userid: name, api_key: ADMIN }, p));
        expect(r.status).toBe(200);
        expect(r.body).toEqual({ success: true, message: 'face added', duration: 0 });
      }
    }
    expect(service.subjects().map((s) => [s.subject, s.samples])).toEqual(people.map((n) => [n, 5]));
  });

  it('recognizes every other photo of both people at the default threshold', async () => {
    for (const name of people) {
      for (const p of johnsOf(name).slice(5)) {
        const [face, ...more] = await recognize(p.bytes);
        expect(more).toHaveLength(0);
        expect(Object.keys(face!)).toEqual(RECOGNIZED_KEYS);
        expect(face!.userid).toBe(name);
        expect(face!.confidence).toBeGreaterThanOrEqual(0.67);
        expect(face!.confidence).toBeLessThanOrEqual(1);
        expectBox(face!, 150, 150);
        // Double Take's normalize(): confidence in percent, box from the four edges
        expect(parseFloat((face!.confidence * 100).toFixed(2))).toBeGreaterThanOrEqual(67);
      }
    }
  });

  it('answers "unknown" with confidence 0 for strangers', async () => {
    const [astronaut] = await recognize(photo(STRANGER));
    expect(astronaut).toMatchObject({ userid: 'unknown', confidence: 0 });
    let unknown = 0;
    for (const p of johnsOf('John_Schneider')) {
      const [face] = await recognize(p.bytes);
      if (face!.userid === 'unknown' && face!.confidence === 0) unknown++;
    }
    expect(unknown).toBeGreaterThanOrEqual(10); // the equal-error rate on johns is 0.33%
  });

  it('recognizes every face of a group photo, unknown when nobody passes', async () => {
    const faces = await recognize(photo(GROUP));
    expect(faces).toHaveLength(3);
    for (const f of faces) expect(f).toMatchObject({ userid: 'unknown', confidence: 0 });
    const detected = await engine.detectFaces(photo(GROUP));
    // the faces detectFaces finds: recognition decodes the photo whole for its crops, detection only as large as its
    // detector needs, so a rect may differ by a pixel or two
    const byLeft = (rects: number[][]) => [...rects].sort((a, b) => a[0]! - b[0]!);
    const expected = byLeft(detected.faces.map((f) => f.rect));
    byLeft(faces.map((f) => [f.x_min, f.y_min, f.x_max, f.y_max])).forEach((rect, i) =>
      rect.forEach((v, k) => expect(Math.abs(v - expected[i]![k]!)).toBeLessThanOrEqual(2)),
    );
  });

  it('the confidence is the calibrated curve of the calibrated distance: 0.67 at 105, falling with the distance', async () => {
    expect(similarityFromDistance(105)).toBeCloseTo(0.67, 12);
    expect(similarityFromDistance(0)).toBeCloseTo(1, 6);
    expect(similarityFromDistance(400)).toBeCloseTo(0, 6);
    expect(similarityFromDistance(60)).toBeGreaterThan(similarityFromDistance(90));
    // the same photo through edgecv's own route: its distance gives the DeepStack confidence
    const p = johnsOf('John_Savage')[8]!;
    const own = await app.request('/recognizer/predict/', { method: 'POST', body: p.bytes, headers: { 'content-type': 'image/jpeg' } });
    const distance = Number(((await own.json()) as { confidence: string }).confidence);
    const [face] = await recognize(p.bytes);
    expect(face!.confidence).toBeCloseTo(similarityFromDistance(distance), 4);
    // a threshold above the match's similarity turns it into "unknown"
    const form = nodeFormData({ api_key: ADMIN, min_confidence: String(Math.min(1, face!.confidence + 0.001)) }, p);
    const [strict] = predictionsOf<RecognizedFace>((await post(app, '/v1/vision/face/recognize', form)).body);
    expect(strict).toMatchObject({ userid: 'unknown', confidence: 0 });
  });

  it('removes a person; deleting an unknown user succeeds too', async () => {
    const del = await post(app, '/v1/vision/face/delete', nodeFormData({ userid: 'John_Savage', api_key: ADMIN }));
    expect(del.status).toBe(200);
    expect(del.body).toEqual({ success: true, duration: 0 });
    const list = await post(app, '/v1/vision/face/list', nodeFormData({ api_key: ADMIN }));
    expect(list.body).toEqual({ success: true, faces: ['John_Salley'], duration: 0 });
    const [face] = await recognize(johnsOf('John_Savage')[9]!.bytes);
    expect(face!.userid).toBe('unknown');
    const again = await post(app, '/v1/vision/face/delete', nodeFormData({ userid: 'nobody', api_key: ADMIN }));
    expect(again.body).toEqual({ success: true, duration: 0 });
  });

  it('register and delete need the admin key (as api_key, admin_key or a header)', async () => {
    const p = johnsOf('John_Simm')[0]!;
    expectDsError(await post(app, '/v1/vision/face/register', nodeFormData({ userid: 'John_Simm' }, p)), 401, /admin key/);
    expectDsError(await post(app, '/v1/vision/face/register', nodeFormData({ userid: 'John_Simm', api_key: 'wrong' }, p)), 401, 'wrong admin key');
    expectDsError(await post(app, '/v1/vision/face/delete', nodeFormData({ userid: 'John_Salley' })), 401, /admin key/);
    expect((await post(app, '/v1/vision/face/register', nodeFormData({ userid: 'John_Simm', admin_key: ADMIN }, p))).status).toBe(200);
    expect((await post(app, '/v1/vision/face/delete', nodeFormData({ userid: 'John_Simm' }), { authorization: `Bearer ${ADMIN}` })).status).toBe(200);
    expect(service.subjects().map((s) => s.subject)).toEqual(['John_Salley']);
  });

  it('two keys: Frigate holds the API key, Double Take the admin key, which opens every route', async () => {
    const twoKeys = appWith(service, { apiKey: API, adminKey: ADMIN });
    const frigate = await post(twoKeys, '/v1/vision/detection', pythonForm({ api_key: API }, { image: frigateFrame('darknet/dog.jpg') }));
    expect(frigate.status).toBe(200);
    const p = johnsOf('John_Shimkus')[0]!;
    const train = await post(twoKeys, '/v1/vision/face/register', nodeFormData({ userid: 'John_Shimkus', api_key: ADMIN }, p));
    expect(train.body).toEqual({ success: true, message: 'face added', duration: 0 });
    const rec = await post(twoKeys, '/v1/vision/face/recognize', nodeFormData({ api_key: ADMIN }, johnsOf('John_Shimkus')[6]!));
    expect(predictionsOf<RecognizedFace>(rec.body)[0]!.userid).toBe('John_Shimkus');
  });

  // DeepStack's server.go guards register and delete with the API key only (the admin key guards models
  // and backups), and the SDK's registerFace/deleteFace, Double Take and deepstack-python send the API key there.
  it('two keys: register and delete take the API key, as in DeepStack; --deepstack-enrolment-key admin keeps them to the admin key', async () => {
    const twoKeys = appWith(service, { apiKey: API, adminKey: ADMIN });
    const p = johnsOf('John_Shimkus')[1]!;
    const sdkRegister = await post(
      twoKeys,
      '/v1/vision/face/register',
      pythonForm({ userid: 'Shimkus_by_api_key', api_key: API }, { image: p.bytes }),
    );
    expect(sdkRegister.body).toEqual({ success: true, message: 'face added', duration: 0 });
    expect(service.subjects().map((s) => s.subject)).toContain('Shimkus_by_api_key');
    expect((await post(twoKeys, '/v1/vision/face/delete', pythonForm({ userid: 'Shimkus_by_api_key', api_key: API }))).body).toEqual({
      success: true,
      duration: 0,
    });
    expect(service.subjects().map((s) => s.subject)).not.toContain('Shimkus_by_api_key');
    // the API key is still needed
    expectDsError(
      await post(twoKeys, '/v1/vision/face/register', pythonForm({ userid: 'x', api_key: 'wrong' }, { image: p.bytes })),
      401,
      'Incorrect api key',
    );
    expectDsError(await post(twoKeys, '/v1/vision/face/delete', pythonForm({ userid: 'John_Shimkus' })), 401, 'Incorrect api key');

    const adminOnly = createApp({
      engine,
      config: { bodyLimit: DEFAULT_BODY_LIMIT, apiKey: API, adminKey: ADMIN, deepstackEnrolmentKey: 'admin' },
      recognition: service,
    });
    expectDsError(
      await post(adminOnly, '/v1/vision/face/register', nodeFormData({ userid: 'John_Shimkus', api_key: API }, p)),
      401,
      'wrong admin key',
    );
    expectDsError(await post(adminOnly, '/v1/vision/face/delete', pythonForm({ userid: 'John_Shimkus', api_key: API })), 401, 'wrong admin key');
    expect((await post(adminOnly, '/v1/vision/face/list', pythonForm({ api_key: API }))).status).toBe(200);
    expect((await post(adminOnly, '/v1/vision/face/register', nodeFormData({ userid: 'Shimkus_by_admin', api_key: ADMIN }, p))).status).toBe(200);
    expect((await post(adminOnly, '/v1/vision/face/delete', pythonForm({ userid: 'Shimkus_by_admin', api_key: ADMIN }))).status).toBe(200);
  });
});

// ------------------------------------------------------------------ face match

// DeepStack's face match as its documentation's Python example posts it (the johnolafenwa/deepstack-docs
// repository, face-match/index.rst): requests.post(url, files={"image1": bytes, "image2": bytes}), no other
// field, each part filed under its own name; it reads response["success"] and response["similarity"].
describe('DeepStack face match', () => {
  let app: App;
  beforeAll(async () => {
    app = appWith(await newService());
  });

  const match = (one: Buffer, two: Buffer) => post(app, '/v1/vision/face/match', pythonForm({}, { image1: one, image2: two }));

  it('the same person scores higher than different people, on the recognition confidence scale', async () => {
    const salley = johnsOf('John_Salley');
    const simm = johnsOf('John_Simm');
    const same: number[] = [];
    const different: number[] = [];
    for (let i = 0; i < 3; i++) {
      const s = await match(salley[i]!.bytes, salley[i + 4]!.bytes);
      expect(s.status).toBe(200);
      expect(Object.keys(s.body)).toEqual(['success', 'similarity', 'inferenceMs', 'processMs', 'duration']);
      expect(s.body.success).toBe(true);
      expectCodeProjectTimes(s.body);
      same.push(s.body.similarity as number);
      different.push((await match(salley[i]!.bytes, simm[i]!.bytes)).body.similarity as number);
    }
    for (const v of [...same, ...different]) expect(v >= 0 && v <= 1).toBe(true);
    expect(Math.min(...same)).toBeGreaterThan(Math.max(...different));
    // The value is the recognition confidence of the two faces' calibrated distance (0.67 at the threshold).
    const [a, b] = await Promise.all([engine.embedFace(salley[0]!.bytes), engine.embedFace(simm[0]!.bytes)]);
    const cosine = a.embedding!.reduce((sum, x, k) => sum + x * b.embedding![k]!, 0);
    const distance = calibratedDistance(cosine, engine.faceEmbedder()!.distanceScale);
    expect(different[0]).toBeCloseTo(similarityFromDistance(distance), 6);
  });

  it('takes image1 and image2 as urlencoded base64 too (the docs promise it for every DeepStack route), the same answer', async () => {
    const salley = johnsOf('John_Salley');
    const files = await match(salley[0]!.bytes, salley[4]!.bytes);
    const b64 = (b: Buffer) => b.toString('base64');
    for (const body of [
      `image1=${encodeURIComponent(b64(salley[0]!.bytes))}&image2=${encodeURIComponent(b64(salley[4]!.bytes))}`,
      `image1=${b64(salley[0]!.bytes)}&image2=${b64(salley[4]!.bytes)}`, // '+' unescaped, as some clients send it
    ]) {
      const r = await post(app, '/v1/vision/face/match', body);
      expect(r.status).toBe(200);
      expect(r.body.similarity).toBe(files.body.similarity);
    }
    const mixed = pythonForm({ image2: b64(salley[4]!.bytes) }, { image1: salley[0]!.bytes });
    expect((await post(app, '/v1/vision/face/match', mixed)).body.similarity).toBe(files.body.similarity);
    expectDsError(await post(app, '/v1/vision/face/match', `image1=${b64(salley[0]!.bytes)}&image2=%%%`), 400, /./);
    expectDsError(await post(app, '/v1/vision/face/match', `image1=${b64(salley[0]!.bytes)}&image2=bm90IGFuIGltYWdl`), 400, 'invalid image file');
  });

  it('refuses a request it cannot answer, in the DeepStack error shape', async () => {
    const salley = johnsOf('John_Salley');
    expectDsError(await match(salley[0]!.bytes, photo(NO_FACE)), 400, 'no face found');
    expectDsError(await match(photo(NO_FACE), salley[0]!.bytes), 400, 'no face found');
    expectDsError(await post(app, '/v1/vision/face/match', pythonForm({}, { image1: salley[0]!.bytes })), 400, /^No valid image file found/);
    expectDsError(
      await post(app, '/v1/vision/face/match', pythonForm({}, { image: salley[0]!.bytes, image2: salley[1]!.bytes })),
      400,
      /image1 and image2/,
    );
    expectDsError(await match(garbage(), salley[0]!.bytes), 400, 'invalid image file');
    expectDsError(
      await post(appWith(undefined), '/v1/vision/face/match', pythonForm({}, { image1: salley[0]!.bytes, image2: salley[1]!.bytes })),
      403,
      /not enabled/,
    );
  });
});

// ------------------------------------------------------------------ register details and errors

describe('DeepStack errors and register with many files', () => {
  let app: App;
  let service: RecognitionService;
  beforeAll(async () => {
    service = await newService();
    app = appWith(service, { adminKey: ADMIN });
  });

  it('register takes any number of files under any part names and keeps each as a sample', async () => {
    // DeepStack's documented call: files={"image1": ..., "image2": ...}, data={"userid": ...}
    const simm = johnsOf('John_Simm');
    const r = await post(
      app,
      '/v1/vision/face/register',
      pythonForm({ userid: 'simm', api_key: ADMIN }, { image1: simm[0]!.bytes, image2: simm[1]!.bytes, x: simm[2]!.bytes }),
    );
    expect(r.body).toEqual({ success: true, message: 'face added', duration: 0 });
    expect(service.subjects()).toEqual([expect.objectContaining({ subject: 'simm', samples: 3 })]);
    // a photo without a face among good ones is skipped; alone it is refused
    const mixed = await post(
      app,
      '/v1/vision/face/register',
      pythonForm({ userid: 'simm', api_key: ADMIN }, { a: photo(NO_FACE), b: simm[3]!.bytes }),
    );
    expect(mixed.status).toBe(200);
    expect(service.subjects()[0]!.samples).toBe(4);
    expectDsError(
      await post(app, '/v1/vision/face/register', pythonForm({ userid: 'simm', api_key: ADMIN }, { image: photo(NO_FACE) })),
      400,
      'no face detected',
    );
    expectDsError(
      await post(app, '/v1/vision/face/register', pythonForm({ userid: 'simm', api_key: ADMIN }, { image: garbage() })),
      400,
      'invalid image file',
    );
  });

  it('answers DeepStack error strings with fitting statuses', async () => {
    expectDsError(await post(app, '/v1/vision/face/register', pythonForm({ userid: 'x', api_key: ADMIN })), 400, 'No valid image file found');
    expectDsError(
      await post(app, '/v1/vision/face/register', pythonForm({ api_key: ADMIN }, { image: johnsOf('John_Simm')[4]!.bytes })),
      400,
      'userid not specified',
    );
    expectDsError(await post(app, '/v1/vision/face/delete', pythonForm({ api_key: ADMIN })), 400, 'userid not specified');
    expectDsError(await post(app, '/v1/vision/detection', pythonForm({ api_key: '' })), 400, 'No valid image file found');
    expectDsError(await post(app, '/v1/vision/face/recognize', pythonForm({ api_key: '' })), 400, 'No valid image file found');
    expectDsError(await post(app, '/v1/vision/detection', pythonForm({ api_key: '' }, { image: garbage() })), 400, 'invalid image file');
    expectDsError(
      await post(app, '/v1/vision/face', pythonForm({ api_key: '' }, { image: photo('darknet/dog.jpg').subarray(0, 600) })),
      400,
      'invalid image file',
    );
    expectDsError(
      await post(app, '/v1/vision/detection', pythonForm({ min_confidence: 'high' }, { image: photo('darknet/dog.jpg') })),
      400,
      'Invalid value for min_confidence',
    );
    expectDsError(
      await post(app, '/v1/vision/face/recognize', pythonForm({ min_confidence: '1.5' }, { image: photo(GROUP) })),
      400,
      'min_confidence cannot be greater than 1',
    );
    expectDsError(
      await post(app, '/v1/vision/detection', pythonForm({ limit: '0' }, { image: photo('darknet/dog.jpg') })),
      400,
      /Invalid value for limit/,
    );
    const textBody = await app.request('/v1/vision/detection', { method: 'POST', body: 'x', headers: { 'content-type': 'text/plain' } });
    expect(textBody.status).toBe(415);
    expect(await textBody.json()).toMatchObject({ success: false, duration: 0 });
  });

  it('a server without a gallery answers the face recognition routes 403', async () => {
    const bare = appWith(undefined);
    for (const route of ['/v1/vision/face/recognize', '/v1/vision/face/list']) {
      expectDsError(await post(bare, route, pythonForm({}, { image: photo(GROUP) })), 403, /not enabled/);
    }
  });
});

// ------------------------------------------------------------------ --http-port: a real plain-HTTP socket

function httpPost(url: string, body: Buffer, headers: Record<string, string>) {
  return new Promise<{ status: number; headers: http.IncomingHttpHeaders; text: string }>((resolve, reject) => {
    const req = http.request(url, { method: 'POST', headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (d: Buffer) => chunks.push(d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, text: Buffer.concat(chunks).toString('utf8') }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(body);
  });
}

/** The exact bytes and Content-Type of a multipart body, for a raw socket request. */
async function encoded(form: FormData): Promise<{ body: Buffer; type: string }> {
  const req = new Request('http://localhost/', { method: 'POST', body: form });
  return { body: Buffer.from(await req.arrayBuffer()), type: req.headers.get('content-type')! };
}

describe('--http-port: the DeepStack routes alone over plain HTTP', () => {
  let server: RunningServer;
  let service: RecognitionService;
  beforeAll(async () => {
    service = await newService();
    // no admin key: gallery changes from loopback clients only, and this socket's client is 127.0.0.1
    const app = createDeepStackApp({ engine, config: { bodyLimit: DEFAULT_BODY_LIMIT }, recognition: service });
    server = await startServer({ app, port: 0, host: '127.0.0.1' });
  });
  afterAll(async () => {
    await server?.close();
  });

  it('answers Frigate with Content-Length, never chunked', async () => {
    expect(server.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/$/);
    const { body, type } = await encoded(pythonForm({ api_key: '' }, { image: frigateFrame('darknet/dog.jpg') }));
    const r = await httpPost(`${server.url}v1/vision/detection`, body, { 'content-type': type, 'content-length': String(body.length) });
    expect(r.status).toBe(200);
    expect(r.headers['transfer-encoding']).toBeUndefined();
    expect(r.headers['content-length']).toBe(String(Buffer.byteLength(r.text)));
    const parsed = JSON.parse(r.text) as Record<string, unknown>;
    expect(predictionsOf<ObjectPrediction>(parsed).map((p) => p.label)).toContain('dog');
  });

  it('registers from loopback without an admin key, and serves nothing but /v1/vision/*', async () => {
    const p = johnsOf('John_Simm')[0]!;
    const { body, type } = await encoded(nodeFormData({ userid: 'simm' }, p));
    const r = await httpPost(`${server.url}v1/vision/face/register`, body, { 'content-type': type });
    expect(r.status).toBe(200);
    expect(JSON.parse(r.text)).toEqual({ success: true, message: 'face added', duration: 0 });
    expect(r.headers['content-length']).toBe(String(Buffer.byteLength(r.text)));

    const detector = await httpPost(`${server.url}detector/detect/`, p.bytes, { 'content-type': 'image/jpeg' });
    expect(detector.status).toBe(404);
    const trainer = await httpPost(`${server.url}trainer/add/?subject=x`, p.bytes, { 'content-type': 'image/jpeg' });
    expect(trainer.status).toBe(404);
  });
});

describe('edgecv serve --http-port --api-key (a real server process)', () => {
  it('serves the DeepStack routes on both ports, the rest on HTTPS only, and checks the key', async () => {
    const httpPort = await freePort();
    const server = await startServerProcess([
      '--data-dir',
      newTmpDir('edgecv-deepstack-serve-'),
      '--workers',
      '1',
      '--http-port',
      String(httpPort),
      '--api-key',
      API,
    ]);
    try {
      const plainUrl = `http://127.0.0.1:${httpPort}/`;
      expect(server.output()).toContain(`DeepStack API (/v1/vision/*) over plain HTTP on ${plainUrl}`);
      const frame = frigateFrame('darknet/dog.jpg');
      for (const [key, status] of [
        [API, 200],
        ['', 401],
      ] as const) {
        const { body, type } = await encoded(pythonForm({ api_key: key }, { image: frame }));
        const r = await httpPost(`${plainUrl}v1/vision/detection`, body, { 'content-type': type });
        expect(r.status).toBe(status);
        expect(r.headers['content-length']).toBe(String(Buffer.byteLength(r.text)));
      }
      const agent = new https.Agent({ rejectUnauthorized: false });
      const { body, type } = await encoded(pythonForm({ api_key: API }));
      const overTls = await httpsRequest(`${server.url}v1/vision/custom/list`, { method: 'POST', body, headers: { 'content-type': type }, agent });
      expect(overTls.status).toBe(200);
      expect(JSON.parse(overTls.text)).toMatchObject({ success: true, models: [engine.models.objects] });
      expect((await httpsRequest(`${server.url}test/`, { agent })).status).toBe(200);
      expect((await httpPost(`${plainUrl}test/`, Buffer.alloc(0), {})).status).toBe(404);
    } finally {
      expect(await server.stop()).toBe(0);
    }
  });
});
