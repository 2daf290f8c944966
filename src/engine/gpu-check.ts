// Which nets run on the GPU (backend 'gpu' or 'auto'), decided at Engine.open on a model-less engine of its own:
// each net's fp32 file runs one fixed input on the CPU and on the GPU (onnxruntime's WebGPU provider), and only a net
// whose outputs agree is trusted to the GPU. A net that disagrees with onnxruntime's fusions on is tried again with
// them off (faceres: the provider's fused convolution with a Clip gives other answers; docs/gpu.md). With 'auto'
// the GPU must also be a hardware adapter and beat the CPU on the same input; 'gpu' takes any adapter, software
// ones included (tests). The engine that checks is closed before the real one loads.

import { rawModelSpec, type LoadedManifest } from './manifest.js';
import type { NativeBinding, NativeEngine, NativeEngineOptions, NativeGpuAdapter, NativeRawModelSpec } from './native.js';
import { madeUpInput } from './precision-timer.js';
import type { GpuGraph, GpuNetCheck, NetDevice, NetKey, Precision } from './types.js';

/**
 * Outputs agree when, for each, the cosine of CPU and GPU is at least MIN_COSINE and no element differs by more than
 * MAX_RELATIVE_ERROR of the CPU output's largest magnitude. Both devices run the same fp32 graph; only the order of
 * the sums differs, which moves the nets that agree by under 1e-5 of their range (measured on lavapipe and listed
 * in docs/gpu.md); 1e-3 of a 640 px box output is under a pixel and cannot flip a score across a threshold by more.
 * faceres with its fusions on scores a cosine of 0.07.
 */
export const GPU_AGREEMENT: AgreementBar = { minCosine: 0.9999, maxRelativeError: 1e-3 };

export interface AgreementBar {
  minCosine: number;
  maxRelativeError: number;
}

/** How a GPU output compares with the CPU's: the worst output's cosine and relative largest difference. */
export interface Agreement {
  cosine: number;
  maxRelativeError: number;
}

export function compareOutputs(cpu: readonly Float32Array[], gpu: readonly Float32Array[]): Agreement {
  let cosine = 1;
  let maxRelativeError = 0;
  cpu.forEach((a, k) => {
    const b = gpu[k];
    if (!b || b.length !== a.length) {
      cosine = -1;
      maxRelativeError = Infinity;
      return;
    }
    let dot = 0;
    let na = 0;
    let nb = 0;
    let range = 0;
    let diff = 0;
    for (let i = 0; i < a.length; i++) {
      const x = a[i]!;
      const y = b[i]!;
      dot += x * y;
      na += x * x;
      nb += y * y;
      range = Math.max(range, Math.abs(x));
      diff = Math.max(diff, Math.abs(x - y));
    }
    // Two all-zero outputs agree; NaN anywhere does not (every comparison with it fails below).
    const c = na === 0 && nb === 0 ? 1 : dot / Math.sqrt(na * nb);
    cosine = Math.min(cosine, Number.isNaN(c) ? -1 : c);
    maxRelativeError = Math.max(maxRelativeError, Number.isNaN(diff) ? Infinity : diff / Math.max(range, 1e-6));
  });
  return { cosine, maxRelativeError };
}

export function agrees(a: Agreement, bar: AgreementBar = GPU_AGREEMENT): boolean {
  return a.cosine >= bar.minCosine && a.maxRelativeError <= bar.maxRelativeError;
}

const agreementText = (a: Agreement) =>
  `cosine ${a.cosine.toFixed(6)}, largest difference ${a.maxRelativeError.toExponential(1)} of the output's range`;

/** Timed runs of each device for 'auto' (after one untimed run each, which pays for allocations and shaders). */
const TIMED_RUNS = 3;

async function medianMs(native: NativeEngine, input: Float32Array, spec: NativeRawModelSpec): Promise<number> {
  await native.runModel(input, spec);
  const times: number[] = [];
  for (let i = 0; i < TIMED_RUNS; i++) {
    const t0 = performance.now();
    await native.runModel(input, spec);
    times.push(performance.now() - t0);
  }
  return times.sort((x, y) => x - y)[times.length >> 1]!;
}

export interface GpuPlan {
  /** The adapter the native side found (null: it was not looked for). */
  adapter: NativeGpuAdapter | null;
  /** By net key: where it runs and why. */
  nets: Partial<Record<NetKey, GpuNetCheck>>;
}

export interface GpuCheckRequest {
  engine: Pick<NativeEngineOptions, 'threadsPerWorker' | 'onnxRuntimeLibrary'>;
  backend: 'gpu' | 'auto';
  manifest: LoadedManifest;
  modelDir: string;
  /** The name of each loaded net (an own object model file has no manifest entry: it stays on the CPU). */
  names: Partial<Record<NetKey, string>>;
  /** The user's choice per net ('auto' where not forced). */
  forced: Partial<Record<NetKey, NetDevice>>;
  /** The precision a net would run at on the CPU: what 'auto' times the GPU against. */
  cpuPrecision: (name: string) => Precision;
}

