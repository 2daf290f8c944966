// The engine: onnxruntime or OpenCV DNN on the addon's own worker threads, behind a small promise API.
//
//   const engine = await Engine.open();
//   const { faces } = await engine.detectFaces(jpegBytes);
//   await engine.close();
//
// Everything a caller can get wrong is checked in TS before native code, with a friendly EngineError: option
// types and ranges (options.ts, against limits.ts), the image format (sniffed from the bytes) and its pixel
// count (read from the header, so an oversized image is refused before a single pixel is decoded). This file
// is the facade: it checks, calls the addon through one helper that types its rejections, and shapes results.

import { EngineError, toEngineError } from './errors.js';
import {
  checkEmbedOptions,
  checkEmbedding,
  embedderVersion,
  l2Normalized,
  type EmbedFaceOptions,
  type FaceEmbedderInfo,
  type FaceEmbeddingResult,
  type GalleryMatch,
} from './face-embedding.js';
import { GalleryIndex, nativeGallery, type GalleryIndexOptions } from './gallery/gallery-index.js';
import { admitImage, type AdmittedImage, type ImageLimits } from './image-admission.js';
import { ENGINE_DEFAULTS, ENGINE_RANGES, OBJECT_DEFAULTS, POSE_DEFAULTS } from './limits.js';
import { int8ScoreThreshold, isSmallerSibling, modelPrecision, rawModelSpec, readManifest, type LoadedManifest } from './manifest.js';
import { modelSpecs, modelsWithBothForms, specNames } from './model-specs.js';
import { loadNative, type NativeEngine, type NativeRuntime } from './native.js';
import { checkDetectOptions, checkEngineOptions, choiceOption, intOption, invalidArgument, resolveTiles, unitOption } from './options.js';
import { cocoToBody25 } from './pose.js';
import { timeModelForms } from './precision-timer.js';
import { gpuNetNames, planGpu, withGpuDevices, type GpuPlan } from './gpu-plan.js';
import { gpuVerdict, PhaseClock } from './startup-phases.js';
import {
  POSE_MODES,
  PRECISIONS,
  type BackendInfo,
  type DetectFacesOptions,
  type DetectObjectsOptions,
  type DetectPosesOptions,
  type EngineModels,
  type EngineOptions,
  type EngineStats,
  type FaceDetection,
  type Precision,
  type PrecisionTiming,
  type NetKey,
  type ObjectDetection,
  type ObjectModelInfo,
  type PoseDetection,
} from './types.js';

export class Engine {
  readonly #native: NativeEngine;
  readonly #manifest: LoadedManifest;
  readonly #modelDir: string;
  readonly #limits: ImageLimits;
  readonly #backend: BackendInfo;
  readonly #embedder: FaceEmbedderInfo | null;
  /** The precision asked for at open, int8 for 'auto' (each model's own is in backend().precisions). */
  readonly #precision: Precision;
  /** false: every face is embedded as the box crop (EngineOptions.faceAlignment). */
  #faceAlignment = true;
  #closed = false;
  #closing: Promise<void> | undefined;
  /** Requests the host is serving (serveRequest()). */
  #hostRequests = 0;
  #models: EngineModels = { faceDetector: ENGINE_DEFAULTS.faceDetector, pose: null, objects: null, persons: null, faceEmbedder: null };
  #objects: { info: ObjectModelInfo; labels: readonly string[] } | null = null;
  /** The class id of "person" in the labels of the model that finds people for pose (-1: none can). */
  #personClassId = -1;
  /** The object model's default score threshold: an int8 model's own where its manifest sets one (its scores run a little lower than fp32's). */
  #objectScoreThreshold: number = OBJECT_DEFAULTS.scoreThreshold.centernet;
  /**
   * When the person detector is the object model at a smaller input size: that size, and its default score
   * threshold. An image no larger than it runs there (isSmallerSibling in manifest.ts).
   */
  #smallImages: { side: number; scoreThreshold: number } | null = null;
  /** Detector score above which a box is a person to pose: the int8 person finder's own where its manifest sets one. */
  #personThreshold: number = POSE_DEFAULTS.personThreshold;

