// arm64 programs started by the kernel itself on this x64 host: binfmt_misc with Debian's qemu-user-static handler
// for aarch64 ELF files. mmdebstrap --arch=arm64 (the arm64 base image's maintainer scripts) and a RUN step in an
// arm64 image's stage need it; running one program with `qemu-aarch64-static -L` (scripts/arm64/arm64-user.mjs) does not.
// The handler's F flag makes the kernel open the interpreter at registration, so it works inside chroots too.
//
// Plain Node ESM without npm dependencies. Needs root the first time (mount, register).

import fs from 'node:fs';
import { ensureQemu } from './arm64-user.mjs';
import { run, StepError } from '../setup/shell.mjs';

const BINFMT = '/proc/sys/fs/binfmt_misc';
/** Debian's qemu-user-static describes its handlers for systemd-binfmt here (magic, mask, interpreter, flags). */
const HANDLER = '/usr/lib/binfmt.d/qemu-aarch64.conf';

/** mmdebstrap checks with arch-test that the host runs a foreign architecture's programs before it builds for it. */
function ensureArchTest(log) {
  if (fs.existsSync('/usr/bin/arch-test')) return;
  if (process.getuid?.() !== 0) throw new StepError('arch-test is missing: apt-get install arch-test (as root)');
  run('apt-get', ['install', '-y', '-q', '--no-install-recommends', 'arch-test'], {
    log,
    env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' },
  });
}

/**
 * Mounts binfmt_misc when it is not, and registers qemu's aarch64 handler when it is not registered; installs
 * qemu-user-static and arch-test when they are missing.
 */
export function ensureArm64Binfmt(log = console.log) {
  ensureQemu(log);
  ensureArchTest(log);
  if (!fs.existsSync(`${BINFMT}/register`)) {
    if (process.getuid?.() !== 0) throw new StepError(`${BINFMT} is not mounted: mount -t binfmt_misc binfmt_misc ${BINFMT} (as root)`);
    run('mount', ['-t', 'binfmt_misc', 'binfmt_misc', BINFMT], { log });
  }
  if (fs.existsSync(`${BINFMT}/qemu-aarch64`)) return;
  if (!fs.existsSync(HANDLER)) throw new StepError(`${HANDLER} is missing: apt-get install --reinstall qemu-user-static`);
  const line = fs
    .readFileSync(HANDLER, 'utf8')
    .split('\n')
    .find((l) => l.startsWith(':qemu-aarch64:'));
  if (!line) throw new StepError(`${HANDLER} holds no :qemu-aarch64: handler`);
  fs.writeFileSync(`${BINFMT}/register`, line);
  log(`binfmt_misc: qemu-aarch64 registered (${HANDLER})`);
}
