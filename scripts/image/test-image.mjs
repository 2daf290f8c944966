#!/usr/bin/env node
// Builds the server's container image from deploy/Dockerfile and checks it from outside: `npm run test:image`.
//
//   1. installs buildah and mmdebstrap (Debian's) when they are missing, and sets this checkout up (--test: the
//      test photos, and the checkout's own server the image's answers are compared with);
//   2. makes the base images the Dockerfile names (scripts/image/container-bases.mjs: cached, made again only when their
//      inputs change);
//   3. `buildah bud --isolation chroot` with this host's CA bundle as the build secret `ca` (these machines
//      intercept TLS; it is mounted read-only during the build and never stored in the image); prints the image's
//      size by layer; a size above MAX_IMAGE_MB counts as a failed check;
//   4. runs test/image/ (vitest.image.config.ts): the image started with buildah, its answers on loopback.
//
// `--skip-setup` skips step 1's set-up. The image stays in buildah's storage as localhost/edgecv:test, with its
// build cache (--layers), so a run with unchanged sources skips the build. Needs root (buildah, mmdebstrap).
//
// Plain Node ESM without npm dependencies.

import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { ensureBaseImages } from './container-bases.mjs';
import { buildImage, dockerfileNodeMajor, installTools, printLayers } from './image-tools.mjs';
import { run, StepError } from '../setup/shell.mjs';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const IMAGE = 'localhost/edgecv:test';
/** The image's size limit (issue 36): the server, its models and runtime libraries on Debian slim. */
const MAX_IMAGE_MB = 700;
const log = (msg) => console.log(`[test-image] ${msg}`);
const seconds = (ms) => `${Math.round(ms / 1000)} s`;

function build() {
  const t0 = Date.now();
  buildImage({ root: ROOT, image: IMAGE, log });
  log(`${IMAGE}: built in ${seconds(Date.now() - t0)}`);
  const total = printLayers(IMAGE, log);
  const small = total <= MAX_IMAGE_MB * 1e6;
  log(`${small ? 'passed' : 'FAILED'}: the image is ${(total / 1e6).toFixed(1)} MB, limit ${MAX_IMAGE_MB} MB`);
  return small;
}

/** Runs test/image/ with vitest; prints and returns its counts. */
function checks() {
  const report = path.join(ROOT, '.cache', 'test-image', 'vitest.json');
  fs.mkdirSync(path.dirname(report), { recursive: true });
  fs.rmSync(report, { force: true });
  const vitest = path.join(ROOT, 'node_modules', 'vitest', 'vitest.mjs');
  const r = spawnSync(
    process.execPath,
    [vitest, 'run', '--config', 'vitest.image.config.ts', '--reporter=default', '--reporter=json', `--outputFile.json=${report}`],
    {
      cwd: ROOT,
      stdio: 'inherit',
      env: { ...process.env, EDGECV_TEST_IMAGE: IMAGE },
    },
  );
  const result = fs.existsSync(report) ? JSON.parse(fs.readFileSync(report, 'utf8')) : null;
  const passed = result?.numPassedTests ?? 0;
  const failed = result ? result.numFailedTests + (result.numTotalTests === 0 ? 1 : 0) : 1;
  return { passed, failed: r.status === 0 ? failed : Math.max(failed, 1) };
}

function main() {
  const t0 = Date.now();
  const argv = process.argv.slice(2);
  installTools(log);
  if (!argv.includes('--skip-setup')) run(process.execPath, [path.join(ROOT, 'scripts', 'setup', 'setup.mjs'), '--test'], { log });
  const tBases = Date.now();
  ensureBaseImages({ root: ROOT, nodeMajor: dockerfileNodeMajor(ROOT), log });
  log(`base images ready in ${seconds(Date.now() - tBases)}`);
  // the size is one check among the others: the image is still started and checked when it is too large
  const small = build();
  const counts = checks();
  const passed = counts.passed + (small ? 1 : 0);
  const failed = counts.failed + (small ? 0 : 1);
  log(`${passed} passed, ${failed} failed; npm run test:image took ${seconds(Date.now() - t0)}`);
  process.exit(failed === 0 ? 0 : 1);
}

try {
  main();
} catch (e) {
  console.error(`[test-image] FAILED: ${e instanceof StepError ? e.message : e.stack}`);
  process.exit(1);
}
