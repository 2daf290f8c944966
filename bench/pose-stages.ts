// Where the pose route's time goes: the 640x480 scene photo (darknet person.jpg fitted onto grey, one person)
// through engine.detectPoses() with the route's options, one call at a time, each call counted as a request the
// host serves (engine.serveRequest(), as the server does), then the route's answer built and serialized. Per
// stage p50/p90/p99 from the engine's own timings (timings.stages); "JS" is the call's wall time minus the
// native stages (the hand-off to a worker and back, the result's conversion), "answer" the route's reply and its
// JSON.stringify. With several configurations (--configs), each gets its own engine and they take turns in blocks
// of 10 calls, the first of each block not counted: an A/B on one machine at one moment. --size: the frame
// (default 640x480; 1280x720, 1920x1080 for HD cameras), the photo fitted onto it, onto --fill of it (default 1;
// 0.5: a person half as tall).
//
//   node dist/bench/run.js --pose-stages [--runs 200] [--precision int8|fp32|auto] [--configs persons,whole:fp32,...]
//                                        [--size 640x480] [--fill 1]        (or node dist/bench/pose-stages.js ...)
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Engine, POSE_MODES, PRECISION_CHOICES, type EngineOptions, type PoseMode, type PoseDetection, type PrecisionChoice } from '../src/index.js';
import { percentile } from '../src/metrics/percentiles.js';
import { poseResponse } from '../src/server/routes/pose.js';
import { argValue } from '../testkit/args.js';
import { VGA, VGA_SCENE_PHOTO, fittedJpeg } from '../testkit/vga-photos.js';
import { table } from '../testkit/table.js';
import { runAsProgram } from './entry.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const BLOCK = 10;

/** A configuration measured: engine options and the route's pose mode (undefined: the engine's default). */
interface PoseConfig {
  name: string;
  engine: EngineOptions;
  mode?: PoseMode;
}

/** persons (the default mode) or whole, at --precision or at the precision after a colon (persons:fp32). */
function config(spec: string, precision: PrecisionChoice): PoseConfig {
  const [mode = '', at = precision] = spec.split(':');
  if (!(POSE_MODES as readonly string[]).includes(mode))
    throw new Error(`unknown config ${spec} (${POSE_MODES.join(', ')}, then :int8, :fp32 or :auto)`);
  if (!(PRECISION_CHOICES as readonly string[]).includes(at)) throw new Error(`unknown precision in ${spec}`);
  const engine: EngineOptions = { precision: at as PrecisionChoice, faceEmbedder: null };
  return { name: `mode ${mode}, ${at}`, engine, mode: mode as PoseMode };
}

type Samples = Record<string, number[]>;

function record(samples: Samples, key: string, value: number): void {
  (samples[key] ??= []).push(value);
}

async function oneCall(engine: Engine, photo: Buffer, mode: PoseMode | undefined, samples: Samples | null): Promise<PoseDetection> {
  const end = engine.serveRequest();
  const t0 = performance.now();
  let result: PoseDetection;
  try {
    result = await engine.detectPoses(photo, mode ? { mode } : {});
  } finally {
    end();
  }
  const t1 = performance.now();
  const body = JSON.stringify(poseResponse(result, (t1 - t0).toFixed(3)));
  const t2 = performance.now();
  if (samples && body.length > 0) {
    const { queueMs, decodeMs, preprocessMs, inferenceMs, postprocessMs, stages = {} } = result.timings;
    record(samples, 'queue', queueMs);
    record(samples, 'decode', decodeMs);
    for (const [key, value] of Object.entries(stages)) record(samples, key.replace(/Ms$/, ''), value);
    record(samples, 'JS (hand-off, result)', t1 - t0 - (queueMs + decodeMs + preprocessMs + inferenceMs + postprocessMs));
    record(samples, 'answer (reply + JSON)', t2 - t1);
    record(samples, 'total', t2 - t0);
  }
  return result;
}

function stageRows(samples: Samples): Record<string, string | number>[] {
  const total = samples['total'] ?? [];
  const totalMedian = percentile(
    [...total].sort((a, b) => a - b),
    50,
  );
  return Object.entries(samples).map(([stage, values]) => {
    const sorted = [...values].sort((a, b) => a - b);
    const p50 = percentile(sorted, 50);
    const passes = stage === 'posePasses';
    return {
      stage,
      p50: p50,
      p90: percentile(sorted, 90),
      p99: percentile(sorted, 99),
      'share of p50 total': passes || stage === 'total' ? '' : `${((100 * p50) / totalMedian).toFixed(0)}%`,
    };
  });
}

/** WIDTHxHEIGHT, each 16 to 8192. */
function frameSize(spec: string): { width: number; height: number } {
  const m = /^(\d+)x(\d+)$/.exec(spec);
  const [width, height] = m ? [Number(m[1]), Number(m[2])] : [0, 0];
  if (!(width >= 16 && width <= 8192 && height >= 16 && height <= 8192)) throw new Error(`--size ${spec}: want WIDTHxHEIGHT, 16 to 8192 each`);
  return { width, height };
}

/** The bench: `args` holds its flags. */
export async function poseStages(args: string[]): Promise<void> {
  const runs = Number(argValue(args, '--runs') ?? 200);
  const precision = (argValue(args, '--precision') ?? 'int8') as PrecisionChoice;
  const configs = (argValue(args, '--configs') ?? 'persons').split(',').map((spec) => config(spec, precision));
  const frame = frameSize(argValue(args, '--size') ?? `${VGA.width}x${VGA.height}`);
  const fill = Number(argValue(args, '--fill') ?? 1);
  if (!(fill > 0.05 && fill <= 1)) throw new Error('--fill: want a fraction over 0.05, at most 1');
  const photo = fittedJpeg(ROOT, VGA_SCENE_PHOTO, frame.width, frame.height, fill);
  const engines: Engine[] = [];
  try {
    for (const c of configs) engines.push(await Engine.open(c.engine));
    const samples: Samples[] = configs.map(() => ({}));
    const poses: number[] = [];
    for (const [i, e] of engines.entries()) {
      for (let w = 0; w < BLOCK; w++) poses[i] = (await oneCall(e, photo, configs[i]!.mode, null)).poses.length;
    }
    const loadBefore = os.loadavg();
    for (let done = 0; done < runs; done += BLOCK - 1) {
      for (const [i, e] of engines.entries()) {
        for (let k = 0; k < BLOCK; k++) await oneCall(e, photo, configs[i]!.mode, k === 0 ? null : samples[i]!);
      }
    }
    const loadAfter = os.loadavg();
    for (const [i, c] of configs.entries()) {
      const what = `${c.name}, ${frame.width}x${frame.height}${fill < 1 ? `, fill ${fill}` : ''}: ${poses[i]} pose(s), ${samples[i]!['total']!.length} calls, ms`;
      table(`pose route stages, ${what}`, stageRows(samples[i]!));
    }
    console.log(
      `\nCPU: ${os.cpus()[0]?.model ?? '?'} x ${os.cpus().length}; load average before ${loadBefore.map((l) => l.toFixed(2)).join(' ')}, after ${loadAfter.map((l) => l.toFixed(2)).join(' ')}; ${new Date().toISOString()}`,
    );
  } finally {
    for (const e of engines) await e.close();
  }
}

await runAsProgram(import.meta.url, poseStages);