  private constructor(
    native: NativeEngine,
    manifest: LoadedManifest,
    modelDir: string,
    limits: ImageLimits,
    embedder: FaceEmbedderInfo | null,
    precision: Precision,
    modelNames: Record<string, string | undefined>,
    timed: Record<string, PrecisionTiming>,
    gpu: GpuPlan | null,
  ) {
    this.#embedder = embedder;
    this.#native = native;
    this.#manifest = manifest;
    this.#modelDir = modelDir;
    this.#limits = limits;
    this.#precision = precision;
    const backend = native.backend();
    const precisions: Record<string, Precision> = {};
    const precisionTimings: Record<string, PrecisionTiming> = {};
    for (const [key, runtime] of Object.entries(backend.runtimes)) {
      const name = modelNames[key];
      const chosen = name === undefined ? undefined : timed[name];
      const onGpu = gpu?.nets[key as NetKey]?.device === 'gpu'; // a GPU net runs its fp32 file
      precisions[key] = name === undefined || onGpu ? 'fp32' : modelPrecision(manifest, name, chosen?.chosen ?? precision, runtime);
      if (chosen) precisionTimings[key] = { ...chosen };
    }
    this.#backend = {
      ...backend,
      precisions,
      ...(Object.keys(timed).length > 0 ? { precisionTimings } : {}),
      ...(gpu?.adapter?.usable ? { gpuChecks: gpu.nets } : {}),
    };
  }

  /** Loads the models (one copy per worker) and starts the workers. */
  static async open(opts: EngineOptions = {}): Promise<Engine> {
    const checked = checkEngineOptions(opts);
    const {
      workers,
      threadsPerWorker,
      queueLimit,
      idleCores,
      warmUp,
      limits,
      poseModel,
      faceEmbedder,
      faceAlignment,
      modelDir,
      precision,
      backend,
      library,
    } = checked;
    const clock = new PhaseClock(opts.onStartupPhase);
    const manifest = await readManifest(modelDir);
    const binding = loadNative();
    const onnxRuntimeLibrary = library !== null && 'path' in library ? { onnxRuntimeLibrary: library.path } : {};
    const fixed: Precision = precision === 'auto' ? 'int8' : precision;
    let specs = await modelSpecs(opts, checked, manifest, () => fixed);
    const names = specNames(checked, specs);
    clock.lap('model files', clock.modelFiles());
    // The GPU check (gpu-check.ts) first: a net it puts on the GPU runs its fp32 file there, and is not timed on the CPU.
    const gpu = await planGpu(binding, checked, { threadsPerWorker, ...onnxRuntimeLibrary }, manifest, names, fixed);
    const onGpu = gpuNetNames(gpu, names);
    clock.lap('GPU check', gpu && gpuVerdict(gpu, onGpu.size));
    const precisionOf = (name: string, cpu: Precision) => (onGpu.has(name) ? 'fp32' : cpu);
    let timed: Record<string, PrecisionTiming> = {};
    if (precision === 'auto') {
      const both = modelsWithBothForms(manifest, checked, names).filter((name) => !onGpu.has(name));
      timed = await timeModelForms(binding, { threadsPerWorker, backend, ...onnxRuntimeLibrary }, manifest, modelDir, both);
      clock.lap('precision timing', `${both.length} models with an int8 and an fp32 file`);
    }
    if (precision === 'auto' || onGpu.size > 0)
      specs = await modelSpecs(opts, checked, manifest, (name) => precisionOf(name, timed[name]?.chosen ?? fixed));
    const { face: spec, pose: poseEstimator, objects, persons, embedder } = withGpuDevices(specs, gpu);
    // Synchronous: loads and warms up workers x models; throws a clear Error if a model is unusable.
    const native = binding.createEngine({
      workers,
      threadsPerWorker,
      queueLimit,
      idleCores,
      warmUp,
      backend,
      ...onnxRuntimeLibrary,
      faceDetector: spec,
      poseEstimator,
      ...(objects ? { objectDetector: objects.spec } : {}),
      ...(persons ? { personDetector: persons.spec } : {}),
      ...(embedder ? { faceEmbedder: embedder.spec } : {}),
    });
    // An own object model (a file) has no manifest entry: modelPrecision finds none and says fp32.
    const modelNames = specNames(checked, specs);
    clock.loaded(native.stats().warmUp, modelNames, workers, warmUp);
    const embedderInfo = embedder
      ? { ...embedder.info, version: embedderVersion(embedder.info.version, faceAlignment), dim: native.embeddingSize() }
      : null;
    const engine = new Engine(native, manifest, modelDir, limits, embedderInfo, fixed, modelNames, timed, gpu);
    engine.#faceAlignment = faceAlignment;
    const { faceDetector } = checked;
    const personFinder = poseModel === null ? null : (persons ?? objects);
    engine.#models = { faceDetector, pose: poseModel, objects: objects?.info.name ?? null, persons: personFinder?.info.name ?? null, faceEmbedder };
    engine.#objects = objects ? { info: objects.info, labels: objects.labels } : null;
    engine.#personClassId = personFinder?.labels.indexOf('person') ?? -1;
    const defaultScore = (key: 'objectDetector' | 'personDetector', model: { info: ObjectModelInfo }) =>
      (engine.#backend.precisions[key] === 'int8' ? int8ScoreThreshold(manifest, model.info.name, 'scoreThreshold') : undefined) ??
      OBJECT_DEFAULTS.scoreThreshold[model.info.kind];
    if (objects) engine.#objectScoreThreshold = defaultScore('objectDetector', objects);
    if (objects && persons && isSmallerSibling(manifest, objects, persons)) {
      engine.#smallImages = { side: persons.info.inputSize, scoreThreshold: defaultScore('personDetector', persons) };
    }
    const personKey = persons ? 'personDetector' : 'objectDetector';
    if (personFinder && engine.#backend.precisions[personKey] === 'int8') {
      engine.#personThreshold = int8ScoreThreshold(manifest, personFinder.info.name, 'personThreshold') ?? POSE_DEFAULTS.personThreshold;
    }
    return engine;
  }

  /** The object model (name, kind, input size, licence), or null when none is loaded. */
  get objectModel(): ObjectModelInfo | null {
    return this.#objects ? { ...this.#objects.info } : null;
  }

  /** The models this engine loaded (labels for metrics and logs); null where a model was left out. */
  get models(): EngineModels {
    return { ...this.#models };
  }

  /** Finds faces in a PNG or JPEG image. Rejects with EngineError (see EngineErrorCode). */
  async detectFaces(image: Buffer | Uint8Array, opts: DetectFacesOptions = {}): Promise<FaceDetection> {
    const { header, bytes } = this.#checkImage(image, opts, 'detectFaces');
    const options = resolveTiles(checkDetectOptions(opts), header);
    const result = await this.#call(() => this.#native.detectFaces(bytes, options));
    return { ...result, format: header.format };
  }

  /** The embedding model in use (null when the engine was opened with faceEmbedder: null). */
  faceEmbedder(): FaceEmbedderInfo | null {
    return this.#embedder ? { ...this.#embedder } : null;
  }

  #requireEmbedder(): FaceEmbedderInfo {
    if (!this.#embedder) throw invalidArgument('this engine was opened with faceEmbedder: null');
    return this.#embedder;
  }

  /** An empty gallery for this engine's embeddings (options: when to search it approximately, and how). */
  createGallery(options: GalleryIndexOptions = {}): GalleryIndex {
    return new GalleryIndex(this.#requireEmbedder().dim, options);
  }

  /**
   * Detects the faces and embeds the first one: the highest detection score (ties: leftmost, then topmost). With
   * options.rect, embeds that box instead of detecting. No face is a result (face and embedding null), not an error.
   */
  async embedFace(image: Buffer | Uint8Array, opts: EmbedFaceOptions = {}): Promise<FaceEmbeddingResult> {
    return this.#embed(image, opts, undefined);
  }

  /** embedFace() plus the nearest entry of `gallery` (null when the gallery is empty or no face was found). */
  async recognizeFace(
    image: Buffer | Uint8Array,
    gallery: GalleryIndex,
    opts: EmbedFaceOptions = {},
  ): Promise<FaceEmbeddingResult & { match: GalleryMatch | null }> {
    return this.#embed(image, opts, gallery);
  }

  async #embed(image: Buffer | Uint8Array, opts: EmbedFaceOptions, gallery: GalleryIndex | undefined) {
    const embedder = this.#requireEmbedder();
    const { header, bytes } = this.#checkImage(image, opts, 'embedFace');
    const native = gallery === undefined ? undefined : nativeGallery(gallery);
    if (native && native.dim() !== embedder.dim) throw invalidArgument(`gallery has dimension ${native.dim()}, the model ${embedder.dim}`);
    const checked = checkEmbedOptions(opts, (d) => checkDetectOptions(d, 'detect options'));
    // A large gallery is searched approximately on this thread once the embedding is back; a small one exactly,
    // inside the job on the worker.
    const approximate = gallery !== undefined && gallery.approximate;
    return this.#call(async () => {
      const result = await this.#native.embedFace(bytes, {
        detect: resolveTiles(checked.detect, header),
        // The model's own crop margin unless the caller set one: passed explicitly, the addon holds no default.
        cropScale: checked.cropScale ?? embedder.cropScale,
        keepCrop: checked.keepCrop,
        align: checked.align && this.#faceAlignment,
        rotatedPasses: checked.rotatedPasses,
        ...(checked.rect ? { rect: checked.rect } : {}),
        ...(checked.keypoints ? { keypoints: checked.keypoints } : {}),
        ...(native && !approximate ? { gallery: native } : {}),
      });
      if (approximate && result.embedding) {
        const t = performance.now();
        result.match = gallery.searchApproximate(result.embedding);
        result.timings.searchMs = performance.now() - t;
      }
      return result;
    });
  }

  /**
   * The nearest entry of `gallery` to `embedding` (null when the gallery is empty): through its approximate index
   * on this thread when it has one in use, else (or with `exact: true`) with the exact index on a worker.
   */
  async searchGallery(
    gallery: GalleryIndex,
    embedding: Float32Array,
    opts: { exact?: boolean } = {},
  ): Promise<{ match: GalleryMatch | null; searchMs: number }> {
    if (this.#closed) throw new EngineError('CLOSED', 'engine is closed');
    const native = nativeGallery(gallery);
    const query = l2Normalized(checkEmbedding(embedding, native.dim(), 'query'), 'query');
    if (gallery.approximate && opts.exact !== true) {
      const t = performance.now();
      const match = gallery.searchApproximate(query);
      return { match, searchMs: performance.now() - t };
    }
    return this.#call(() => this.#native.searchGallery(native, query));
  }

  /**
   * Finds people and their keypoints in a PNG or JPEG image: at most `maxPoses` (default 6), best first.
   * Rejects with EngineError (see EngineErrorCode).
   */
  async detectPoses(image: Buffer | Uint8Array, opts: DetectPosesOptions = {}): Promise<PoseDetection> {
    const { header, bytes } = this.#checkImage(image, opts, 'detectPoses');
    const keypointThreshold = unitOption(opts.keypointThreshold, 'keypointThreshold', POSE_DEFAULTS.keypointThreshold);
    const personClassId = this.#personClassId;
    const mode = choiceOption(opts.mode, 'mode', POSE_MODES, personClassId >= 0 ? POSE_DEFAULTS.mode : 'whole');
    if (mode === 'persons' && personClassId < 0) {
      throw invalidArgument('mode \'persons\' needs an object model or personDetector with a "person" class (this engine has none)');
    }
    const defaultMax = mode === 'persons' ? POSE_DEFAULTS.maxPosesPersons : POSE_DEFAULTS.maxPoses;
    const defaultScore = mode === 'persons' ? POSE_DEFAULTS.scoreThresholdPersons : POSE_DEFAULTS.scoreThreshold;
    const scoreThreshold = unitOption(opts.scoreThreshold, 'scoreThreshold', defaultScore);
    const maxPoses = intOption(opts.maxPoses, 'maxPoses', defaultMax, ENGINE_RANGES.maxPoses);
    const result = await this.#call(() =>
      this.#native.detectPoses(bytes, {
        scoreThreshold,
        maxPoses,
        personClassId: mode === 'persons' ? personClassId : -1,
        personThreshold: this.#personThreshold,
      }),
    );
    const poses = result.poses.map((p) => ({
      score: p.score,
      box: p.box,
      keypoints: Array.from({ length: p.keypoints.length / 3 }, (_, i) => ({
        x: p.keypoints[3 * i]!,
        y: p.keypoints[3 * i + 1]!,
        score: p.keypoints[3 * i + 2]!,
      })),
      body25: cocoToBody25(p.keypoints, keypointThreshold),
    }));
    return { width: result.width, height: result.height, format: header.format, poses, timings: result.timings };
  }

  /** Finds COCO objects in a PNG or JPEG image, best first. Rejects with EngineError (see EngineErrorCode). */
  async detectObjects(image: Buffer | Uint8Array, opts: DetectObjectsOptions = {}): Promise<ObjectDetection> {
    const { header, bytes } = this.#checkImage(image, opts, 'detectObjects');
    const small = this.#smallImages !== null && Math.max(header.width, header.height) <= this.#smallImages.side ? this.#smallImages : null;
    const scoreThreshold = unitOption(opts.scoreThreshold, 'scoreThreshold', small?.scoreThreshold ?? this.#objectScoreThreshold);
    const maxObjects = intOption(opts.maxObjects, 'maxObjects', OBJECT_DEFAULTS.maxObjects, ENGINE_RANGES.maxObjects);
    const result = await this.#call(() => this.#native.detectObjects(bytes, { scoreThreshold, maxObjects, onPersonDetector: small !== null }));
    const objects = result.objects.map((o) => ({
      rect: o.rect,
      className: this.#objects?.labels[o.classId] ?? String(o.classId),
      classId: o.classId,
      score: o.score,
    }));
    return { width: result.width, height: result.height, format: header.format, objects, timings: result.timings };
  }

  /** The checks every image call makes before native code: open engine, bytes, options object, then admitImage. */
  #checkImage(image: unknown, opts: unknown, method: string): AdmittedImage {
    if (this.#closed) throw new EngineError('CLOSED', 'engine is closed');
    if (!(image instanceof Uint8Array)) throw invalidArgument('image must be a Buffer or Uint8Array');
    if (typeof opts !== 'object' || opts === null) throw invalidArgument(`${method} options must be an object`);
    return admitImage(image, this.#limits); // UNSUPPORTED_FORMAT / INVALID_IMAGE / IMAGE_TOO_LARGE
  }

  /**
   * One forward pass of any model in the manifest on a caller-made input tensor (NCHW, already normalized),
   * returning its outputs in manifest order; the engine's precision picks the model's int8 file where it has one
   * (opts.precision overrides). For checking converted models (parity tests); goes through the
   * same queue and workers as detection, each worker loading the model on first use.
   */
  async runModel(name: string, input: Float32Array, opts: { runtime?: NativeRuntime; precision?: Precision } = {}): Promise<Float32Array[]> {
    if (this.#closed) throw new EngineError('CLOSED', 'engine is closed');
    if (typeof name !== 'string') throw invalidArgument('model name must be a string');
    if (!(input instanceof Float32Array)) throw invalidArgument('input must be a Float32Array');
    if (typeof opts !== 'object' || opts === null) throw invalidArgument('runModel options must be an object');
    const runtime = choiceOption(opts.runtime, 'runtime', ['onnxruntime', 'opencv'] as const, this.#backend.onnxRuntime ? 'onnxruntime' : 'opencv');
    const precision = choiceOption(opts.precision, 'precision', PRECISIONS, this.#precision);
    const spec = rawModelSpec(this.#manifest, this.#modelDir, name, runtime, precision);
    if (spec === null) {
      throw invalidArgument(`unknown model "${name}" (known: ${Object.keys(this.#manifest.models).join(', ')})`);
    }
    const expected = spec.inputShape.reduce((a, b) => a * b, 1);
    if (input.length !== expected) {
      throw invalidArgument(`input has ${input.length} values; ${name} takes [${spec.inputShape.join(',')}] = ${expected}`);
    }
    return this.#call(() => this.#native.runModel(input, spec));
  }

  /** The device in use (the single source of "gpu_support") and the runtime of each model. */
  backend(): BackendInfo {
    // Where each net runs now: a GPU net that failed there has moved to the CPU since open.
    const { devices, gpuLost } = this.#native.backend();
    return { ...this.#backend, devices, gpuLost };
  }

  stats(): EngineStats {
    return this.#native.stats();
  }

  /**
   * Marks a request the host (an HTTP server) is serving, until the returned function is called. With idleCores
   * 'lend', a short inference (a face detector's few ms) borrows the idle cores only while its request is the only
   * one: with others in flight those cores do their TLS and JSON (native/runtime/idle_cores.h). Long inferences
   * borrow them whenever their job is alone in the engine, marked or not.
   */
  serveRequest(): () => void {
    this.#native.setHostRequests(++this.#hostRequests);
    let ended = false;
    return () => {
      if (ended) return;
      ended = true;
      this.#native.setHostRequests(--this.#hostRequests);
    };
  }

  get closed(): boolean {
    return this.#closed;
  }

  /** Stops accepting work, lets queued jobs finish, joins the workers. Idempotent. */
  close(): Promise<void> {
    this.#closed = true;
    this.#closing ??= this.#call(() => this.#native.close());
    return this.#closing;
  }

  /** A native call: its rejection (an Error with a native `.code`, or anything else) becomes an EngineError. */
  async #call<T>(run: () => Promise<T>): Promise<T> {
    try {
      return await run();
    } catch (e) {
      throw toEngineError(e);
    }
  }
}
