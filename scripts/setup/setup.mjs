#!/usr/bin/env node
// edgecv set-up: brings a checkout from nothing to runnable, and does nothing (quickly) when all is there.
//
//   node scripts/setup/setup.mjs                 system packages, npm deps, onnxruntime headers, native addon, TypeScript, models
//   node scripts/setup/setup.mjs --test          ... and the test photos (test/data), a software Vulkan device
//   node scripts/setup/setup.mjs --bench         same as --test (the benchmark uses the test photos)
//   node scripts/setup/setup.mjs --fuzz          ... and clang with libFuzzer, for the native fuzz target (npm run fuzz:native)
//   node scripts/setup/setup.mjs --force-build   rebuild native addon, TypeScript and models even if up to date
//
// Plain Node ESM without npm dependencies: it runs before `npm ci`.

import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { quote, run as runCommand, StepError } from './shell.mjs';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const KNOWN = new Set(['--test', '--bench', '--fuzz', '--force-build', '--help']);
const argv = process.argv.slice(2);
const unknown = argv.filter((a) => !KNOWN.has(a));
if (unknown.length || argv.includes('--help')) {
  (unknown.length ? console.error : console.log)(
    'usage: node scripts/setup/setup.mjs [--test] [--bench] [--fuzz] [--force-build]' +
      (unknown.length ? `\nunknown argument: ${unknown.join(' ')}` : ''),
  );
  process.exit(unknown.length ? 2 : 0);
}
const WANT_TEST = argv.includes('--test') || argv.includes('--bench');
const WANT_FUZZ = argv.includes('--fuzz');
const FORCE = argv.includes('--force-build');

const log = (msg) => console.log(`[setup] ${msg}`);
const rel = (p) => path.relative(ROOT, p) || '.';

function fail(message) {
  console.error(`[setup] FAILED: ${message}`);
  process.exit(1);
}

/** Runs a command in the repo root with inherited stdio; exits non-zero with the exact command on failure. */
function run(cmd, args, env) {
  const envPrefix = env
    ? Object.entries(env)
        .map(([k, v]) => `${k}=${quote(v)} `)
        .join('')
    : '';
  try {
    runCommand(cmd, args, {
      cwd: ROOT,
      env: env ? { ...process.env, ...env } : process.env,
      log,
      label: `${envPrefix}${[cmd, ...args].map(quote).join(' ')}`,
    });
  } catch (e) {
    fail(e.message);
  }
}

/** Runs a step of set-up that lives in another script; its StepError is reported as set-up's failure. */
async function step(fn) {
  try {
    return await fn();
  } catch (e) {
    fail(e instanceof StepError ? e.message : e.stack);
  }
}

/** True when the command runs and exits 0 (output discarded). */
function ok(cmd, args) {
  const r = spawnSync(cmd, args, { stdio: 'ignore' });
  return !r.error && r.status === 0;
}

const has = (tool) => ok('sh', ['-c', `command -v ${quote(tool)}`]);

function mtime(p) {
  try {
    return fs.statSync(p).mtimeMs;
  } catch {
    return -1;
  }
}

/** Files under dir (recursively), skipping node_modules and dot-directories. */
function walk(dir, filter = () => true, out = []) {
  let entries;
  try {
    entries = fs.readdirSync(dir, { withFileTypes: true });
  } catch {
    return out;
  }
  for (const e of entries) {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) {
      if (e.name !== 'node_modules' && !e.name.startsWith('.')) walk(p, filter, out);
    } else if (e.isFile() && filter(p)) out.push(p);
  }
  return out;
}

const newest = (files) => files.reduce((m, f) => Math.max(m, mtime(f)), -1);

function touch(file) {
  const now = new Date();
  fs.utimesSync(file, now, now);
}

