// The GPU tier's other half: what happens without a usable GPU, with a software one under --backend auto, and when
// the check or the user keeps a net on the CPU. The Vulkan loader reads VK_ICD_FILENAMES once per process, so each
// case runs in a process of its own (a server, or a small script over the library).

import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { startServerProcess } from '../testkit/server-process.js';
import { ROOT, useTempDirs } from './helpers.js';

const ICD = path.join(ROOT, '.cache', 'software-vulkan', 'lvp_icd.json');
const tempDir = useTempDirs();

/** Runs `body` (an ES module over the compiled library, `Engine` and `planGpuNets` in scope) with `icd`; its JSON. */
function script(icd: string, body: string): Record<string, unknown> {
  const dist = path.join(ROOT, 'dist', 'src');
  const source = `
    import { Engine } from ${JSON.stringify(path.join(dist, 'index.js'))};
    import { planGpuNets } from ${JSON.stringify(path.join(dist, 'engine', 'gpu-check.js'))};
    import { loadNative } from ${JSON.stringify(path.join(dist, 'engine', 'native.js'))};
    import { readManifest } from ${JSON.stringify(path.join(dist, 'engine', 'manifest.js'))};
    import { findOnnxRuntimeLibrary } from ${JSON.stringify(path.join(dist, 'engine', 'onnxruntime-library.js'))};
    const out = {};
    ${body}
    console.log('RESULT ' + JSON.stringify(out));`;
  const r = spawnSync(process.execPath, ['--input-type=module', '-e', source], {
    env: { ...process.env, VK_ICD_FILENAMES: icd },
    encoding: 'utf8',
    timeout: 600_000,
  });
  const line = /^RESULT (.*)$/m.exec(r.stdout ?? '');
  if (!line) throw new Error(`the script failed (${r.status ?? r.signal}):\n${r.stdout}\n${r.stderr}`);
  return JSON.parse(line[1]!) as Record<string, unknown>;
}

/** An ICD manifest naming a library that is not a Vulkan driver. */
function brokenIcd(): string {
  const file = path.join(tempDir('icd-'), 'broken_icd.json');
  fs.writeFileSync(
    file,
    JSON.stringify({ file_format_version: '1.0.0', ICD: { library_path: '/lib/x86_64-linux-gnu/libc.so.6', api_version: '1.3.0' } }),
  );
  return file;
}

const ONE_NET = 'poseModel: null, faceEmbedder: null, objectDetector: null, workers: 1';

describe('no usable GPU', () => {
  it.each([
    ['no Vulkan driver at all', () => '/nonexistent/icd.json'],
    ['a broken driver', brokenIcd],
  ])('with %s, --backend gpu refuses to start and says why', async (_, icd) => {
    process.env['VK_ICD_FILENAMES'] = icd();
    try {
      const started = startServerProcess(['--backend', 'gpu', '--data-dir', tempDir('srv-')], 120_000);
      await expect(started).rejects.toThrow(/backend gpu was asked for, but no Vulkan driver \(ICD\) could be loaded/);
    } finally {
      delete process.env['VK_ICD_FILENAMES'];
    }
  });

  it('with a broken driver, --backend auto runs every net on the CPU, as --backend cpu does', () => {
    const out = script(
      brokenIcd(),
      `for (const backend of ['auto', 'cpu']) {
        const e = await Engine.open({ backend, poseModel: null, faceEmbedder: null, workers: 1 });
        const b = e.backend();
        out[backend] = { devices: b.devices, precisions: b.precisions, runtimes: b.runtimes, gpu: b.gpu, checks: b.gpuChecks ?? null };
        await e.close();
      }`,
    );
    const auto = out['auto'] as Record<string, unknown>;
    const cpu = out['cpu'] as Record<string, unknown>;
    expect(auto['devices']).toEqual(cpu['devices']);
    expect(auto['precisions']).toEqual(cpu['precisions']);
    expect(auto['runtimes']).toEqual(cpu['runtimes']);
    expect(Object.values(auto['devices'] as object)).toEqual(['cpu', 'cpu']);
    expect(auto['gpu']).toMatchObject({ found: false, usable: false, why: 'no Vulkan driver (ICD) could be loaded' });
    expect(auto['checks']).toBeNull();
    expect(cpu['gpu']).toBeNull();
  });
});

describe('the software Vulkan device', () => {
  it('is never used by --backend auto; a net forced to the CPU or failing the check stays there', () => {
    const out = script(
      ICD,
      `const auto = await Engine.open({ backend: 'auto', poseModel: null, faceEmbedder: null, workers: 1 });
      out.auto = { devices: auto.backend().devices, precisions: auto.backend().precisions, checks: auto.backend().gpuChecks };
      await auto.close();
      const forced = await Engine.open({ backend: 'gpu', netDevices: { faceDetector: 'cpu' }, ${ONE_NET} });
      out.forced = { devices: forced.backend().devices, checks: forced.backend().gpuChecks };
      await forced.close();
      // The check with a bar no device can pass (a cosine above 1): the net disagrees and is kept on the CPU.
      const modelDir = ${JSON.stringify(path.join(ROOT, 'models', 'onnx'))};
      const plan = await planGpuNets(loadNative(), {
        engine: { threadsPerWorker: 1, onnxRuntimeLibrary: findOnnxRuntimeLibrary().path },
        backend: 'gpu', manifest: await readManifest(modelDir), modelDir,
        names: { faceDetector: 'facemesh-detection-full' }, forced: {}, cpuPrecision: () => 'fp32',
      }, { minCosine: 1.5, maxRelativeError: 1e-3 });
      out.strict = plan.nets;`,
    );
    const auto = out['auto'] as {
      devices: Record<string, string>;
      precisions: Record<string, string>;
      checks: Record<string, { device: string; code: string; reason: string }>;
    };
    expect(Object.values(auto.devices).every((d) => d === 'cpu')).toBe(true);
    expect(auto.precisions['objectDetector']).toBe('int8'); // as with --backend cpu: no net moved to fp32
    for (const check of Object.values(auto.checks)) {
      expect(check).toMatchObject({ device: 'cpu', code: 'software' });
      expect(check.reason).toMatch(/the only GPU is a software one \(llvmpipe.*\): auto never uses it/);
    }
    const forced = out['forced'] as { devices: Record<string, string>; checks: Record<string, { code: string; reason: string }> };
    expect(forced.devices['faceDetector']).toBe('cpu');
    expect(forced.checks['faceDetector']).toMatchObject({ code: 'forced', reason: 'forced to the CPU' });
    const strict = out['strict'] as Record<string, { device: string; code: string; reason: string; cosine: number }>;
    expect(strict['faceDetector']).toMatchObject({ device: 'cpu', code: 'disagrees' });
    expect(strict['faceDetector']!.reason).toMatch(/^disagrees with the CPU on the GPU \(cosine (1\.0+|0\.9999\d+),/);
  });
});
