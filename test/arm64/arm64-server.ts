// The linux/arm64 image (scripts/arm64/test-arm64.mjs builds it) started as a container runtime starts it, on this x64
// host: `buildah run --isolation chroot` (test/support/container-image.ts), its arm64 programs run by qemu through
// binfmt_misc, the server on loopback. Emulated: for checks of answers, never of speed.

import fs from 'node:fs';
import path from 'node:path';
import { startImageServer, type ImageServer } from '../support/container-image.js';

export function arm64Image(): string {
  const image = process.env['EDGECV_ARM64_IMAGE'];
  if (!image) throw new Error('EDGECV_ARM64_IMAGE is not set: run `npm run test:arm64` (scripts/arm64/test-arm64.mjs), which builds the arm64 image');
  return image;
}

/** Each worker loads and warms up every model at start, which emulation makes slow; answers do not depend on it. */
const ONE_WORKER = ['--workers', '1'];

/**
 * qemu's user mode (7.2) passes this x86 host's /proc/cpuinfo and CPU topology through, on which onnxruntime's CPU
 * probe (cpuinfo) crashes the arm64 process. The server sees an arm64 CPU's instead, as an arm64 board shows its
 * own: two Cortex-A76 cores with dot-product instructions (a Raspberry Pi 5), the description scripts/arm64/arm64-user.mjs
 * gives its sysroot. qemu opens a path under QEMU_LD_PREFIX first where one exists there (binfmt_misc starts it
 * with the process's environment), so a folder holding only those files, mounted in the container, stands in.
 */
const CPU_PREFIX = '/run/edgecv-arm64-cpu';

/**
 * The CPU qemu emulates, the one that description names (QEMU_CPU, read by qemu-user at start like QEMU_LD_PREFIX).
 * Without it qemu 7.2 emulates its 'max' CPU, with SVE: onnxruntime's kernels then run on host vector registers
 * wider than 128 bits, which qemu leaves dirty, and on an Intel host (an AVX-512 Xeon here) each of the SSE-coded
 * helpers it calls for every float multiply-add pays the AVX-to-SSE transition (a call 10 ns clean, 490 ns with
 * dirty upper halves, measured): a 192 px face detection took 21 s a run, 1.5 s as a Cortex-A76 (2.0 s as 'max'
 * without SVE), and the server was not ready in 14 min. AMD hosts pay no such penalty. A Cortex-A76 has no SVE,
 * as the board the description stands for.
 */
const EMULATED_CPU = 'cortex-a76';

function writeArmCpu(dir: string): void {
  fs.chmodSync(dir, 0o755); // read by the image's non-root user
  const core = (i: number) =>
    `processor\t: ${i}\nBogoMIPS\t: 108.00\nFeatures\t: fp asimd evtstrm aes pmull sha1 sha2 crc32 atomics fphp asimdhp cpuid asimdrdm lrcpc dcpop asimddp\n` +
    'CPU implementer\t: 0x41\nCPU architecture: 8\nCPU variant\t: 0x4\nCPU part\t: 0xd0b\nCPU revision\t: 1\n\n';
  const files: Record<string, string> = {
    'proc/cpuinfo': core(0) + core(1),
    'sys/devices/system/cpu/possible': '0-1\n',
    'sys/devices/system/cpu/present': '0-1\n',
  };
  for (const [file, text] of Object.entries(files)) {
    fs.mkdirSync(path.dirname(path.join(dir, file)), { recursive: true });
    fs.writeFileSync(path.join(dir, file), text);
  }
}

export function startArm64Server(opts: {
  image: string;
  dataDir: string;
  cpuDir: string;
  port: number;
  uid: number;
  timeoutMs: number;
}): Promise<ImageServer> {
  writeArmCpu(opts.cpuDir);
  return startImageServer({
    image: opts.image,
    dataDir: opts.dataDir,
    port: opts.port,
    uid: opts.uid,
    args: ONE_WORKER,
    timeoutMs: opts.timeoutMs,
    mounts: [`${opts.cpuDir}:${CPU_PREFIX}:ro`],
    env: [`QEMU_LD_PREFIX=${CPU_PREFIX}`, `QEMU_CPU=${EMULATED_CPU}`],
  });
}
