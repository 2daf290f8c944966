// arm64 Linux programs on an x64 machine, under qemu's user-mode emulation: Debian's qemu-user-static, a sysroot
// with arm64 glibc and libstdc++ (unpacked from Debian's arm64 packages through a private apt state, so the host's
// dpkg is untouched), and Node's official arm64 build (scripts/setup/node-release.mjs). onnxruntime-node ships its linux/arm64
// binary in the same npm package, so this checkout's node_modules runs there as it is. For checks of answers on
// arm64 (tools/int8-cpu-spread.ts); emulated timings are not speeds. Cached in .cache/arm64-user.
//
//   node scripts/arm64/arm64-user.mjs [script args...]   runs `node script args...` as arm64, from the repository root
//
// Plain Node ESM without npm dependencies.

import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { fetchNode, nodePackage, resolveRelease } from '../setup/node-release.mjs';
import { cachedDebs, installClosure, PrivateApt } from '../setup/private-apt.mjs';
import { run, StepError } from '../setup/shell.mjs';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
export const QEMU = '/usr/bin/qemu-aarch64-static';
/**
 * The sysroots (.cache/arm64-user/<name>) and the Debian arm64 packages each is made of, with their dependencies.
 * sysroot: what Node's and onnxruntime's arm64 binaries load besides themselves. sysroot-opencv: that and the OpenCV
 * modules, libjpeg and libpng the addon links, with their headers (scripts/arm64/arm64-addon.mjs cross-compiles against
 * them, and the addon finds its libraries there at run time). No imgcodecs: the addon has its own codecs.
 */
const SYSROOTS = {
  sysroot: ['libc6', 'libgcc-s1', 'libstdc++6'],
  'sysroot-opencv': [
    'libc6',
    'libgcc-s1',
    'libstdc++6',
    'libopencv-core-dev',
    'libopencv-imgproc-dev',
    'libopencv-dnn-dev',
    'libopencv-flann-dev',
    'libopencv-calib3d406',
    'libjpeg62-turbo-dev',
    'libpng-dev',
  ],
};
/**
 * Packages unpacked without their dependencies, at the version of the sysroot's libopencv-core406: calib3d's and
 * features2d's headers and link names. Their -dev packages depend on highgui's, and through it on imgcodecs, GTK
 * and Qt, none of which the addon uses.
 */
const WITHOUT_DEPENDENCIES = { 'sysroot-opencv': ['libopencv-calib3d-dev', 'libopencv-features2d-dev'] };

export function ensureQemu(log) {
  if (fs.existsSync(QEMU)) return;
  if (process.getuid?.() !== 0) throw new StepError(`${QEMU} is missing: apt-get install qemu-user-static (as root)`);
  run('apt-get', ['update', '-q'], { log });
  run('apt-get', ['install', '-y', '-q', '--no-install-recommends', 'qemu-user-static'], {
    log,
    env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' },
  });
}

/**
 * qemu's user mode opens a path under its -L folder first where one exists there. onnxruntime's CPU probe (cpuinfo)
 * crashes on the host's x86 /proc/cpuinfo and CPU topology, so the sysroot describes an arm64 CPU instead: two
 * Cortex-A76 cores with dot-product instructions, as on a Raspberry Pi 5 (the kernels onnxruntime picks follow the
 * emulated CPU's hardware capabilities, which qemu reports itself).
 */
function writeCpuDescription(sysroot) {
  const core = (i) =>
    `processor\t: ${i}\nBogoMIPS\t: 108.00\nFeatures\t: fp asimd evtstrm aes pmull sha1 sha2 crc32 atomics fphp asimdhp cpuid asimdrdm lrcpc dcpop asimddp\n` +
    'CPU implementer\t: 0x41\nCPU architecture: 8\nCPU variant\t: 0x4\nCPU part\t: 0xd0b\nCPU revision\t: 1\n\n';
  fs.mkdirSync(path.join(sysroot, 'proc'), { recursive: true });
  fs.writeFileSync(path.join(sysroot, 'proc', 'cpuinfo'), core(0) + core(1));
  const cpus = path.join(sysroot, 'sys', 'devices', 'system', 'cpu');
  fs.mkdirSync(cpus, { recursive: true });
  for (const f of ['possible', 'present']) fs.writeFileSync(path.join(cpus, f), '0-1\n');
}

