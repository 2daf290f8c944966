// Every limit and default has one definition (src/engine/limits.ts). These tests pin each value there, check
// that the engine, the server config/CLI and the DeepStack routes enforce exactly that value, and that the
// engine hands every option to the native addon explicitly (the addon keeps no defaults of its own).

import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { ConfigError, DEFAULT_BODY_LIMIT as CONFIG_BODY_LIMIT, parseServerConfig, serverOptionsHelp } from '../src/config.js';
import {
  AUTO_MAX_TILES,
  AUTO_TILE_PIXELS,
  CROP_SCALE_RANGE,
  CUSTOM_OBJECT_INPUT_SIZE,
  DEFAULT_BODY_LIMIT,
  DETECT_DEFAULTS,
  ENGINE_DEFAULTS,
  ENGINE_RANGES,
  IMAGE_LIMIT_DEFAULTS,
  MAX_POSES,
  MAX_POSES_LIMIT,
  MAX_TILES,
  OBJECT_DEFAULTS,
  POSE_DEFAULTS,
  YOLO_NMS_IOU,
  YOLO_PAD_VALUE,
} from '../src/engine/limits.js';
import { loadNative, type NativeEngine, type NativeEngineOptions } from '../src/engine/native.js';
import * as publicApi from '../src/index.js';
import { DETECTION_DEFAULTS } from '../src/server/deepstack/detection.js';
import type { Engine, EngineOptions } from '../src/index.js';
import { openEngine, photo } from './helpers.js';

describe('the one definition of each limit and default', () => {
  it('pins the engine option ranges', () => {
    expect(ENGINE_RANGES).toEqual({
      workers: { min: 1, max: 64 },
      threadsPerWorker: { min: 1, max: 64 },
      queueLimit: { min: 1, max: 1_000_000 },
      maxPixels: { min: 1, max: Number.MAX_SAFE_INTEGER },
      maxAspectRatio: { min: 1, max: 1_000_000 },
      minImageSide: { min: 1, max: 65_535 },
      objectInputSize: { min: 32, max: 4096 },
      tiles: { min: 0, max: 8 },
      maxPoses: { min: 1, max: 20 },
      maxObjects: { min: 1, max: 1000 },
    });
    expect([MAX_TILES, MAX_POSES_LIMIT, MAX_POSES]).toEqual([8, 20, 6]);
    expect(CROP_SCALE_RANGE).toEqual({ min: 0.5, max: 4 });
  });

  it('pins the defaults', () => {
    expect(ENGINE_DEFAULTS).toEqual({
      runtime: 'auto',
      backend: 'auto',
      workers: 2,
      threadsPerWorker: 1,
      idleCores: 'lend',
      queueLimit: 64,
      maxPixels: 40_000_000,
      maxAspectRatio: 32,
      minImageSide: 8,
      faceDetector: 'facemesh-detection-full',
      faceEmbedder: 'faceres',
      poseModel: 'movenet-multipose',
      objectDetector: 'yolov5s',
      personDetector: 'yolov5s-320',
    });
    expect(IMAGE_LIMIT_DEFAULTS).toEqual({ maxPixels: 40_000_000, maxAspectRatio: 32, minSide: 8 });
    // The face score threshold is 0.6 (the addon once defaulted to 0.5 on its own).
    expect(DETECT_DEFAULTS).toEqual({ scoreThreshold: 0.6, iouThreshold: 0.3, tiles: 'auto' });
    expect(POSE_DEFAULTS).toEqual({
      scoreThreshold: 0.2,
      scoreThresholdPersons: 0.05,
      keypointThreshold: 0.3,
      maxPoses: 6,
      maxPosesPersons: 20,
      mode: 'persons',
      personThreshold: 0.2,
    });
    expect(OBJECT_DEFAULTS).toEqual({ scoreThreshold: { centernet: 0.2, yolo: 0.3 }, maxObjects: 100 });
    expect([AUTO_TILE_PIXELS, AUTO_MAX_TILES, CUSTOM_OBJECT_INPUT_SIZE, YOLO_PAD_VALUE, YOLO_NMS_IOU]).toEqual([960, 4, 640, 114, 0.45]);
    expect(DEFAULT_BODY_LIMIT).toBe(20 * 1024 * 1024);
  });

  it('is what the public API, the config and the DeepStack routes export and use', () => {
    expect(publicApi.ENGINE_DEFAULTS).toBe(ENGINE_DEFAULTS);
    expect(publicApi.DETECT_DEFAULTS).toBe(DETECT_DEFAULTS);
    expect(publicApi.POSE_DEFAULTS).toBe(POSE_DEFAULTS);
    expect(publicApi.OBJECT_DEFAULTS).toBe(OBJECT_DEFAULTS);
    expect([publicApi.MAX_TILES, publicApi.MAX_POSES_LIMIT, publicApi.MAX_POSES]).toEqual([MAX_TILES, MAX_POSES_LIMIT, MAX_POSES]);
    expect(CONFIG_BODY_LIMIT).toBe(DEFAULT_BODY_LIMIT);
    expect(parseServerConfig([], {}).bodyLimit).toBe(DEFAULT_BODY_LIMIT);
    expect(DETECTION_DEFAULTS.maxLimit).toBe(ENGINE_RANGES.maxObjects.max);
  });
});

