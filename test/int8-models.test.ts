// The int8 (QDQ) models against their fp32 files, on real photos with the real addon and onnxruntime: the same
// model name runs the int8 file on an engine opened with precision 'int8'; its raw outputs stay within measured
// bounds of fp32's; and on the labelled sets (testkit/labels/objects.json) it finds what fp32 finds, within the
// margins below. Where the CPU has AVX-512 VBMI the engine runs the YOLOs' int8 graphs with its own operators
// (native/ops/int8_graph_fusion.h): their outputs must be onnxruntime-node's on the same file, bit for bit.
// Where it has no VNNI, both run onnxruntime's exact int8 kernels (its fast ones saturate there): the same check.
// None of these photos is a calibration photo (models/calibrate.ts CALIBRATION_PHOTOS).
// Every engine here opens without the warm-up (warmUp: false): no test times a request, and the warm-up's runs at
// every input shape cost more than the checks; tests of one model share their engines.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Database } from '../src/sqlite.js';
import { RecognitionService } from '../src/gallery/recognition-service.js';
import { SqliteGalleryStore } from '../src/gallery/sqlite-store.js';
import { parseServerConfig } from '../src/config.js';
import { engineOptionsFromConfig } from '../src/server/engine-options.js';
import * as ort from 'onnxruntime-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Engine, POSE_DEFAULTS, type EngineOptions, type Precision } from '../src/index.js';
import { CALIBRATION_PHOTOS } from '../models/calibrate.js';
import { loadObjectLabels, scorePhoto, sumScores, type PhotoScore } from '../testkit/object-labels.js';
import { HAS_INT8_DOT_PRODUCT, HAS_VBMI, ORT_EXACT_INT8 } from '../testkit/cpu-int8.js';
import { photoTensor } from '../testkit/photo-tensor.js';
import { scorePoses } from '../testkit/pose-scoring.js';
import { cosine, equalErrorRate, loadJohns, pairDistances, type EmbeddedPhoto } from '../testkit/face-verification.js';
import { calibratedDistance } from '../src/index.js';
import { DATA_DIR, photo, ROOT, useTempDirs } from './helpers.js';
import { expectOnnxRuntimeFloats } from './support/same-floats.js';

const labels = loadObjectLabels(ROOT);
const manifest = JSON.parse(readFileSync(join(ROOT, 'models', 'onnx', 'manifest.json'), 'utf8')) as {
  models: Record<
    string,
    { input: { shape: number[]; mean: number; scale: number }; int8?: { ortFile: string; weightBits: 7 | 8; sevenBitWeights?: string[] } }
  >;
};
/** The YOLOv5s detectors that ship int8: the objects model and the pose route's person detector. */
const YOLO_INT8 = ['yolov5s', 'yolov5s-320'] as const;
/** Their int8 SiLUs, nearest x2 upsamplings and concats: all of them (yolov5s-320 keeps only its heads fp32). */
const INT8_FUSED: Record<(typeof YOLO_INT8)[number], { siluLookups: number; upsamples: number; concats: number }> = {
  yolov5s: { siluLookups: 57, upsamples: 2, concats: 13 },
  'yolov5s-320': { siluLookups: 57, upsamples: 2, concats: 13 },
};
const UNFUSED = { siluLookups: 0, upsamples: 0, concats: 0 };
const LOOKUP_PHOTOS = ['skimage/astronaut.png', 'skimage/coffee.png', 'skimage/motorcycle_left.png'];

/** sqrt(mean((a-b)^2)) / sqrt(mean(b^2)): the int8 output's error relative to the fp32 output's size. */
function relativeRms(a: Float32Array, b: Float32Array): number {
  let err = 0;
  let ref = 0;
  for (let i = 0; i < b.length; i++) {
    err += (a[i]! - b[i]!) ** 2;
    ref += b[i]! ** 2;
  }
  return Math.sqrt(err / ref);
}

