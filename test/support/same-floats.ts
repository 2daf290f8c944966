// The engine's raw outputs against onnxruntime-node's own session of the same file, float by float: the engine's
// sessions (each file optimized once, the YOLOs' int8 graphs fused) must answer what onnxruntime answers.
import * as ort from 'onnxruntime-node';
import { expect } from 'vitest';

/** Runs `session` on `nchw` (of `shape`) and expects `ours` to hold its outputs, in order, every float equal. */
export async function expectOnnxRuntimeFloats(
  session: ort.InferenceSession,
  nchw: Float32Array,
  shape: number[],
  ours: Float32Array[],
  what: string,
): Promise<void> {
  const theirs = await session.run({ [session.inputNames[0]!]: new ort.Tensor('float32', nchw, shape) });
  expect(ours.length, what).toBe(session.outputNames.length);
  for (const [i, name] of session.outputNames.entries()) {
    const reference = theirs[name]!.data as Float32Array;
    expect(ours[i]!.length, `${what} ${name}`).toBe(reference.length);
    let differing = 0;
    for (let k = 0; k < reference.length; k++) if (ours[i]![k] !== reference[k]) differing++;
    expect(differing, `${what} ${name}: floats that differ of ${reference.length}`).toBe(0);
  }
}
