// arm64 Linux programs on an x64 machine, under qemu's user-mode emulation: Debian's qemu-user-static, a sysroot
// with arm64 glibc and libstdc++ (unpacked from Debian's arm64 packages through a private apt state, so the host's
// dpkg is untouched), and Node's official arm64 build (scripts/node-release.mjs). onnxruntime-node ships its linux/arm64
// binary in the same npm package, so this checkout's node_modules runs there as it is. For checks of answers on
// arm64 (bench/int8-cpu-spread.ts); emulated timings are not speeds. Cached in .cache/arm64-user.
//
//   node scripts/arm64-user.mjs [script args...]   runs `node script args...` as arm64, from the repository root
//
// Plain Node ESM without npm dependencies.

import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { fetchNode, nodePackage, resolveRelease } from './node-release.mjs';
import { cachedDeb, PrivateApt } from './private-apt.mjs';
import { run, StepError } from './shell.mjs';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const QEMU = '/usr/bin/qemu-aarch64-static';
/** What Node's and onnxruntime's arm64 binaries load besides themselves. */
const SYSROOT_PACKAGES = ['libc6', 'libgcc-s1', 'libstdc++6'];

function ensureQemu(log) {
  if (fs.existsSync(QEMU)) return;
  if (process.getuid?.() !== 0) throw new StepError(`${QEMU} is missing: apt-get install qemu-user-static (as root)`);
  run('apt-get', ['install', '-y', '-q', '--no-install-recommends', 'qemu-user-static'], { log, env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' } });
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

/** .cache/arm64-user/sysroot: the packages above, unpacked; rebuilt when the set of .debs changes. */
function ensureSysroot(log) {
  const cache = path.join(ROOT, '.cache', 'arm64-user');
  const sysroot = path.join(cache, 'sysroot');
  const apt = new PrivateApt(path.join(cache, 'apt'), { arch: 'arm64', log });
  const debs = SYSROOT_PACKAGES.map((p) => cachedDeb(apt, p, path.join(cache, 'debs')));
  const stamp = debs.map((d) => path.basename(d)).join('\n');
  const stampFile = path.join(sysroot, '.debs');
  if (fs.existsSync(stampFile) && fs.readFileSync(stampFile, 'utf8') === stamp) return sysroot;
  fs.rmSync(sysroot, { recursive: true, force: true });
  fs.mkdirSync(sysroot, { recursive: true });
  for (const deb of debs) run('dpkg-deb', ['-x', deb, sysroot], { log, quiet: true });
  writeCpuDescription(sysroot);
  if (!fs.existsSync(path.join(sysroot, 'lib', 'ld-linux-aarch64.so.1'))) throw new StepError(`${sysroot}: no lib/ld-linux-aarch64.so.1 after unpacking ${SYSROOT_PACKAGES.join(', ')}`);
  fs.writeFileSync(stampFile, stamp);
  log(`arm64 sysroot: ${path.relative(ROOT, sysroot)} (${SYSROOT_PACKAGES.join(', ')})`);
  return sysroot;
}

/** The command that runs arm64 Node with these arguments: [program, args]. Installs and fetches what it lacks. */
export function arm64NodeCommand(args, { log = console.log } = {}) {
  ensureQemu(log);
  const sysroot = ensureSysroot(log);
  const node = path.join(fetchNode(ROOT, resolveRelease(nodePackage('arm64'), process.versions.node, log), log), 'bin', 'node');
  return [QEMU, ['-L', sysroot, node, ...args]];
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