describe('the server config and CLI take their ranges from there', () => {
  const flags = [
    ['workers', 'workers'],
    ['threads-per-worker', 'threadsPerWorker'],
    ['queue-limit', 'queueLimit'],
    ['max-aspect-ratio', 'maxAspectRatio'],
    ['min-image-side', 'minImageSide'],
  ] as const;

  it.each(flags)('--%s: accepts its maximum, refuses one more, and --help shows range and default', (flag, key) => {
    const { max } = ENGINE_RANGES[key];
    expect(parseServerConfig([`--${flag}`, String(max)], {})[key]).toBe(max);
    expect(() => parseServerConfig([`--${flag}`, String(max + 1)], {})).toThrow(ConfigError);
    expect(() => parseServerConfig([`--${flag}`, String(max + 1)], {})).toThrow(`expected an integer from 1 to ${max}`);
    expect(serverOptionsHelp()).toMatch(new RegExp(`--${flag} <v> +.*\\(1-${max}, default ${ENGINE_DEFAULTS[key]}\\)`));
  });

  it('--object-input-size and the environment variables use the same ranges', () => {
    expect(() => parseServerConfig(['--object-model', '/m/own.onnx', '--object-input-size', '4128'], {})).toThrow(/from 32 to 4096/);
    expect(() => parseServerConfig([], { EDGECV_WORKERS: '65' })).toThrow(/EDGECV_WORKERS.*from 1 to 64/);
    expect(parseServerConfig([], { EDGECV_WORKERS: '64' }).workers).toBe(64);
  });
});

describe('the engine enforces them (checked in TS before any model loads)', () => {
  const opens: [keyof typeof ENGINE_RANGES & keyof EngineOptions][] = [
    ['workers'],
    ['threadsPerWorker'],
    ['queueLimit'],
    ['maxAspectRatio'],
    ['minImageSide'],
  ];

  it.each(opens)('Engine.open refuses %s out of range with INVALID_ARGUMENT naming the range', async (key) => {
    const { min, max } = ENGINE_RANGES[key];
    for (const value of [min - 1, max + 1]) {
      await expect(openEngine({ [key]: value })).rejects.toMatchObject({
        code: 'INVALID_ARGUMENT',
        message: `${key} must be an integer from ${min} to ${max} (got ${value})`,
      });
    }
  });
});

/** The options Engine.open() hands the real addon's createEngine (the call goes through). */
async function createdBy(options: EngineOptions): Promise<{ engine: Engine; created: NativeEngineOptions }> {
  const binding = loadNative();
  const createEngine = binding.createEngine.bind(binding);
  let created: NativeEngineOptions | undefined;
  const spy = vi.spyOn(binding, 'createEngine').mockImplementation((o) => createEngine((created = o)));
  try {
    const engine = await openEngine(options);
    return { engine, created: created! };
  } finally {
    spy.mockRestore();
  }
}

