// Every limit and default has one definition (src/engine/limits.ts). These tests check that the public API, the
// engine and the DeepStack routes use exactly that value, that the engine enforces each range, and that it hands
// every option to the native addon explicitly (the addon keeps no defaults of its own). The server options'
// ranges and --help are checked in config.test.ts.

import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { DEFAULT_BODY_LIMIT as CONFIG_BODY_LIMIT, parseServerConfig } from '../src/config.js';
import {
  CROP_SCALE_RANGE,
  DEFAULT_BODY_LIMIT,
  DETECT_DEFAULTS,
  ENGINE_DEFAULTS,
  ENGINE_RANGES,
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
      // fp32: the int8 object model has a score threshold of its own (the manifest's, int8-models.test.ts)
      engine = await openEngine({ workers: 1, precision: 'fp32' });
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

  it("embedFace needs the crop scale on every call: 0 no longer means the model's own", async () => {
    const request = {
      detect: { scoreThreshold: DETECT_DEFAULTS.scoreThreshold, iouThreshold: DETECT_DEFAULTS.iouThreshold, tiles: 0 },
      keepCrop: false,
      align: true,
      rotatedPasses: true,
    };
    const astronaut = photo('skimage/astronaut.png');
    await expect(native!.embedFace(astronaut, { ...request, cropScale: 0 })).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    const cropScale = engine.faceEmbedder()!.cropScale;
    expect((await native!.embedFace(astronaut, { ...request, cropScale })).embedding).not.toBeNull();
  });

  it('each call gets every option, the defaults from limits.ts', async () => {
    const people = photo('darknet/person.jpg');
    await engine.detectFaces(photo('skimage/astronaut.png'));
    expect(calls['detectFaces']?.[1]).toEqual({
      scoreThreshold: DETECT_DEFAULTS.scoreThreshold,
      iouThreshold: DETECT_DEFAULTS.iouThreshold,
      tiles: 0,
    });
    await engine.detectObjects(people);
    expect(calls['detectObjects']?.[1]).toEqual({
      scoreThreshold: OBJECT_DEFAULTS.scoreThreshold.yolo,
      maxObjects: OBJECT_DEFAULTS.maxObjects,
      onPersonDetector: false,
    });
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
      align: true,
      rotatedPasses: true,
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
