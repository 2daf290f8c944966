#!/usr/bin/env node
// Builds the linux/arm64 image of deploy/Dockerfile and checks the server in it under emulation: `npm run test:arm64`.
//
//   1. sets this checkout up (--test: the test photos, and the x64 server the arm64 answers are compared with);
//   2. binfmt_misc with qemu's aarch64 handler (scripts/arm64/binfmt.mjs), and the base images made locally
//      (scripts/image/container-bases.mjs): node:<major>-bookworm for amd64 (the build stage runs on the build platform)
//      and debian:bookworm-slim for arm64 (the run stage);
//   3. `buildah bud --platform linux/arm64` (scripts/image/image-tools.mjs) into IMAGE: the build stage runs natively
//      (TypeScript, models, the addon cross-compiled by scripts/image/image-build.mjs), the run stage's one RUN under
//      emulation; prints its size by layer;
//   4. runs test/arm64/ (vitest.arm64.config.ts): the image started with buildah (its entry point, user and
//      environment; arm64 code under qemu through binfmt_misc), asked the four seed routes on real photos beside
//      the checkout's x64 server.
//
// `--skip-setup` skips step 1's set-up. The image stays in buildah's storage as IMAGE with its build cache
// (--layers); times printed are emulated or cross-built, not speeds. Needs root (buildah, mmdebstrap, binfmt_misc).
//
// Plain Node ESM without npm dependencies.

import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { ensureArm64Binfmt } from './binfmt.mjs';
import { ensureBaseImages } from '../image/container-bases.mjs';
import { buildImage, dockerfileNodeMajor, installTools, printLayers } from '../image/image-tools.mjs';
import { run, StepError } from '../setup/shell.mjs';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
/** Not localhost/edgecv:test, which `npm run test:image` builds for amd64. */
const IMAGE = 'localhost/edgecv:test-arm64';
const log = (msg) => console.log(`[test-arm64] ${msg}`);
const seconds = (ms) => `${Math.round(ms / 1000)} s`;

/** Runs test/arm64/ with vitest; returns whether every check passed. */
function checks() {
  const report = path.join(ROOT, '.cache', 'test-arm64', 'vitest.json');
  fs.mkdirSync(path.dirname(report), { recursive: true });
  fs.rmSync(report, { force: true });
  const vitest = path.join(ROOT, 'node_modules', 'vitest', 'vitest.mjs');
  const r = spawnSync(
    process.execPath,
    [vitest, 'run', '--config', 'vitest.arm64.config.ts', '--reporter=default', '--reporter=json', `--outputFile.json=${report}`],
    {
      cwd: ROOT,
      stdio: 'inherit',
      env: { ...process.env, EDGECV_ARM64_IMAGE: IMAGE },
    },
  );
  const result = fs.existsSync(report) ? JSON.parse(fs.readFileSync(report, 'utf8')) : null;
  const passed = result?.numPassedTests ?? 0;
  const failed = result ? result.numFailedTests + (result.numTotalTests === 0 ? 1 : 0) : 1;
  log(`${passed} passed, ${failed} failed`);
  return r.status === 0 && failed === 0;
}

function main() {
  const t0 = Date.now();
  installTools(log);
  if (!process.argv.includes('--skip-setup')) run(process.execPath, [path.join(ROOT, 'scripts', 'setup', 'setup.mjs'), '--test'], { log });
  ensureArm64Binfmt(log);
  const tBases = Date.now();
  const nodeMajor = dockerfileNodeMajor(ROOT);
  ensureBaseImages({ root: ROOT, nodeMajor, arch: 'amd64', only: [`node:${nodeMajor}-bookworm`], log });
  ensureBaseImages({ root: ROOT, nodeMajor, arch: 'arm64', only: ['debian:bookworm-slim'], log });
  log(`base images ready in ${seconds(Date.now() - tBases)}`);
  const tBuild = Date.now();
  buildImage({ root: ROOT, image: IMAGE, arch: 'arm64', log });
  log(`${IMAGE}: built in ${seconds(Date.now() - tBuild)} (addon cross-compiled, run stage's RUN emulated; cached steps skipped)`);
  printLayers(IMAGE, log);
  const tCheck = Date.now();
  const ok = checks();
  log(`checks under emulation took ${seconds(Date.now() - tCheck)}; npm run test:arm64 took ${seconds(Date.now() - t0)}`);
  process.exit(ok ? 0 : 1);
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  try {
    main();
  } catch (e) {
    console.error(`[test-arm64] FAILED: ${e instanceof StepError ? e.message : e.stack}`);
    process.exit(1);
  }
}
