#!/usr/bin/env node
// Builds the server for linux/arm64 and checks it under emulation: `npm run test:arm64`.
//
//   1. sets this checkout up (--test: the TypeScript output, the models, the test photos, and the x64 server the
//      arm64 answers are compared with); TypeScript output and ONNX files are the same bytes on every CPU, so they
//      are built once, here, and reused;
//   2. cross-compiles the addon for arm64 (scripts/arm64-addon.mjs: Debian's g++-aarch64-linux-gnu against an
//      arm64 sysroot of Debian's OpenCV; compiling under qemu-user would emulate the compiler too);
//   3. assembles the server's files as the runtime image carries them (scripts/image-payload.mjs --arch arm64):
//      that addon, the official arm64 Node of the Dockerfile's major line, and the arm64 binaries the npm packages
//      ship (onnxruntime-node, better-sqlite3, usearch), in .cache/arm64-server;
//   4. runs test/arm64/ (vitest.arm64.config.ts): that server under qemu-user (scripts/arm64-user.mjs), asked the
//      four seed routes on real photos beside the checkout's x64 server.
//
// `--skip-setup` skips step 1. Every step is cached (the sysroot, Node, cmake's build folder); times printed are
// emulated or cross-built, not speeds. Needs root the first time (apt-get for qemu-user-static and the cross
// compiler).
//
// Plain Node ESM without npm dependencies.

import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildArm64Addon } from './arm64-addon.mjs';
import { arm64Node, ensureQemu, ensureSysroot, QEMU } from './arm64-user.mjs';
import { run, StepError } from './shell.mjs';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const OUT = path.join(ROOT, '.cache', 'arm64-server');
const log = (msg) => console.log(`[test-arm64] ${msg}`);
const seconds = (ms) => `${Math.round(ms / 1000)} s`;

/** The Node major line deploy/Dockerfile builds on: the arm64 server runs the same. */
function dockerfileNodeMajor() {
  const dockerfile = fs.readFileSync(path.join(ROOT, 'deploy', 'Dockerfile'), 'utf8');
  const major = /^FROM\s+node:(\d+)-bookworm\b/m.exec(dockerfile)?.[1];
  if (!major) throw new StepError('deploy/Dockerfile names no node:<major>-bookworm base');
  return major;
}

/** Steps 2 and 3: the arm64 server's files and the command that runs its node. */
function buildArm64Server() {
  ensureQemu(log);
  const addon = buildArm64Addon({ log });
  const sysroot = ensureSysroot('sysroot-opencv', log);
  const nodeDir = arm64Node(dockerfileNodeMajor(), log);
  run(process.execPath, [path.join(ROOT, 'scripts', 'image-payload.mjs'), OUT, '--arch', 'arm64', '--addon', addon, '--node', nodeDir], { cwd: ROOT, log });
  return { command: [QEMU, '-L', sysroot, path.join(OUT, 'node')], app: path.join(OUT, 'app') };
}

/** Runs test/arm64/ with vitest; returns whether every check passed. */
function checks(server) {
  const report = path.join(ROOT, '.cache', 'test-arm64', 'vitest.json');
  fs.mkdirSync(path.dirname(report), { recursive: true });
  fs.rmSync(report, { force: true });
  const vitest = path.join(ROOT, 'node_modules', 'vitest', 'vitest.mjs');
  const r = spawnSync(process.execPath, [vitest, 'run', '--config', 'vitest.arm64.config.ts', '--reporter=default', '--reporter=json', `--outputFile.json=${report}`], {
    cwd: ROOT,
    stdio: 'inherit',
    env: { ...process.env, EDGECV_ARM64_SERVER: JSON.stringify(server) },
  });
  const result = fs.existsSync(report) ? JSON.parse(fs.readFileSync(report, 'utf8')) : null;
  const passed = result?.numPassedTests ?? 0;
  const failed = result ? result.numFailedTests + (result.numTotalTests === 0 ? 1 : 0) : 1;
  log(`${passed} passed, ${failed} failed`);
  return r.status === 0 && failed === 0;
}

function main() {
  const t0 = Date.now();
  if (!process.argv.includes('--skip-setup')) run(process.execPath, [path.join(ROOT, 'scripts', 'setup.mjs'), '--test'], { log });
  const tBuild = Date.now();
  const server = buildArm64Server();
  log(`arm64 server built in ${seconds(Date.now() - tBuild)} (cross-compiled; cached parts skipped)`);
  const tCheck = Date.now();
  const ok = checks(server);
  log(`checks under emulation took ${seconds(Date.now() - tCheck)}; npm run test:arm64 took ${seconds(Date.now() - t0)}`);
  process.exit(ok ? 0 : 1);
}

try {
  main();
} catch (e) {
  console.error(`[test-arm64] FAILED: ${e instanceof StepError ? e.message : e.stack}`);
  process.exit(1);
}