// ------------------------------------------------------------------ a. system packages
function systemPackages() {
  const debInstalled = (pkgs) => {
    if (!has('dpkg-query')) return new Set(pkgs); // not Debian: trust the tool checks alone
    const r = spawnSync('dpkg-query', ['-W', '-f=${Package} ${db:Status-Status}\n', ...pkgs], { encoding: 'utf8' });
    return new Set(
      (r.stdout ?? '')
        .split('\n')
        .map((l) => l.split(' '))
        .filter(([, st]) => st === 'installed')
        .map(([p]) => p.replace(/:.*/, '')),
    );
  };
  const missing = [];
  const installed = debInstalled(['libopencv-contrib-dev']);
  if (!ok('pkg-config', ['--exists', 'opencv4']) || !installed.has('libopencv-contrib-dev')) {
    missing.push('libopencv-dev', 'libopencv-contrib-dev', 'pkg-config');
  }
  // The addon's image codecs are libjpeg and libpng directly (native/image/jpeg_decoder.h, png_decoder.h), not
  // OpenCV's imgcodecs; OpenCV's packages pull both in anyway.
  if (!ok('pkg-config', ['--exists', 'libjpeg'])) missing.push('libjpeg-dev');
  if (!ok('pkg-config', ['--exists', 'libpng'])) missing.push('libpng-dev');
  // The Vulkan headers name the GPU adapter (native/runtime/gpu_adapter.h); the package brings the loader too.
  if (!ok('pkg-config', ['--exists', 'vulkan'])) missing.push('libvulkan-dev');
  if (!has('cmake')) missing.push('cmake');
  if (!has('g++')) missing.push('g++');
  if (!has('make')) missing.push('make');
  if (WANT_TEST) {
    if (!has('bzip2')) missing.push('bzip2'); // the dlib source tarball is .tar.bz2
    if (!has('apt-get') || !has('dpkg-deb')) fail('test photos come from Debian packages: apt-get and dpkg-deb are needed');
  }
  // Servers the tests start on loopback themselves: Prometheus scrapes a running edgecv
  // (test/metrics-server.test.ts), Redis carries the fleet gallery (test/gallery-fleet.test.ts).
  // Their recommends (node-exporter, ipmitool, ...) are not needed. Chromium (/usr/bin/chromium) is the real
  // browser test/demo-page.test.ts drives with playwright-core.
  // InfluxDB 1.x (influxd) is the fleet metrics platform's database (test/metrics-platform.test.ts); HAProxy is the
  // load balancer in front of several servers (test/fleet-balancer.test.ts). clang-format checks the C++ layout
  // (test/formatting.test.ts). Each: the command, and its package.
  const testToolPackages = {
    prometheus: 'prometheus',
    'redis-server': 'redis-server',
    chromium: 'chromium',
    influxd: 'influxdb',
    haproxy: 'haproxy',
    'clang-format': 'clang-format',
  };
  const testTools = Object.keys(testToolPackages);
  const missingTestTools = WANT_TEST ? testTools.filter((t) => !has(t)).map((t) => testToolPackages[t]) : [];
  // The native fuzz target (native/fuzz/) is built with clang and linked with its libFuzzer runtime.
  if (WANT_FUZZ) {
    const fuzzInstalled = debInstalled(['clang-14', 'libclang-rt-14-dev']);
    missingTestTools.push(...['clang-14', 'libclang-rt-14-dev'].filter((p) => !fuzzInstalled.has(p)));
  }
  if (missing.length === 0 && missingTestTools.length === 0) {
    log(
      `system packages: OpenCV 4 (with contrib), cmake, g++${WANT_TEST ? `, ${testTools.join(', ')}` : ''}${WANT_FUZZ ? ', clang 14 with libFuzzer' : ''} present`,
    );
    return;
  }
  const installCmds = [
    ...(missing.length ? [['apt-get', 'install', '-y', ...missing]] : []),
    ...(missingTestTools.length ? [['apt-get', 'install', '-y', '--no-install-recommends', ...missingTestTools]] : []),
  ];
  if (process.getuid?.() !== 0) {
    console.error(`[setup] FAILED: missing system packages; install them with:\n${installCmds.map((c) => `  sudo ${c.join(' ')}`).join('\n')}`);
    process.exit(1);
  }
  log(`system packages: installing ${[...missing, ...missingTestTools].join(' ')}`);
  run('apt-get', ['update']);
  for (const cmd of installCmds) run('apt-get', cmd.slice(1), { DEBIAN_FRONTEND: 'noninteractive' });
}

