// Bench sections for the int8 models (docs/int8.md): each model with an int8 file, edgecv running it (Engine
// precision 'int8', the default) against onnxruntime-node running the fp32 file (what a Node user gets) and the int8
// file (what the model alone gives), interleaved in one run; and fp32 and int8 accuracy side by side.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import * as ort from 'onnxruntime-node';
import type { ConvertedManifest } from '../models/model-manifest.js';
import { calibratedDistance, Engine, POSE_DEFAULTS } from '../src/index.js';
import { cosine, embedAll, equalErrorRate, loadJohns, pairDistances } from '../testkit/face-verification.js';
import { labelsSummary, loadObjectLabels, scorePhoto, sumScores } from '../testkit/object-labels.js';
import { ORT_EXACT_INT8 } from '../testkit/cpu-int8.js';
import { scorePoses } from '../testkit/pose-scoring.js';
import { timeInterleaved } from './engine-speed.js';
import type { BenchContext } from './pose-objects.js';

type Row = Record<string, string | number>;

const WARMUP_RUNS = 5;

/**
 * Forward pass only, same fp32 input, 1 worker x 2 threads in the addon and 2 intra-op threads in onnxruntime-node.
 * Sides take turns in blocks, order rotating (timeInterleaved), so drifting load on a shared machine hits all alike.
 */
export async function benchInt8Forward(ctx: BenchContext, manifest: ConvertedManifest, only?: readonly string[]): Promise<Row[]> {
  const threads = 2;
  const engine = await Engine.open({
    workers: 1,
    threadsPerWorker: threads,
    precision: 'int8',
    poseModel: null,
    objectDetector: null,
    faceEmbedder: null,
  });
  const rows: Row[] = [];
  try {
    for (const [name, model] of Object.entries(manifest.models)) {
      if (!model.int8 || (only && !only.includes(name))) continue;
      const size = model.input.shape.reduce((a, b) => a * b, 1);
      const input = new Float32Array(size).map((_, i) => Math.sin(i) * 0.9);
      const options = { intraOpNumThreads: threads, interOpNumThreads: 1, executionMode: 'sequential' as const };
      const fp32 = await ort.InferenceSession.create(join(ctx.root, 'models', 'onnx', model.ortFile), options);
      // On a CPU without VNNI, onnxruntime's default int8 kernels saturate (docs/int8.md): the int8 file runs
      // exactly, as in the engine, so that both sides compute the same answer.
      const int8 = await ort.InferenceSession.create(join(ctx.root, 'models', 'onnx', model.int8.ortFile), { ...options, ...ORT_EXACT_INT8 });
      const feeds = { [model.input.name]: new ort.Tensor('float32', input, model.input.shape) };
      const runs = {
        'edgecv int8': () => engine.runModel(name, input, { runtime: 'onnxruntime' }),
        'onnxruntime-node fp32': () => fp32.run(feeds),
        'onnxruntime-node int8': () => int8.run(feeds),
      };
      const sides = Object.keys(runs) as (keyof typeof runs)[];
      const samples = await timeInterleaved(ctx, runs, sides, WARMUP_RUNS);
      await fp32.release();
      await int8.release();
      const p50 = (k: keyof typeof runs) => ctx.stats(samples[k]).p50;
      rows.push({
        model: name,
        input: model.input.shape.slice(1).join('x'),
        'edgecv int8 p50 ms': p50('edgecv int8'),
        'onnxruntime-node fp32 p50 ms': p50('onnxruntime-node fp32'),
        'onnxruntime-node int8 p50 ms': p50('onnxruntime-node int8'),
        'ratio ort-node fp32 / edgecv int8': p50('onnxruntime-node fp32') / p50('edgecv int8'),
        'ratio ort-node int8 / edgecv int8': p50('onnxruntime-node int8') / p50('edgecv int8'),
        runs: samples['edgecv int8'].length,
      });
    }
  } finally {
    await engine.close();
  }
  return rows;
}

/** Which sets benchInt8Accuracy scores, and from which folder of converted models (default: the engine's). */
export interface Int8AccuracyOptions {
  sets?: readonly ('objects' | 'pose' | 'recognition')[];
  modelDir?: string;
}

