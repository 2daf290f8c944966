// Each way a Node developer gets boxes from photo bytes, end to end, as that developer would write it: edgecv's
// Engine call; onnxruntime-node with sharp decoding and JS pre/post-processing; opencv4nodejs (cv.imdecode,
// resize, blobFromImage, cv.dnn on the same converted file the addon's OpenCV runtime uses, JS decoding); TF.js
// (wasm backend) running the original TF.js graph cut at the same nodes; and for faces the seed server's Haar
// cascade through opencv4nodejs. Every call gets 2 compute threads where the library lets one choose.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { ConvertedManifest, ConvertedModelEntry } from '../../models/model-manifest.js';
import { COCO_CLASSES, DETECT_DEFAULTS, Engine, OBJECT_DEFAULTS, POSE_DEFAULTS } from '../../src/index.js';
import { decodeFaces, decodeMoveNet, decodeYolo, letterbox, toTensor, type Box, type Letterbox } from '../../testkit/alternative-decode.js';
import { loadBenchDep, loadOpenCv, type Cv, type CvCascade, type CvMat, type CvNet, type Sharp } from './deps.js';

export const THREADS = 2;

export const ROUTES = ['faces', 'pose', 'objects'] as const;
export type Route = (typeof ROUTES)[number];

/** The model each route runs (the server's default for it), the photo, and the letterbox fill it was trained with. */
export const ROUTE_MODELS: Record<Route, { model: string; photo: string; pad: number }> = {
  faces: { model: 'facemesh-detection-full', photo: 'dlib/faces/2008_002506.jpg', pad: 0 },
  pose: { model: 'movenet-multipose', photo: 'darknet/person.jpg', pad: 0 },
  objects: { model: 'yolov5s', photo: 'darknet/dog.jpg', pad: 114 },
};

export const ALTERNATIVES = ['edgecv', 'onnxruntime-node', 'opencv4nodejs', 'tfjs-wasm', 'opencv4nodejs Haar'] as const;
export type Alternative = (typeof ALTERNATIVES)[number];

export interface Runner {
  /** What runs the model (library and version). */
  runtime: string;
  /** The model file or graph it runs. */
  model: string;
  detect(bytes: Buffer): Promise<Box[]>;
  close(): Promise<void>;
}

export type Opened = { ok: true; runner: Runner } | { ok: false; reason: string };

interface DetectorInfo {
  anchorLayers: { stride: number; anchors: number }[];
}
interface YoloInfo {
  strides: number[];
  anchors: number[][];
}

function entry(root: string, name: string): ConvertedModelEntry {
  const manifest = JSON.parse(readFileSync(join(root, 'models', 'onnx', 'manifest.json'), 'utf8')) as ConvertedManifest;
  const e = manifest.models[name];
  if (!e) throw new Error(`models/onnx/manifest.json has no ${name}`);
  return e;
}

/** Raw model outputs (in manifest order, NHWC as the TF graph has them) -> boxes, the same JS for every runtime. */
function decoder(route: Route, e: ConvertedModelEntry): (outputs: Float32Array[], box: Letterbox) => Box[] {
  switch (route) {
    case 'faces': {
      const { anchorLayers } = e['detector'] as DetectorInfo;
      const opts = { scoreThreshold: DETECT_DEFAULTS.scoreThreshold, iouThreshold: DETECT_DEFAULTS.iouThreshold };
      return (o, box) => decodeFaces(o[0]!, o[1]!, anchorLayers, box, opts);
    }
    case 'pose': {
      const opts = { scoreThreshold: POSE_DEFAULTS.scoreThreshold, maxPoses: POSE_DEFAULTS.maxPoses };
      return (o, box) =>
        decodeMoveNet({ centre: o[0]!, boxScale: o[1]!, boxOffset: o[2]!, heatmap: o[3]!, regress: o[4]!, offset: o[5]! }, box, opts);
    }
    case 'objects': {
      const { strides, anchors } = e['yolo'] as YoloInfo;
      const opts = { scoreThreshold: OBJECT_DEFAULTS.scoreThreshold.yolo, maxObjects: OBJECT_DEFAULTS.maxObjects };
      return (o, box) => decodeYolo(o, strides, anchors, COCO_CLASSES, box, opts);
    }
  }
}

function failed(err: unknown): Opened {
  return { ok: false, reason: err instanceof Error ? err.message.split('\n')[0]! : String(err) };
}

// ------------------------------------------------------------------ edgecv