/** Decides each net's device (module comment). */
export async function planGpuNets(binding: NativeBinding, request: GpuCheckRequest, bar: AgreementBar = GPU_AGREEMENT): Promise<GpuPlan> {
  const { backend, manifest, modelDir, names, forced } = request;
  // Throws, for 'gpu', when the WebGPU provider or an adapter is missing (the message says which).
  const native = binding.createEngine({ ...request.engine, backend, workers: 1, queueLimit: 4, idleCores: 'keep' });
  try {
    // 'auto' with a usable CUDA device runs every net there, as before.
    if (native.backend().backend === 'cuda') return { adapter: null, nets: {} };
    const adapter = native.backend().gpu;
    const nets: Partial<Record<NetKey, GpuNetCheck>> = {};
    const cpuOnly = (reason: string) => {
      for (const [key, name] of Object.entries(names)) if (name !== undefined) nets[key as NetKey] = { device: 'cpu', code: 'no-gpu', reason };
    };
    if (!adapter?.usable) {
      cpuOnly(`no GPU: ${adapter?.why ?? 'not looked for'}`);
      return { adapter, nets };
    }
    // 'auto' on a software adapter behaves as a machine without a GPU: not a single net runs there, forced ones aside.
    const softwareAuto = backend === 'auto' && adapter.software;
    const inputs = new Map<string, Float32Array>();
    for (const [key, name] of Object.entries(names) as [NetKey, string | undefined][]) {
      const choice = forced[key] ?? 'auto';
      const spec = name === undefined ? null : rawModelSpec(manifest, modelDir, name, 'onnxruntime', 'fp32');
      if (name === undefined) {
        continue; // not loaded
      } else if (spec === null) {
        nets[key] = { device: 'cpu', code: 'own-model', reason: 'an own model file: not checked on the GPU' };
      } else if (choice === 'cpu') {
        nets[key] = { device: 'cpu', code: 'forced', reason: 'forced to the CPU' };
      } else if (softwareAuto && choice === 'auto') {
        nets[key] = { device: 'cpu', code: 'software', reason: `the only GPU is a software one (${adapter.device}): auto never uses it` };
      } else {
        const size = spec.inputShape.reduce((a, b) => a * b, 1);
        let input = inputs.get(String(size));
        if (!input) inputs.set(String(size), (input = madeUpInput(size)));
        nets[key] = await checkNet(native, spec, input, choice === 'gpu', request, name, bar);
      }
    }
    return { adapter, nets };
  } finally {
    await native.close();
  }
}

/**
 * One net: agreement first (fusions on, then off), then for 'auto' the race against the CPU. A net the user forced to
 * the GPU goes there whatever the check says (the reason keeps what it said).
 */
async function checkNet(
  native: NativeEngine,
  spec: NativeRawModelSpec,
  input: Float32Array,
  forcedGpu: boolean,
  request: GpuCheckRequest,
  name: string,
  bar: AgreementBar,
): Promise<GpuNetCheck> {
  const cpu = await native.runModel(input, spec);
  let first: Agreement | undefined;
  for (const graph of ['optimized', 'basic'] as GpuGraph[]) {
    const gpuSpec: NativeRawModelSpec = { ...spec, device: 'gpu', gpuGraph: graph };
    let gpu: Float32Array[];
    const fallbacks = native.stats().gpuFallbackRuns;
    try {
      gpu = await native.runModel(input, gpuSpec);
    } catch (e) {
      // The provider or the driver refused the net (an adapter Dawn does not accept, an operator it cannot run).
      return { device: 'cpu', code: 'no-gpu', reason: `the GPU could not run it: ${(e as Error).message}` };
    }
    // A run the GPU failed comes back from the CPU (native/runtime/gpu_sessions.h): its answers prove nothing.
    if (native.stats().gpuFallbackRuns > fallbacks) {
      return { device: 'cpu', code: 'no-gpu', reason: 'the GPU failed running it (the log has the error)' };
    }
    const agreement = compareOutputs(cpu, gpu);
    first ??= agreement;
    if (!agrees(agreement, bar)) continue;
    const fusions = graph === 'basic' ? `, with onnxruntime's fusions off (on: ${agreementText(first)})` : '';
    const check: GpuNetCheck = {
      device: 'gpu',
      code: 'agrees',
      graph,
      reason: `agrees with the CPU (${agreementText(agreement)}${fusions})`,
      ...agreement,
    };
    if (forcedGpu || request.backend === 'gpu')
      return forcedGpu ? { ...check, code: 'forced', reason: `forced to the GPU; it ${check.reason}` } : check;
    const cpuSpec = rawModelSpec(request.manifest, request.modelDir, name, 'onnxruntime', request.cpuPrecision(name)) ?? spec;
    const gpuMs = await medianMs(native, input, gpuSpec);
    const cpuMs = await medianMs(native, input, cpuSpec);
    const times = `GPU ${gpuMs.toFixed(1)} ms, CPU ${cpuMs.toFixed(1)} ms`;
    return gpuMs < cpuMs
      ? { ...check, gpuMs, cpuMs, reason: `${check.reason}; faster there (${times})` }
      : { device: 'cpu', code: 'slower', graph, gpuMs, cpuMs, ...agreement, reason: `slower on the GPU (${times})` };
  }
  const disagreement = `disagrees with the CPU on the GPU (${agreementText(first!)})`;
  return forcedGpu
    ? { device: 'gpu', code: 'forced', graph: 'optimized', reason: `forced to the GPU, although it ${disagreement}`, ...first! }
    : { device: 'cpu', code: 'disagrees', reason: disagreement, ...first! };
}