// ------------------------------------------------------------------ b. npm dependencies
function npmDeps() {
  const lock = path.join(ROOT, 'package-lock.json');
  const installed = path.join(ROOT, 'node_modules', '.package-lock.json');
  if (fs.existsSync(path.join(ROOT, 'node_modules')) && mtime(installed) >= mtime(lock)) {
    log('npm dependencies: up to date');
    return;
  }
  log('npm dependencies: installing with npm ci');
  run('npm', ['ci'], { ONNXRUNTIME_NODE_INSTALL: 'skip' });
}

// ------------------------------------------------------------------ c. onnxruntime headers
async function onnxRuntimeHeaders() {
  const { ensureOnnxRuntimeHeaders } = await import('./onnxruntime.mjs');
  return step(() => ensureOnnxRuntimeHeaders({ root: ROOT }));
}

// ------------------------------------------------------------------ d. native addon
function nativeAddon(ortInclude) {
  const cmakeLists = path.join(ROOT, 'CMakeLists.txt');
  const addon = path.join(ROOT, 'build', 'Release', 'edgecv.node');
  const inputs = [cmakeLists, ...walk(path.join(ROOT, 'native')), ...walk(ortInclude)];
  if (!FORCE && mtime(addon) >= newest(inputs)) {
    log('native addon: build/Release/edgecv.node up to date');
    return;
  }
  log(`native addon: ${fs.existsSync(addon) ? 'rebuilding' : 'building'} build/Release/edgecv.node`);
  const env = process.env.CMAKE_BUILD_PARALLEL_LEVEL
    ? undefined
    : { CMAKE_BUILD_PARALLEL_LEVEL: String(os.availableParallelism?.() ?? os.cpus().length) };
  run('npx', ['cmake-js', 'compile', '--out', 'build'], env);
  if (!fs.existsSync(addon)) fail(`npx cmake-js compile --out build succeeded but ${rel(addon)} is missing`);
  touch(addon); // cmake may not relink when only non-source files changed
}

// ------------------------------------------------------------------ e. TypeScript
function typescript() {
  const stamp = path.join(ROOT, 'dist', '.tsc-stamp');
  // dist/ holds src and models; with --test (or --bench) also bench, tools and testkit (tsconfig.bench.json: the
  // benches, the tools that derive shipped values, the harness they share with the tests)
  const project = WANT_TEST ? 'tsconfig.bench.json' : 'tsconfig.json';
  const inputs = (WANT_TEST ? ['src', 'models', 'bench', 'tools', 'testkit'] : ['src', 'models'])
    .flatMap((d) => walk(path.join(ROOT, d), (f) => f.endsWith('.ts')))
    .concat([path.join(ROOT, 'tsconfig.json'), path.join(ROOT, project)]);
  const list = inputs.map(rel).sort().join('\n');
  let stampList = null;
  try {
    stampList = fs.readFileSync(stamp, 'utf8');
  } catch {
    /* never built */
  }
  // A stamp of the larger build covers the smaller: `npm start` after `npm test` compiles nothing again.
  const covered = stampList !== null && (stampList === list || (!WANT_TEST && list.split('\n').every((f) => stampList.split('\n').includes(f))));
  if (!FORCE && covered && mtime(stamp) >= newest(inputs)) {
    log('TypeScript: dist up to date');
    return;
  }
  log(`TypeScript: compiling to dist/ (${project})`);
  run('npx', ['tsc', '-p', project]);
  fs.mkdirSync(path.dirname(stamp), { recursive: true });
  fs.writeFileSync(stamp, list);
}