/**
 * The links Debian's maintainer scripts would make, which unpacking alone does not: libblas3 and liblapack3 put
 * their libraries in lib/<triplet>/{blas,lapack}/ and register lib/<triplet>/lib{blas,lapack}.so.3 with
 * update-alternatives in postinst (OpenCV's core library needs liblapack.so.3).
 */
function linkAlternatives(sysroot) {
  const lib = path.join(sysroot, 'usr', 'lib', 'aarch64-linux-gnu');
  for (const dir of ['blas', 'lapack']) {
    const from = path.join(lib, dir);
    if (!fs.existsSync(from)) continue;
    for (const f of fs.readdirSync(from))
      if (/^lib\w+\.so\.\d+$/.test(f) && !fs.existsSync(path.join(lib, f))) fs.symlinkSync(path.join(dir, f), path.join(lib, f));
  }
}

/** .cache/arm64-user/<name>: SYSROOTS[name] and their dependencies, unpacked; rebuilt when that set of .debs changes. */
export function ensureSysroot(name = 'sysroot', log = console.log) {
  const cache = path.join(ROOT, '.cache', 'arm64-user');
  const sysroot = path.join(cache, name);
  const apt = new PrivateApt(path.join(cache, 'apt'), { arch: 'arm64', log });
  const closure = installClosure(apt, SYSROOTS[name]);
  const opencvVersion = closure.find((p) => p.name === 'libopencv-core406')?.version;
  const alone = (WITHOUT_DEPENDENCIES[name] ?? []).map((pkg) => ({ name: pkg, version: opencvVersion }));
  if (alone.length && !opencvVersion) throw new StepError(`${name}: no libopencv-core406 among ${SYSROOTS[name].join(', ')} and their dependencies`);
  const debs = cachedDebs(apt, [...closure, ...alone], path.join(cache, 'debs'));
  const stamp = debs
    .map((d) => path.basename(d))
    .sort()
    .join('\n');
  const stampFile = path.join(sysroot, '.debs');
  if (fs.existsSync(stampFile) && fs.readFileSync(stampFile, 'utf8') === stamp) return sysroot;
  // made beside and renamed into place, so an interrupted run leaves no half sysroot behind its stamp
  const building = `${sysroot}.building-${process.pid}`;
  fs.rmSync(building, { recursive: true, force: true });
  fs.mkdirSync(building, { recursive: true });
  for (const deb of debs) run('dpkg-deb', ['-x', deb, building], { log, quiet: true });
  writeCpuDescription(building);
  linkAlternatives(building);
  if (!fs.existsSync(path.join(building, 'lib', 'ld-linux-aarch64.so.1')))
    throw new StepError(`${building}: no lib/ld-linux-aarch64.so.1 after unpacking ${SYSROOTS[name].join(', ')}`);
  fs.writeFileSync(path.join(building, '.debs'), stamp);
  fs.rmSync(sysroot, { recursive: true, force: true });
  fs.renameSync(building, sysroot);
  log(`arm64 sysroot: ${path.relative(ROOT, sysroot)} (${debs.length} packages: ${SYSROOTS[name].join(', ')} and their dependencies)`);
  return sysroot;
}

/** The official arm64 Node of a major line (default: the one running this script), fetched once: its folder. */
export function arm64Node(range = process.versions.node, log = console.log) {
  return fetchNode(ROOT, resolveRelease(nodePackage('arm64'), range, log), log);
}

/** The command that runs arm64 Node with these arguments: [program, args]. Installs and fetches what it lacks. */
export function arm64NodeCommand(args, { log = console.log, sysroot = 'sysroot', node = process.versions.node } = {}) {
  ensureQemu(log);
  const root = ensureSysroot(sysroot, log);
  return [QEMU, ['-L', root, path.join(arm64Node(node, log), 'bin', 'node'), ...args]];
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  try {
    const [cmd, args] = arm64NodeCommand(process.argv.slice(2), { log: (m) => console.error(`[arm64] ${m}`) });
    const r = spawnSync(cmd, args, { stdio: 'inherit', cwd: ROOT });
    process.exit(r.status ?? 1);
  } catch (e) {
    console.error(`[arm64] FAILED: ${e instanceof StepError ? e.message : e.stack}`);
    process.exit(1);
  }
}
