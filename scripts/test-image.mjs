#!/usr/bin/env node
// Builds the server's container image from deploy/Dockerfile and checks it from outside: `npm run test:image`.
//
//   1. installs buildah and mmdebstrap (Debian's) when they are missing, and sets this checkout up (--test: the
//      test photos, and the checkout's own server the image's answers are compared with);
//   2. makes the base images the Dockerfile names (scripts/container-bases.mjs: cached, made again only when their
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
import { capture, run, StepError } from './shell.mjs';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const IMAGE = 'localhost/edgecv:test';
/** The image's size limit (issue 36): the server, its models and runtime libraries on Debian slim. */
const MAX_IMAGE_MB = 700;
const log = (msg) => console.log(`[test-image] ${msg}`);
const seconds = (ms) => `${Math.round(ms / 1000)} s`;

function installTools() {
  const r = spawnSync('dpkg-query', ['-W', '-f=${Package} ${db:Status-Status}\n', 'buildah', 'mmdebstrap'], { encoding: 'utf8' });
  const installed = new Set((r.stdout ?? '').split('\n').filter((l) => l.endsWith(' installed')).map((l) => l.split(' ')[0]));
  const missing = ['buildah', 'mmdebstrap'].filter((p) => !installed.has(p));
  if (!missing.length) return log('buildah and mmdebstrap present');
  if (process.getuid?.() !== 0) throw new StepError(`missing ${missing.join(', ')}: sudo apt-get install ${missing.join(' ')}`);
  run('apt-get', ['update', '-q'], { log });
  run('apt-get', ['install', '-y', '-q', '--no-install-recommends', ...missing], { log, env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' } });
}

/** The CA bundle this host's npm and Node trust (these machines' TLS interception included), if any. */
function hostCaBundle() {
  const candidates = [process.env.NODE_EXTRA_CA_CERTS, spawnSync('npm', ['config', 'get', 'cafile'], { encoding: 'utf8' }).stdout?.trim(), '/etc/ssl/certs/ca-certificates.crt'];
  return candidates.find((f) => f && f !== 'null' && fs.existsSync(f)) ?? null;
}

/** The image's layers (size, the step that made it) from buildah's storage, and their total in bytes. */
function layers(image) {
  const inspect = JSON.parse(capture('buildah', ['inspect', '--type', 'image', image]));
  const history = (inspect.Docker?.history ?? inspect.OCIv1?.history ?? []).filter((h) => !h.empty_layer);
  const diffIds = inspect.Docker?.rootfs?.diff_ids ?? inspect.OCIv1?.rootfs?.diff_ids ?? [];
  const { store } = JSON.parse(capture('buildah', ['info']));
  const layersFile = path.join(store.GraphRoot, `${store.GraphDriverName}-layers`, 'layers.json');
  const sizes = new Map(JSON.parse(fs.readFileSync(layersFile, 'utf8')).map((l) => [l['diff-digest'], l['diff-size']]));
  const rows = diffIds.map((d, i) => ({ bytes: sizes.get(d) ?? NaN, step: (i === 0 ? `base image (${history[i]?.created_by ?? '?'})` : history[i]?.created_by ?? '?').replace(/\s+/g, ' ').replace(/^\/bin\/sh -c (#\(nop\) )?/, '').slice(0, 110) }));
  return { rows, total: rows.reduce((s, r) => s + r.bytes, 0) };
}

function build(nodeMajor) {
  const ca = hostCaBundle();
  const t0 = Date.now();
  const args = ['bud', '--isolation', 'chroot', '--format', 'docker', '--pull=never', '--layers', '-f', 'deploy/Dockerfile', '-t', IMAGE];
  if (ca) args.push('--secret', `id=ca,src=${ca}`);
  log(`building ${IMAGE} on node:${nodeMajor}-bookworm${ca ? ` (build secret ca: ${ca})` : ''}`);
  run('buildah', [...args, '.'], { cwd: ROOT, log });
  const buildMs = Date.now() - t0;
  const { rows, total } = layers(IMAGE);
  log(`${IMAGE}: built in ${seconds(buildMs)}; layers:`);
  for (const r of rows) console.log(`  ${(r.bytes / 1e6).toFixed(1).padStart(7)} MB  ${r.step}`);
  console.log(`  ${(total / 1e6).toFixed(1).padStart(7)} MB  in all (limit ${MAX_IMAGE_MB} MB)`);
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
  const r = spawnSync(process.execPath, [vitest, 'run', '--config', 'vitest.image.config.ts', '--reporter=default', '--reporter=json', `--outputFile.json=${report}`], {
    cwd: ROOT,
    stdio: 'inherit',
    env: { ...process.env, EDGECV_TEST_IMAGE: IMAGE },
  });
  const result = fs.existsSync(report) ? JSON.parse(fs.readFileSync(report, 'utf8')) : null;
  const passed = result?.numPassedTests ?? 0;
  const failed = result ? result.numFailedTests + (result.numTotalTests === 0 ? 1 : 0) : 1;
  return { passed, failed: r.status === 0 ? failed : Math.max(failed, 1) };
}

function main() {
  const t0 = Date.now();
  const argv = process.argv.slice(2);
  installTools();
  if (!argv.includes('--skip-setup')) run(process.execPath, [path.join(ROOT, 'scripts', 'setup.mjs'), '--test'], { log });
  const dockerfile = fs.readFileSync(path.join(ROOT, 'deploy', 'Dockerfile'), 'utf8');
  const nodeMajor = /^FROM\s+node:(\d+)-bookworm\b/m.exec(dockerfile)?.[1];
  if (!nodeMajor) throw new StepError('deploy/Dockerfile names no node:<major>-bookworm base');
  const tBases = Date.now();
  ensureBaseImages({ root: ROOT, nodeMajor, log });
  log(`base images ready in ${seconds(Date.now() - tBases)}`);
  // the size is one check among the others: the image is still started and checked when it is too large
  const small = build(nodeMajor);
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