describe('the engine passes every option to the addon, explicitly', () => {
  let engine: Engine;
  let created: NativeEngineOptions | undefined;
  let native: NativeEngine | undefined;
  const calls: Record<string, unknown[]> = {};

  beforeAll(async () => {
    // Spies on the real addon (the calls go through): they record what TS hands it.
    const binding = loadNative();
    const createEngine = binding.createEngine.bind(binding);
    const spy = vi.spyOn(binding, 'createEngine').mockImplementation((options) => {
      created = options;
      native = createEngine(options);
      return new Proxy(native, {
        get(target, prop, receiver) {
          const value: unknown = Reflect.get(target, prop, receiver);
          if (typeof value !== 'function') return value;
          return (...args: unknown[]) => {
            if (typeof prop === 'string') calls[prop] = args;
            return (value as (...a: unknown[]) => unknown).apply(target, args);
          };
        },
      }) as NativeEngine;
    });
    try {
      engine = await openEngine({ workers: 1 });
    } finally {
      spy.mockRestore();
    }
  });
  afterAll(async () => {
    await engine?.close();
  });

  it('createEngine gets every engine option and every spec field, with the defaults filled in', () => {
    expect(created).toBeDefined();
    expect(created).toMatchObject({
      workers: 1,
      threadsPerWorker: ENGINE_DEFAULTS.threadsPerWorker,
      queueLimit: ENGINE_DEFAULTS.queueLimit,
      idleCores: ENGINE_DEFAULTS.idleCores,
      backend: expect.stringMatching(/^(auto|cpu|cuda)$/),
    });
    const specs = [created!.faceDetector, created!.poseEstimator, created!.objectDetector, created!.faceEmbedder];
    expect(specs.every((s) => s !== undefined)).toBe(true);
    for (const spec of specs) {
      for (const key of ['path', 'ortPath', 'runtime', 'inputSize', 'meanValue', 'scale', 'swapRB'] as const) {
        expect(spec![key], key).toBeDefined();
      }
    }
    for (const spec of [created!.objectDetector, created!.personDetector]) {
      expect(spec).toMatchObject({ kind: 'yolo', padValue: YOLO_PAD_VALUE, iouThreshold: YOLO_NMS_IOU });
    }
  });

  it('a CenterNet spec names its kind too', async () => {
    const centernet = await createdBy({ workers: 1, poseModel: null, faceEmbedder: null, objectDetector: 'centernet-320' });
    try {
      expect(centernet.created.objectDetector).toMatchObject({ kind: 'centernet', heatmapOutput: expect.any(String), classes: 80 });
      expect(centernet.created.objectDetector).not.toHaveProperty('padValue');
    } finally {
      await centernet.engine.close();
    }
  });

  it('the addon refuses a spec without a field the host always sends (it has no default to fall back on)', () => {
    const binding = loadNative();
    const without = (key: 'objectDetector' | 'faceDetector', field: string, value?: unknown): NativeEngineOptions => {
      const spec: Record<string, unknown> = { ...created![key] };
      if (value === undefined) delete spec[field];
      else spec[field] = value;
      return { ...created!, [key]: spec };
    };
    for (const field of ['kind', 'padValue', 'iouThreshold', 'ortPath']) {
      expect(() => binding.createEngine(without('objectDetector', field)), field).toThrow(`objectDetector.${field} is required`);
    }
    expect(() => binding.createEngine(without('faceDetector', 'ortPath'))).toThrow('faceDetector.ortPath is required');
    expect(() => binding.createEngine(without('objectDetector', 'kind', 'ssd'))).toThrow('objectDetector.kind must be "centernet" or "yolo"');
  });

  it('embedFace needs the crop scale on every call: 0 no longer means the model\'s own', async () => {
    const request = { detect: { scoreThreshold: DETECT_DEFAULTS.scoreThreshold, iouThreshold: DETECT_DEFAULTS.iouThreshold, tiles: 0 }, keepCrop: false };
    const astronaut = photo('skimage/astronaut.png');
    await expect(native!.embedFace(astronaut, { ...request, cropScale: 0 })).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    const cropScale = engine.faceEmbedder()!.cropScale;
    expect((await native!.embedFace(astronaut, { ...request, cropScale })).embedding).not.toBeNull();
  });

  it('each call gets every option, the defaults from limits.ts', async () => {
    const people = photo('darknet/person.jpg');
    await engine.detectFaces(photo('skimage/astronaut.png'));
    expect(calls['detectFaces']?.[1]).toEqual({ scoreThreshold: DETECT_DEFAULTS.scoreThreshold, iouThreshold: DETECT_DEFAULTS.iouThreshold, tiles: 0 });
    await engine.detectObjects(people);
    expect(calls['detectObjects']?.[1]).toEqual({ scoreThreshold: OBJECT_DEFAULTS.scoreThreshold.yolo, maxObjects: OBJECT_DEFAULTS.maxObjects });
    await engine.detectPoses(people);
    expect(calls['detectPoses']?.[1]).toEqual({
      scoreThreshold: POSE_DEFAULTS.scoreThresholdPersons,
      maxPoses: POSE_DEFAULTS.maxPosesPersons,
      personClassId: 0,
      personThreshold: POSE_DEFAULTS.personThreshold,
    });
    await engine.detectPoses(people, { mode: 'whole' });
    expect(calls['detectPoses']?.[1]).toMatchObject({ scoreThreshold: POSE_DEFAULTS.scoreThreshold, maxPoses: MAX_POSES, personClassId: -1 });
    await engine.embedFace(photo('skimage/astronaut.png'));
    expect(calls['embedFace']?.[1]).toEqual({
      detect: { scoreThreshold: DETECT_DEFAULTS.scoreThreshold, iouThreshold: DETECT_DEFAULTS.iouThreshold, tiles: 0 },
      cropScale: engine.faceEmbedder()!.cropScale,
      keepCrop: false,
    });
  });

  it('per-call ranges: the largest accepted value works, one more is refused', async () => {
    const people = photo('darknet/person.jpg');
    const { maxObjects, maxPoses, tiles } = ENGINE_RANGES;
    expect((await engine.detectObjects(people, { maxObjects: maxObjects.max })).objects.length).toBeGreaterThan(0);
    await expect(engine.detectObjects(people, { maxObjects: maxObjects.max + 1 })).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    expect((await engine.detectPoses(people, { maxPoses: maxPoses.max })).poses.length).toBeGreaterThan(0);
    await expect(engine.detectPoses(people, { maxPoses: maxPoses.max + 1 })).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    await expect(engine.detectFaces(people, { tiles: tiles.max + 1 })).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    await expect(engine.embedFace(people, { cropScale: CROP_SCALE_RANGE.max + 0.5 })).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
  });
});