describe('int8 models', () => {
  it('--precision / EDGECV_PRECISION reach Engine.open, and an engine opened from them runs that precision', async () => {
    expect(engineOptionsFromConfig(parseServerConfig(['--precision', 'fp32'], {}, ROOT)).precision).toBe('fp32');
    expect(engineOptionsFromConfig(parseServerConfig([], { EDGECV_PRECISION: 'int8' }, ROOT)).precision).toBe('int8');
    expect(engineOptionsFromConfig(parseServerConfig([], {}, ROOT)).precision).toBeUndefined(); // the engine's default: int8
    expect(() => parseServerConfig(['--precision', 'int4'], {}, ROOT)).toThrow(/precision/);
    const options = engineOptionsFromConfig(parseServerConfig(['--precision', 'fp32'], {}, ROOT));
    const engine = await Engine.open({ ...options, workers: 1, poseModel: null, warmUp: false });
    try {
      expect(engine.backend().precisions).toMatchObject({ objectDetector: 'fp32', faceEmbedder: 'fp32' });
    } finally {
      await engine.close();
    }
  });

  it('keep calibration photos apart from every labelled (scored) photo', () => {
    for (const file of CALIBRATION_PHOTOS) expect(Object.keys(labels.photos)).not.toContain(file);
  });

  /** Two engines, fp32 and int8, opened (without the warm-up) before a describe's tests and closed after them. */
  function enginePair(options: Omit<EngineOptions, 'precision'>): Record<Precision, Engine> {
    const pair = {} as Record<Precision, Engine>;
    beforeAll(async () => {
      for (const precision of ['fp32', 'int8'] as const) pair[precision] = await Engine.open({ ...options, precision, warmUp: false });
    });
    afterAll(async () => {
      for (const e of Object.values(pair)) await e.close();
    });
    return pair;
  }

  for (const model of YOLO_INT8) {
    describe(model, () => {
      const engines = enginePair({ workers: 1, threadsPerWorker: 2, objectDetector: model, poseModel: null, faceEmbedder: null });

      it('has an int8 file, and the engine runs it under the same name at precision int8 only', () => {
        expect(manifest.models[model]!.int8?.ortFile).toBe(`${model}.int8.ort.onnx`);
        expect(engines.int8.backend().precisions['objectDetector']).toBe('int8');
        expect(engines.fp32.backend().precisions['objectDetector']).toBe('fp32');
        // the face detector has no int8 file: fp32 on both
        expect(engines.int8.backend().precisions['faceDetector']).toBe('fp32');
      });

      it('gives raw outputs within the measured bound of fp32 on real photos', async () => {
        const { shape, mean, scale } = manifest.models[model]!.input;
        const side = shape[2]!;
        for (const file of ['skimage/astronaut.png', 'skimage/coffee.png', 'skimage/motorcycle_left.png']) {
          const { nchw } = photoTensor(photo(file), side, side, mean, scale);
          const fp32 = await engines.int8.runModel(model, nchw, { precision: 'fp32' });
          const int8 = await engines.int8.runModel(model, nchw);
          expect(int8.map((o) => o.length)).toEqual(fp32.map((o) => o.length));
          const errors = int8.map((out, i) => relativeRms(out, fp32[i]!));
          console.log(`${model} ${file} relative RMS error per output: ${errors.map((e) => e.toFixed(4)).join(' ')}`);
          // Measured 0.0x-0.0x per output on these photos (docs/int8.md); a bad calibration gives 0.3+.
          for (const [i, e] of errors.entries()) expect(e, `${file} output ${i}`).toBeLessThan(0.12);
          // not the fp32 file by another name
          expect(int8.some((o, i) => relativeRms(o, fp32[i]!) > 0)).toBe(true);
        }
      });

      it('runs its own operators in the int8 graph (AVX-512 VBMI CPUs: SiLU lookups, upsampling, concats) and exact int8 products (CPUs without VNNI), with outputs bit for bit those of onnxruntime-node running the int8 file', async () => {
        // The engine fuses an int8 graph only where the lookup has its vector path (native/ops/silu_lookup_op.h).
        expect(engines.int8.backend().fusedOps['objectDetector']).toEqual(HAS_VBMI ? INT8_FUSED[model] : UNFUSED);
        expect(engines.int8.backend().onnxRuntime?.int8DotProduct).toBe(HAS_INT8_DOT_PRODUCT);
        // yolov5s' weights are 7-bit, and most of yolov5s-320's convolutions (sevenBitWeights): on a CPU without VNNI
        // onnxruntime keeps its fast kernels for them (they cannot saturate), and the outputs must still be the exact
        // ones below
        expect(manifest.models[model]!.int8!.weightBits).toBe(model === 'yolov5s' ? 7 : 8);
        expect(manifest.models[model]!.int8!.sevenBitWeights?.length ?? 0).toBe(model === 'yolov5s' ? 0 : 46);
        expect(engines.fp32.backend().fusedOps['objectDetector']).toEqual(UNFUSED);
        const { shape, mean, scale } = manifest.models[model]!.input;
        const side = shape[2]!;
        const session = await ort.InferenceSession.create(join(ROOT, 'models', 'onnx', manifest.models[model]!.int8!.ortFile), {
          intraOpNumThreads: 2,
          ...ORT_EXACT_INT8,
        });
        try {
          for (const file of LOOKUP_PHOTOS) {
            const { nchw } = photoTensor(photo(file), side, side, mean, scale);
            const ours = await engines.int8.runModel(model, nchw);
            await expectOnnxRuntimeFloats(session, nchw, [1, 3, side, side], ours, file);
          }
        } finally {
          await session.release();
        }
      });

      it('finds on the labelled object set what fp32 finds at its default threshold: at most 1 box fewer, no more wrong labels, at most 1 more spurious', async () => {
        const totals: Partial<Record<Precision, PhotoScore>> = {};
        for (const precision of ['fp32', 'int8'] as const) {
          const scores: PhotoScore[] = [];
          for (const [file, p] of Object.entries(labels.photos)) {
            // each precision's default threshold (yolov5s int8: its manifest's int8.scoreThreshold)
            const { objects } = await engines[precision].detectObjects(photo(file), { maxObjects: 1000 });
            scores.push(scorePhoto(p, objects, 0));
          }
          totals[precision] = sumScores(scores);
        }
        const [fp32, int8] = [totals.fp32!, totals.int8!];
        console.log(`${model} labelled objects fp32 ${JSON.stringify(fp32)} int8 ${JSON.stringify(int8)}`);
        expect(int8.found).toBeGreaterThanOrEqual(fp32.found - 1);
        expect(int8.wrongTop).toBeLessThanOrEqual(fp32.wrongTop);
        expect(int8.unmatched).toBeLessThanOrEqual(fp32.unmatched + 1);
      });
    });
  }

  describe('movenet-multipose', () => {
    const engines = enginePair({ workers: 1, threadsPerWorker: 2, objectDetector: null, personDetector: 'yolov5s-320', faceEmbedder: null });

    it('movenet-multipose int8 gives heatmaps within the measured bound of fp32 on real photos', async () => {
      const engine = engines.int8; // the engine's default precision
      expect(engine.backend().precisions).toMatchObject({ poseEstimator: 'int8', personDetector: 'int8', faceDetector: 'fp32' });
      const { shape, mean, scale } = manifest.models['movenet-multipose']!.input;
      for (const file of ['skimage/astronaut.png', 'skimage/motorcycle_left.png']) {
        const { nchw } = photoTensor(photo(file), shape[3]!, shape[2]!, mean, scale);
        const fp32 = await engine.runModel('movenet-multipose', nchw, { precision: 'fp32' });
        const int8 = await engine.runModel('movenet-multipose', nchw);
        const errors = int8.map((out, i) => relativeRms(out, fp32[i]!));
        console.log(`movenet-multipose ${file} relative RMS error per output: ${errors.map((e) => e.toFixed(4)).join(' ')}`);
        // The person-centre, box and keypoint heatmaps (outputs 0-3): bound from the measured values (docs/int8.md).
        // The keypoint regressions and offsets are small values read only at a found centre or keypoint, where an
        // error is a large share of nothing: the poses they make are checked on the labelled set below and by
        // pose-object-engine.test.ts (camera.png, Tom_Cruise_avp_2014_4.jpg) at the int8 default.
        for (const [i, e] of errors.slice(0, 4).entries()) expect(e, `${file} output ${i}`).toBeLessThan(0.25);
      }
    });

    it('poses on the labelled pose set at most 1 person fewer, with at most 1 more stray pose, behind the int8 person detector', async () => {
      const photos = Object.entries(labels.photos).filter(([, p]) => p.personsComplete);
      const totals: Partial<Record<Precision, { posed: number; extra: number }>> = {};
      for (const precision of ['fp32', 'int8'] as const) {
        const engine = engines[precision];
        expect(engine.backend().precisions['personDetector']).toBe(precision);
        const t = { posed: 0, extra: 0 };
        for (const [file, p] of photos) {
          const s = scorePoses(p, (await engine.detectPoses(photo(file), { mode: 'persons' })).poses, POSE_DEFAULTS.maxPosesPersons);
          t.posed += s.posed;
          t.extra += s.extra;
        }
        totals[precision] = t;
      }
      console.log(`labelled pose set: fp32 ${JSON.stringify(totals.fp32)} int8 ${JSON.stringify(totals.int8)}`);
      expect(totals.int8!.posed).toBeGreaterThanOrEqual(totals.fp32!.posed - 1);
      expect(totals.int8!.extra).toBeLessThanOrEqual(totals.fp32!.extra + 1);
    });
  });

  describe('faceres', () => {
    const engines = enginePair({ workers: 1, threadsPerWorker: 2, poseModel: null, objectDetector: null });

    it('faceres int8 keeps rank-1 on dlib johns, an EER at or under 0.5% at the same calibrated distance, and embeddings near fp32', async () => {
      const johns = loadJohns(DATA_DIR);
      const embedded: Partial<Record<Precision, EmbeddedPhoto[]>> = {};
      const rank1: Partial<Record<Precision, number>> = {};
      for (const precision of ['fp32', 'int8'] as const) {
        const engine = engines[precision];
        expect(engine.backend().precisions['faceEmbedder']).toBe(precision);
        const out: EmbeddedPhoto[] = [];
        for (const p of johns) out.push({ ...p, embedding: (await engine.embedFace(p.bytes)).embedding! });
        embedded[precision] = out;
        const { genuine, impostor } = pairDistances(out);
        const { eer, threshold } = equalErrorRate(genuine, impostor);
        const distance = calibratedDistance(1 - threshold, engine.faceEmbedder()!.distanceScale);
        // rank-1: each photo's nearest other photo is of the same person
        rank1[precision] = out.filter((p, i) => {
          const others = out.filter((_, j) => j !== i);
          const best = others.reduce((a, b) => (cosine(p.embedding, a.embedding) >= cosine(p.embedding, b.embedding) ? a : b));
          return best.subject === p.subject;
        }).length;
        console.log(
          `faceres ${precision}: rank-1 (nearest other photo) ${rank1[precision]}/${out.length}, EER ${(eer * 100).toFixed(2)}% at distance ${distance.toFixed(1)}`,
        );
        expect(eer).toBeLessThanOrEqual(0.005);
        // 105 stays the EER threshold (the recognition scale is not recalibrated for int8)
        expect(Math.abs(distance - 105)).toBeLessThan(5);
      }
      expect(rank1.int8!).toBeGreaterThanOrEqual(rank1.fp32!);
      const similarity = embedded.int8!.map((p, i) => cosine(p.embedding, embedded.fp32![i]!.embedding));
      console.log(`faceres int8 vs fp32 embedding cosine: min ${Math.min(...similarity).toFixed(4)}`);
      // measured min 0.99x over the 55 photos (docs/int8.md)
      expect(Math.min(...similarity)).toBeGreaterThan(0.97);
    });

    it('re-embeds a gallery enrolled at fp32 when the server opens it at int8 (the int8 embedder has its own version)', async () => {
      const dir = tempDir('edgecv-int8-');
      const [first, second] = loadJohns(DATA_DIR).filter((p) => p.subject === 'John_Simm');
      const versions: string[] = [];
      for (const precision of ['fp32', 'int8'] as const) {
        const engine = engines[precision];
        versions.push(engine.faceEmbedder()!.version);
        const service = await RecognitionService.open(engine, SqliteGalleryStore.open(dir), { log: () => {} });
        await service.ready;
        if (precision === 'fp32') await service.enrol('John_Simm', first!.bytes);
        else expect(await service.predict(second!.bytes)).toMatchObject({ subject: 'John_Simm' });
        await service.close();
        const db = new Database(join(dir, 'gallery.db'), { readonly: true });
        const stored = db.prepare('SELECT DISTINCT model_version FROM samples').all() as { model_version: string }[];
        db.close();
        expect(stored).toEqual([{ model_version: versions.at(-1) }]);
      }
      expect(versions[1]).not.toBe(versions[0]);
      expect(versions[1]).toMatch(/^int8-/);
    });
  });

  it("opens an int8 model unfused, finding the same objects, where it cannot write onnxruntime's optimized graph (no temporary directory)", async () => {
    const open = () => Engine.open({ workers: 1, precision: 'int8', objectDetector: 'yolov5s', poseModel: null, faceEmbedder: null, warmUp: false });
    const found: { fused: unknown; objects: unknown }[] = [];
    const saved = process.env['TMPDIR'];
    for (const tmpdir of [saved, join(tempDir(), 'missing')]) {
      if (tmpdir === undefined) delete process.env['TMPDIR'];
      else process.env['TMPDIR'] = tmpdir;
      let engine: Engine;
      try {
        engine = await open();
      } finally {
        if (saved === undefined) delete process.env['TMPDIR'];
        else process.env['TMPDIR'] = saved;
      }
      try {
        const { objects } = await engine.detectObjects(photo('skimage/astronaut.png'));
        found.push({ fused: engine.backend().fusedOps['objectDetector'], objects });
      } finally {
        await engine.close();
      }
    }
    expect(found.map((f) => f.fused)).toEqual([HAS_VBMI ? INT8_FUSED.yolov5s : UNFUSED, UNFUSED]);
    expect(found[1]!.objects).toEqual(found[0]!.objects);
    expect((found[0]!.objects as unknown[]).length).toBeGreaterThan(0);
  });

  it('gives every worker the fused graph the engine made once: two workers at once find what one finds', async () => {
    const open = (workers: number) =>
      Engine.open({ workers, threadsPerWorker: 1, precision: 'int8', objectDetector: 'yolov5s', poseModel: null, faceEmbedder: null, warmUp: false });
    const image = photo('darknet/person.jpg');
    const one = await open(1);
    const two = await open(2);
    try {
      const expected = (await one.detectObjects(image)).objects;
      expect(expected.length).toBeGreaterThan(0);
      expect(two.backend().fusedOps['objectDetector']).toEqual(HAS_VBMI ? INT8_FUSED.yolov5s : UNFUSED);
      // two calls at once: each worker runs one, the second on the graph the first worker's load left for it
      const both = await Promise.all([two.detectObjects(image), two.detectObjects(image)]);
      for (const r of both) expect(r.objects).toEqual(expected);
    } finally {
      await one.close();
      await two.close();
    }
  });
});

const tempDir = useTempDirs();