/**
 * fp32 and int8 side by side on the labelled sets, in one run: the object set with yolov5s (each
 * precision at its default threshold), the pose set (persons mode: movenet-multipose behind yolov5s-320, both int8
 * at precision int8), and recognition on dlib's johns (faceres: rank-1 by nearest other photo, EER and its
 * calibrated distance).
 */
export async function benchInt8Accuracy(root: string, options: Int8AccuracyOptions = {}): Promise<Row[]> {
  const sets = new Set(options.sets ?? ['objects', 'pose', 'recognition']);
  const modelDir = options.modelDir === undefined ? {} : { modelDir: options.modelDir };
  const labels = loadObjectLabels(root);
  const photos = Object.entries(labels.photos).map(([file, photo]) => ({ file, photo, bytes: readFileSync(join(root, 'test', 'data', file)) }));
  const rows: Row[] = [];
  for (const model of sets.has('objects') ? (['yolov5s'] as const) : []) {
    const row: Row = { set: `objects (${labelsSummary(labels)})`, model };
    for (const precision of ['fp32', 'int8'] as const) {
      const engine = await Engine.open({
        ...modelDir,
        workers: 1,
        threadsPerWorker: 2,
        precision,
        objectDetector: model,
        poseModel: null,
        faceEmbedder: null,
      });
      try {
        const scores = [];
        for (const p of photos) scores.push(scorePhoto(p.photo, (await engine.detectObjects(p.bytes, { maxObjects: 1000 })).objects, 0));
        const s = sumScores(scores);
        row[precision] = `found ${s.found}/${s.labelled}, wrong label ${s.wrongTop}, unmatched ${s.unmatched}`;
      } finally {
        await engine.close();
      }
    }
    rows.push(row);
  }
  const posePhotos = photos.filter((p) => p.photo.personsComplete);
  const pose: Row = { set: 'pose (persons mode, photos with every person boxed)', model: 'movenet-multipose + yolov5s-320' };
  for (const precision of sets.has('pose') ? (['fp32', 'int8'] as const) : []) {
    const engine = await Engine.open({
      ...modelDir,
      workers: 1,
      threadsPerWorker: 2,
      precision,
      objectDetector: null,
      personDetector: 'yolov5s-320',
      faceEmbedder: null,
    });
    try {
      const scores = [];
      for (const p of posePhotos)
        scores.push(scorePoses(p.photo, (await engine.detectPoses(p.bytes, { mode: 'persons' })).poses, POSE_DEFAULTS.maxPosesPersons));
      const posed = scores.reduce((n, s) => n + s.posed, 0);
      const persons = scores.reduce((n, s) => n + s.persons, 0);
      pose[precision] = `posed ${posed}/${persons}, extra poses ${scores.reduce((n, s) => n + s.extra, 0)}`;
    } finally {
      await engine.close();
    }
  }
  if (sets.has('pose')) rows.push(pose);
  if (!sets.has('recognition')) return rows;
  const johns = loadJohns(join(root, 'test', 'data'));
  const recognition: Row = { set: 'recognition (dlib johns, 5 people x 11 photos)', model: 'faceres' };
  for (const precision of ['fp32', 'int8'] as const) {
    const engine = await Engine.open({ ...modelDir, workers: 1, threadsPerWorker: 2, precision, poseModel: null, objectDetector: null });
    try {
      const { embedded } = await embedAll(engine, johns);
      const { genuine, impostor } = pairDistances(embedded);
      const { eer, threshold } = equalErrorRate(genuine, impostor);
      const rank1 = embedded.filter((p, i) => {
        let best = -Infinity;
        let subject = '';
        embedded.forEach((q, j) => {
          const c = cosine(p.embedding, q.embedding);
          if (j !== i && c > best) [best, subject] = [c, q.subject];
        });
        return subject === p.subject;
      }).length;
      const distance = calibratedDistance(1 - threshold, engine.faceEmbedder()!.distanceScale);
      recognition[precision] = `rank-1 ${rank1}/${embedded.length}, EER ${(eer * 100).toFixed(2)}% at distance ${distance.toFixed(1)}`;
    } finally {
      await engine.close();
    }
  }
  rows.push(recognition);
  return rows;
}