// ------------------------------------------------------------------ f. model packages that are not npm dependencies
async function modelPackages() {
  const { ensureModelPackages } = await import('./model-packages.mjs');
  await step(() => ensureModelPackages({ root: ROOT }));
}

// ------------------------------------------------------------------ g. models
/**
 * Every file the converted manifest lists is there with its sha256 (`file`, `ortFile`, `int8.ortFile`): a damaged
 * one, or a manifest from before `ortSha256`, is built again (the engine refuses to load it: model-integrity.ts).
 */
function modelFilesIntact(manifestFile) {
  const dir = path.dirname(manifestFile);
  // what the engine verified already, by size and mtime (src/engine/model-integrity.ts): not hashed again
  let verified = {};
  try {
    verified = JSON.parse(fs.readFileSync(path.join(dir, '.verified-sha256.json'), 'utf8'));
  } catch {
    /* none yet */
  }
  const intact = (file, want) => {
    const st = fs.statSync(path.join(dir, file));
    const known = verified[file];
    if (known && known.size === st.size && known.mtimeMs === st.mtimeMs && known.sha256 === want) return true;
    return (
      createHash('sha256')
        .update(fs.readFileSync(path.join(dir, file)))
        .digest('hex') === want
    );
  };
  try {
    const { models } = JSON.parse(fs.readFileSync(manifestFile, 'utf8'));
    return Object.values(models).every(
      (m) =>
        intact(m.file, m.sha256) &&
        typeof m.ortSha256 === 'string' &&
        intact(m.ortFile, m.ortSha256) &&
        (!m.int8 || intact(m.int8.ortFile, m.int8.sha256)),
    );
  } catch {
    return false;
  }
}

function models() {
  const builder = path.join(ROOT, 'dist', 'models', 'build-models.js');
  const out = path.join(ROOT, 'models', 'onnx', 'manifest.json');
  const stamp = path.join(ROOT, 'models', 'onnx', '.setup-stamp');
  // content hash, not mtimes: tsc rewrites every file in dist/ on each compile
  const h = createHash('sha256');
  // models/calibration: the int8 files' activation ranges (docs/int8.md)
  const sources = [path.join(ROOT, 'models', 'manifest.json'), ...walk(path.join(ROOT, 'models', 'calibration')).sort()];
  for (const f of [...sources, ...walk(path.join(ROOT, 'dist', 'models')).sort()]) {
    h.update(rel(f) + '\0');
    try {
      h.update(fs.readFileSync(f));
    } catch {
      h.update('missing');
    }
  }
  const want = h.digest('hex');
  let have = null;
  try {
    have = fs.readFileSync(stamp, 'utf8');
  } catch {
    /* never built */
  }
  if (!FORCE && fs.existsSync(out) && have === want && mtime(out) >= mtime(path.join(ROOT, 'models', 'manifest.json')) && modelFilesIntact(out)) {
    log('models: models/onnx up to date');
    return;
  }
  log('models: building models/onnx');
  run('node', [rel(builder)]);
  if (!fs.existsSync(out)) fail(`node ${rel(builder)} succeeded but ${rel(out)} is missing`);
  touch(out);
  fs.writeFileSync(stamp, want);
}

// ------------------------------------------------------------------ h. test photos
async function testPhotos() {
  const { ensureTestData } = await import('./test-data.mjs');
  await step(() => ensureTestData({ root: ROOT }));
}

// ------------------------------------------------------------------ i. a software Vulkan device (the GPU tests)
async function softwareVulkan() {
  const { ensureSoftwareVulkan } = await import('./software-vulkan.mjs');
  await step(() => ensureSoftwareVulkan({ root: ROOT }));
}

systemPackages();
npmDeps();
nativeAddon(await onnxRuntimeHeaders());
typescript();
await modelPackages();
models();
if (WANT_TEST) await testPhotos();
if (WANT_TEST) await softwareVulkan();
