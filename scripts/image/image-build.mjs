#!/usr/bin/env node
// The build stage's target step (deploy/Dockerfile): after set-up has built everything that is the same on every
// CPU (the TypeScript output, the models: ONNX files are the same bytes everywhere), `node scripts/image/image-build.mjs
// <dest> <target arch>` writes what the run stage of that platform takes:
//
//   <dest>/app, <dest>/node   the server's files and Node (scripts/image/image-payload.mjs);
//   <dest>/lib-root           the root file system, relative to the build stage's /, that the run stage copies the
//                             native code's shared libraries from (scripts/image/image-libs.mjs);
//   <dest>/libs-stamp         a hash of what decides those libraries: the binaries that link to them and the
//                             packages of that root. The run stage copies it in before the step that copies the
//                             libraries: that step reads the build stage through a bind mount, which a builder's
//                             layer cache does not see, so without the stamp a changed addon would get the
//                             libraries of an earlier build.
//
// amd64 (the build platform): the payload of this build stage as it is; the libraries come from its own root.
// arm64: the addon cross-compiled (scripts/arm64/arm64-addon.mjs: Debian's g++-aarch64-linux-gnu against an arm64 sysroot
// of Debian's OpenCV, unpacked through a private apt state), the official arm64 Node of this Node's major line and
// the npm packages' own arm64 binaries (image-payload.mjs --arch arm64); the libraries come from that sysroot, where
// this writes the file list of each package it unpacked (var/lib/dpkg/info/<package>.list), so that image-libs.mjs
// can name their packages and copy their copyright files. Nothing is compiled under emulation.
//
// Plain Node ESM without npm dependencies.

import { execFileSync } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildArm64Addon } from '../arm64/arm64-addon.mjs';
import { arm64Node, ensureSysroot } from '../arm64/arm64-user.mjs';
import { run, StepError } from '../setup/shell.mjs';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const log = (msg) => console.log(`[image-build] ${msg}`);
/** Docker's TARGETARCH names (the platform's architecture) and Node's process.arch for them. */
const NODE_ARCH = { amd64: 'x64', arm64: 'arm64' };

/** Writes var/lib/dpkg/info/<package>.list in the sysroot from the .debs it was unpacked from (its .debs stamp). */
function writeFileLists(sysroot) {
  const debDir = path.join(ROOT, '.cache', 'arm64-user', 'debs');
  const info = path.join(sysroot, 'var', 'lib', 'dpkg', 'info');
  fs.mkdirSync(info, { recursive: true });
  for (const deb of fs.readFileSync(path.join(sysroot, '.debs'), 'utf8').split('\n').filter(Boolean)) {
    const file = path.join(debDir, deb);
    const pkg = execFileSync('dpkg-deb', ['-f', file, 'Package'], { encoding: 'utf8' }).trim();
    const listing = execFileSync('dpkg-deb', ['-c', file], { encoding: 'utf8', maxBuffer: 1 << 28 });
    // "-rw-r--r-- root/root 1234 2024-01-01 00:00 ./usr/lib/x.so.1 [-> target]": the path, as dpkg lists it
    const paths = listing
      .split('\n')
      .map((l) => /\s\.(\/\S*)/.exec(l)?.[1])
      .filter((p) => p && p !== '/');
    fs.writeFileSync(path.join(info, `${pkg}.list`), paths.map((p) => p.replace(/\/$/, '')).join('\n') + '\n');
  }
}

/** The files under `dir` that link to shared libraries: Node, the addons and onnxruntime's library. */
function linkingBinaries(dir) {
  const out = [];
  for (const entry of fs.readdirSync(dir, { withFileTypes: true, recursive: true })) {
    if (!entry.isFile()) continue;
    const file = path.join(entry.parentPath ?? entry.path, entry.name);
    if (file === path.join(dir, 'node') || entry.name.endsWith('.node') || entry.name.startsWith('libonnxruntime.so')) out.push(file);
  }
  return out.sort();
}

/** Writes <dest>/libs-stamp: the hash of the linking binaries and of the library root's package list. */
function writeLibsStamp(dest, libRoot, packages) {
  const hash = crypto.createHash('sha256').update(`${libRoot}\n${packages}\n`);
  for (const file of linkingBinaries(dest)) hash.update(`${path.relative(dest, file)}\n`).update(fs.readFileSync(file));
  fs.writeFileSync(path.join(dest, 'libs-stamp'), `${hash.digest('hex')}\n`);
}

function main() {
  const [dest, arch] = process.argv.slice(2);
  if (!dest || !NODE_ARCH[arch]) {
    console.error(`usage: node scripts/image/image-build.mjs <dest> <${Object.keys(NODE_ARCH).join('|')}>`);
    process.exit(2);
  }
  const payload = path.join(ROOT, 'scripts', 'image', 'image-payload.mjs');
  if (NODE_ARCH[arch] === process.arch) {
    run(process.execPath, [payload, dest], { cwd: ROOT, log });
    fs.writeFileSync(path.join(dest, 'lib-root'), '.\n');
    writeLibsStamp(dest, '.', execFileSync('dpkg-query', ['-W', '-f', '${Package} ${Version}\\n'], { encoding: 'utf8' }));
    return;
  }
  if (arch !== 'arm64') throw new StepError(`no cross build for ${arch} from ${process.arch}`);
  const t0 = Date.now();
  const addon = buildArm64Addon({ log });
  const sysroot = ensureSysroot('sysroot-opencv', log);
  const node = arm64Node(process.versions.node.split('.')[0], log);
  run(process.execPath, [payload, dest, '--arch', 'arm64', '--addon', addon, '--node', node], { cwd: ROOT, log });
  writeFileLists(sysroot);
  fs.writeFileSync(path.join(dest, 'lib-root'), `${path.relative('/', sysroot)}\n`);
  writeLibsStamp(dest, path.relative('/', sysroot), fs.readFileSync(path.join(sysroot, '.debs'), 'utf8'));
  log(`arm64: addon cross-compiled, payload in ${dest}, libraries from ${sysroot} (${Math.round((Date.now() - t0) / 1000)} s)`);
}

try {
  main();
} catch (e) {
  console.error(`[image-build] FAILED: ${e instanceof StepError ? e.message : e.stack}`);
  process.exit(1);
}
