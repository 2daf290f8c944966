// A software Vulkan device for the GPU tests (test/gpu-backend.test.ts, test/gpu-fallback.test.ts): Mesa's
// lavapipe, the CPU emulating a GPU, which onnxruntime's WebGPU provider (Dawn) accepts from Mesa 25 on. bookworm's own Mesa 22.3 is refused ("Vulkan
// shaderUniform*ArrayDynamicIndexing required"), so `mesa-vulkan-drivers` comes from bookworm-backports through a
// private apt state (never touching /etc/apt) and is unpacked under .cache/software-vulkan/; its shared-library
// dependencies are ordinary bookworm packages (the Vulkan loader libvulkan1, libLLVM 15, libdrm, X and Wayland
// client libraries), installed with apt-get like the other test tools.
//
// A process uses it with VK_ICD_FILENAMES=<this folder>/lvp_icd.json (set before its first Vulkan call). Slow
// (0.3-2 s a forward pass): for correctness only, never for speed.
//
// Plain Node ESM with no npm dependencies: it runs from scripts/setup/setup.mjs.

import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { cachedDeb, PrivateApt } from './private-apt.mjs';
import { capture, run as runStep, StepError } from './shell.mjs';

const SUITE = 'bookworm-backports';
const PACKAGE = 'mesa-vulkan-drivers';
/** The lowest Mesa whose lavapipe Dawn accepts (measured: 25.0.7 works, 22.3.6 does not). */
const MIN_MESA_MAJOR = 25;

const log = (msg) => console.log(`[software-vulkan] ${msg}`);
const run = (cmd, args, opts = {}) => runStep(cmd, args, { log, ...opts });

/** The ICD manifest tests point VK_ICD_FILENAMES at. */
export function softwareVulkanIcd(root) {
  return path.join(root, '.cache', 'software-vulkan', 'lvp_icd.json');
}

/** Package names of a Depends field, versions and alternatives dropped (the first alternative kept). */
function dependsNames(field) {
  return field
    .split(',')
    .map((d) => d.split('|')[0].trim().split(/[\s(]/)[0])
    .filter(Boolean);
}

function notInstalled(packages) {
  const r = spawnSync('dpkg-query', ['-W', '-f=${Package} ${db:Status-Status}\n', ...packages], { encoding: 'utf8' });
  const installed = new Set(
    (r.stdout ?? '')
      .split('\n')
      .map((l) => l.split(' '))
      .filter(([, st]) => st === 'installed')
      .map(([p]) => p.replace(/:.*/, '')),
  );
  return packages.filter((p) => !installed.has(p));
}

/**
 * Makes .cache/software-vulkan/lvp_icd.json present (lavapipe unpacked beside it, its library path absolute) and its
 * dependencies installed. Returns the ICD path. Skipped when the ICD is there, names a library that exists and every
 * dependency is installed.
 */
export function ensureSoftwareVulkan({ root }) {
  const dir = path.join(root, '.cache', 'software-vulkan');
  const icd = softwareVulkanIcd(root);
  const unpacked = path.join(dir, 'root');
  const depsFile = path.join(dir, 'depends.txt');
  const library = path.join(unpacked, 'usr', 'lib', 'x86_64-linux-gnu', 'libvulkan_lvp.so');
  if (process.arch !== 'x64') {
    log(`skipped: onnxruntime-node's ${process.arch} library has no WebGPU provider`);
    return null;
  }
  if (fs.existsSync(icd) && fs.existsSync(library) && fs.existsSync(depsFile)) {
    const missing = notInstalled(fs.readFileSync(depsFile, 'utf8').split('\n').filter(Boolean));
    if (missing.length === 0) {
      log(`${path.relative(root, icd)} present`);
      return icd;
    }
  }
  log(`fetching ${PACKAGE} from Debian ${SUITE}`);
  const apt = new PrivateApt(path.join(dir, 'apt'), { suite: SUITE, log });
  const deb = cachedDeb(apt, PACKAGE, path.join(dir, 'debs'));
  const version = capture('dpkg-deb', ['-f', deb, 'Version']);
  if (!(Number(version.split('.')[0]) >= MIN_MESA_MAJOR)) {
    fs.rmSync(deb, { force: true });
    throw new StepError(`${PACKAGE} ${version} from ${SUITE} is older than Mesa ${MIN_MESA_MAJOR}, whose lavapipe Dawn needs`);
  }
  // Its dependencies from the system's own suites (libdrm at bookworm's version serves lavapipe).
  const depends = dependsNames(capture('dpkg-deb', ['-f', deb, 'Depends']));
  const missing = notInstalled(depends);
  if (missing.length > 0) {
    if (process.getuid?.() !== 0)
      throw new StepError(`the software Vulkan device needs: sudo apt-get install -y --no-install-recommends ${missing.join(' ')}`);
    run('apt-get', ['install', '-y', '--no-install-recommends', ...missing], { env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' } });
  }
  fs.rmSync(unpacked, { recursive: true, force: true });
  run('dpkg-deb', ['-x', deb, unpacked], { quiet: true });
  const shipped = JSON.parse(fs.readFileSync(path.join(unpacked, 'usr', 'share', 'vulkan', 'icd.d', 'lvp_icd.json'), 'utf8'));
  if (!fs.existsSync(library)) throw new StepError(`${path.basename(deb)} has no ${path.relative(unpacked, library)}`);
  shipped.ICD.library_path = library;
  fs.writeFileSync(icd, JSON.stringify(shipped, null, 2) + '\n');
  fs.writeFileSync(depsFile, depends.join('\n') + '\n');
  log(`${PACKAGE} ${version} (lavapipe) unpacked; ${path.relative(root, icd)} written`);
  return icd;
}