async function openEdgecv(route: Route): Promise<Opened> {
  // 2 workers x 2 threads: one call uses 2 threads, two concurrent calls run side by side (as the others may).
  const engine = await Engine.open({
    workers: 2,
    threadsPerWorker: THREADS,
    faceDetector: 'facemesh-detection-full',
    poseModel: route === 'pose' ? 'movenet-multipose' : null,
    objectDetector: route === 'objects' ? 'yolov5s' : null,
    faceEmbedder: null,
  });
  const runtime = `edgecv addon (${engine.backend().runtimes[route === 'faces' ? 'faceDetector' : route === 'pose' ? 'poseEstimator' : 'objectDetector'] ?? '?'})`;
  const detect = async (bytes: Buffer): Promise<Box[]> => {
    if (route === 'faces') return (await engine.detectFaces(bytes, { tiles: 0 })).faces.map((f) => ({ rect: f.rect, score: f.score, label: 'face' }));
    if (route === 'pose')
      return (await engine.detectPoses(bytes, { mode: 'whole' })).poses.map((p) => ({ rect: p.box, score: p.score, label: 'person' }));
    return (await engine.detectObjects(bytes)).objects.map((o) => ({ rect: o.rect, score: o.score, label: o.className }));
  };
  return { ok: true, runner: { runtime, model: ROUTE_MODELS[route].model, detect, close: () => engine.close() } };
}

// ------------------------------------------------------------------ sharp: decode + letterbox resize in JS

/** Photo bytes -> the model's float input: sharp decodes and resizes (libvips), JS pads and normalizes. */
async function sharpInput(sharp: Sharp, bytes: Buffer, e: ConvertedModelEntry, pad: number, layout: 'NCHW' | 'NHWC') {
  const size = e.input.shape[2]!;
  const meta = await sharp(bytes).metadata();
  const box = letterbox(meta.width!, meta.height!, size);
  const { data } = await sharp(bytes).resize(box.width, box.height, { fit: 'fill' }).removeAlpha().raw().toBuffer({ resolveWithObject: true });
  return { box, tensor: toTensor(data, box, { mean: e.input.mean, scale: e.input.scale, pad }, layout) };
}

// ------------------------------------------------------------------ onnxruntime-node

// Runtimes are imported when opened, so the RSS probe of one alternative does not carry the others' libraries.

async function openOrtNode(root: string, route: Route): Promise<Opened> {
  const ort = await import('onnxruntime-node');
  const sharp = loadBenchDep<Sharp>(root, 'sharp');
  if (!sharp.ok) return { ok: false, reason: `needs sharp to decode: ${sharp.reason}` };
  const e = entry(root, ROUTE_MODELS[route].model);
  const session = await ort.InferenceSession.create(join(root, 'models', 'onnx', e.ortFile), {
    intraOpNumThreads: THREADS,
    interOpNumThreads: 1,
    executionMode: 'sequential',
  });
  const decode = decoder(route, e);
  const detect = async (bytes: Buffer): Promise<Box[]> => {
    const { box, tensor } = await sharpInput(sharp.value, bytes, e, ROUTE_MODELS[route].pad, 'NCHW');
    const out = await session.run({ [e.input.name]: new ort.Tensor('float32', tensor, e.input.shape) });
    return decode(
      e.outputs.map((o) => out[o.name]!.data as Float32Array),
      box,
    );
  };
  return {
    ok: true,
    runner: {
      runtime: `onnxruntime-node ${ort.env.versions.node ?? ''} + sharp ${sharp.version}`,
      model: e.ortFile,
      detect,
      close: () => session.release(),
    },
  };
}

// ------------------------------------------------------------------ opencv4nodejs

/** One native object per call in flight: a cv.dnn Net (or a cascade) is not safe to run from two threads at once. */
function pool<T>(make: () => T, size: number) {
  const free = Array.from({ length: size }, make);
  const waiting: ((item: T) => void)[] = [];
  return async <R>(use: (item: T) => Promise<R>): Promise<R> => {
    const item = free.pop() ?? (await new Promise<T>((resolve) => waiting.push(resolve)));
    try {
      return await use(item);
    } finally {
      const next = waiting.shift();
      if (next) next(item);
      else free.push(item);
    }
  };
}

function loadCv(root: string): { ok: true; cv: Cv; version: string } | { ok: false; reason: string } {
  const cv = loadOpenCv(root);
  if (!cv.ok) return cv;
  cv.value.setNumThreads(THREADS); // process-wide, like the addon's OpenCV runtime
  return { ok: true, cv: cv.value, version: `opencv4nodejs ${cv.version}` };
}

