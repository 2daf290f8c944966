// What this CPU does with int8 models, read from /proc/cpuinfo apart from the engine's own probe
// (native/runtime/onnxruntime_library.cc), so that a test can check the engine's choice.
import { readFileSync } from 'node:fs';
import type { InferenceSession } from 'onnxruntime-node';

const FLAGS = new Set((readFileSync('/proc/cpuinfo', 'utf8').match(/^flags\s*:(.*)$/m)?.[1] ?? '').trim().split(/\s+/));

/** AVX-512 VBMI and BW: the engine runs its own int8 operators (native/ops/uint8_lookup.h). */
export const HAS_VBMI = FLAGS.has('avx512vbmi') && FLAGS.has('avx512bw');

/**
 * The CPU sums uint8 x int8 products in 32 bits: x86 with AVX-512 VNNI or AVX-VNNI (any other architecture
 * onnxruntime runs on). Without it onnxruntime's fast int8 kernels saturate (docs/int8.md, "CPUs without VNNI").
 */
export const HAS_INT8_DOT_PRODUCT = process.arch !== 'x64' || FLAGS.has('avx512_vnni') || FLAGS.has('avx_vnni');

/**
 * onnxruntime's precision mode (`session.x64quantprecision`): int8 weight tensors that could saturate its fast
 * kernels become uint8 and run kernels that sum in 32 bits, on any x86 CPU.
 */
export const ORT_PRECISION_MODE: InferenceSession.SessionOptions = { extra: { session: { x64quantprecision: '1' } } };

/**
 * onnxruntime-node session options that run an int8 file's products exactly here, as the engine does: its
 * precision mode where the CPU has no VNNI, its default elsewhere.
 */
export const ORT_EXACT_INT8: InferenceSession.SessionOptions = HAS_INT8_DOT_PRODUCT ? {} : ORT_PRECISION_MODE;
