// The int8 graph fusion (native/ops/int8_graph_fusion.cc) reads ONNX protobuf itself, at the wire level
// (native/ops/onnx_wire.cc): onnxruntime's optimized graphs, and before that every onnxruntime model file the
// engine loads, an operator's own included. The check program (native/checks/onnx_graph_check.cc) is built here
// (test/support/check-program.ts) with the address and undefined-behaviour sanitizers and run on the int8 yolov5s file, on onnxruntime-node's
// optimized graphs of both int8 YOLOs, and on damaged copies of each: it must find what the engine fuses and
// refuse every damaged copy with its own error, with no sanitizer report.
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import * as ort from 'onnxruntime-node';
import { expect, it } from 'vitest';
import { ROOT, useTempDirs } from './helpers.js';
import { checkProgram } from './support/check-program.js';

const newTmpDir = useTempDirs();
const MODELS = path.join(ROOT, 'models', 'onnx');

it('reads the int8 graphs and damaged copies of them without a sanitizer report, and finds what the engine fuses', async () => {
  const dir = newTmpDir('edgecv-onnx-graph-');
  const optimized: string[] = [];
  for (const model of ['yolov5s', 'yolov5s-320']) {
    const file = path.join(dir, `${model}.optimized.onnx`);
    const session = await ort.InferenceSession.create(path.join(MODELS, `${model}.int8.ort.onnx`), {
      intraOpNumThreads: 1,
      optimizedModelFilePath: file,
    });
    await session.release();
    optimized.push(file);
  }
  const sources = ['checks/onnx_graph_check.cc', 'ops/int8_graph_fusion.cc', 'ops/onnx_wire.cc', 'ops/edgecv_ops.cc'];
  const binary = checkProgram('onnx_graph_check', sources, ['-O1', '-g', '-fsanitize=address,undefined', '-fno-sanitize-recover=undefined']);
  const run = spawnSync(binary, [path.join(MODELS, 'yolov5s.int8.ort.onnx'), ...optimized], { encoding: 'utf8', timeout: 100_000 });
  expect(run.stderr).toBe('');
  expect(run.status).toBe(0);
  const result = JSON.parse(run.stdout) as { cases: number; refused: number; failures: number; found: object[] };
  expect(result.failures).toBe(0);
  expect(result.cases).toBe(3 * 400);
  // most damage is caught by the reader; a flipped byte inside a tensor's data is not damage it can see
  expect(result.refused).toBeGreaterThan(result.cases);
  expect(result.found).toEqual([
    { qdqSigmoids: 57, siluLookups: 0, upsamples: 0, concats: 0 }, // the QDQ file: onnxruntime has not fused yet
    { qdqSigmoids: 0, siluLookups: 57, upsamples: 2, concats: 13 },
    { qdqSigmoids: 0, siluLookups: 57, upsamples: 2, concats: 13 }, // yolov5s-320: integer from its input too
  ]);
}, 180_000);