async function openOpenCv(root: string, route: Route): Promise<Opened> {
  const loaded = loadCv(root);
  if (!loaded.ok) return loaded;
  const { cv } = loaded;
  const e = entry(root, ROUTE_MODELS[route].model);
  const nets = pool<CvNet>(() => cv.readNetFromONNX(join(root, 'models', 'onnx', e.file)), 2);
  const names = e.outputs.map((o) => o.name);
  const size = e.input.shape[2]!;
  const pad = ROUTE_MODELS[route].pad;
  const decode = decoder(route, e);
  const detect = async (bytes: Buffer): Promise<Box[]> => {
    const image = await cv.imdecodeAsync(bytes); // BGR
    const box = letterbox(image.cols, image.rows, size);
    const resized = await image.resizeAsync(new cv.Size(box.width, box.height), 0, 0, box.width < image.cols ? cv.INTER_AREA : cv.INTER_LINEAR);
    const right = size - box.width - box.padX;
    const bottom = size - box.height - box.padY;
    const padded = await resized.copyMakeBorderAsync(box.padY, bottom, box.padX, right, cv.BORDER_CONSTANT, new cv.Vec3(pad, pad, pad));
    const m = e.input.mean;
    const blob = await cv.blobFromImageAsync(padded, e.input.scale, new cv.Size(size, size), new cv.Vec3(m, m, m), true, false);
    const outputs = await nets(async (net: CvNet) => {
      net.setInput(blob);
      return net.forwardAsync(names);
    });
    return decode(outputs.map(floats), box);
  };
  return { ok: true, runner: { runtime: loaded.version, model: e.file, detect, close: async () => {} } };
}

/** An N-d output blob as floats: getData() takes 2-d Mats only, so view it as 1 x N first (no copy). */
function floats(m: CvMat): Float32Array {
  const data = m
    .flattenFloat(
      1,
      m.sizes.reduce((a, b) => a * b, 1),
    )
    .getData();
  return new Float32Array(data.buffer, data.byteOffset, data.byteLength / 4);
}

/** The seed server's face detector: OpenCV's frontal-face Haar cascade, from the system OpenCV's data. */
export const HAAR_CASCADE = '/usr/share/opencv4/haarcascades/haarcascade_frontalface_default.xml';

async function openHaar(root: string, route: Route): Promise<Opened> {
  if (route !== 'faces') return { ok: false, reason: 'faces only' };
  const loaded = loadCv(root);
  if (!loaded.ok) return loaded;
  const { cv } = loaded;
  const cascades = pool<CvCascade>(() => new cv.CascadeClassifier(HAAR_CASCADE), 2);
  const detect = async (bytes: Buffer): Promise<Box[]> => {
    const gray = await (await cv.imdecodeAsync(bytes)).bgrToGrayAsync();
    // The usual settings of opencv4nodejs's own face example.
    const { objects, numDetections } = await cascades((c: CvCascade) => c.detectMultiScaleAsync(gray, 1.1, 5, 0, new cv.Size(24, 24)));
    return objects.map((r, i) => ({ rect: [r.x, r.y, r.x + r.width, r.y + r.height], score: numDetections[i] ?? 0, label: 'face' }));
  };
  return { ok: true, runner: { runtime: loaded.version, model: 'haarcascade_frontalface_default.xml', detect, close: async () => {} } };
}

// ------------------------------------------------------------------ TF.js, wasm backend

async function openTfjs(root: string, route: Route): Promise<Opened> {
  const sharp = loadBenchDep<Sharp>(root, 'sharp');
  if (!sharp.ok) return { ok: false, reason: `needs sharp to decode: ${sharp.reason}` };
  const { setThreadsCount } = await import('@tensorflow/tfjs-backend-wasm');
  const { TfjsReference, useTfjsBackend } = await import('../../testkit/tfjs-reference.js');
  // Asks for 2 threads; in Node the wasm backend runs its single-threaded build anyway (getThreadsCount() is 1).
  setThreadsCount(THREADS);
  await useTfjsBackend('wasm');
  const e = entry(root, ROUTE_MODELS[route].model);
  const graph = await TfjsReference.load(
    e.source.file,
    e.input.tfNode,
    e.outputs.map((o) => o.tfNode),
    undefined,
    e.source.package,
  );
  const size = e.input.shape[2]!;
  const decode = decoder(route, e);
  const detect = async (bytes: Buffer): Promise<Box[]> => {
    const { box, tensor } = await sharpInput(sharp.value, bytes, e, ROUTE_MODELS[route].pad, 'NHWC');
    return decode(await graph.run(tensor, [1, size, size, 3]), box);
  };
  return {
    ok: true,
    runner: {
      runtime: `TF.js wasm + sharp ${sharp.version}`,
      model: `${e.source.package}/${e.source.file}`,
      detect,
      close: async () => graph.dispose(),
    },
  };
}

/** tfjs-node is not measured: say why. Its install script fetches libtensorflow from Google storage. */
export const TFJS_NODE_REASON =
  'not measured: @tensorflow/tfjs-node 4.22.0 downloads libtensorflow from storage.googleapis.com at install, unreachable here (npm install fails with ENOTFOUND)';

export async function openRunner(root: string, alternative: Alternative, route: Route): Promise<Opened> {
  try {
    switch (alternative) {
      case 'edgecv':
        return await openEdgecv(route);
      case 'onnxruntime-node':
        return await openOrtNode(root, route);
      case 'opencv4nodejs':
        return await openOpenCv(root, route);
      case 'tfjs-wasm':
        return await openTfjs(root, route);
      case 'opencv4nodejs Haar':
        return await openHaar(root, route);
    }
  } catch (err) {
    return failed(err);
  }
}
