#!/usr/bin/env node
// Set-up of the packages only the bench's "edgecv vs the Node alternatives" section needs: @u4/opencv4nodejs
// (built against the system OpenCV: 10 to 18 minutes on a busy 2-core machine) and sharp (prebuilt, for decoding in
// the onnxruntime-node and TF.js pipelines). They go into .cache/bench-deps with its own package.json, outside
// node_modules, so `npm ci` and `npm test` never build them. Checked, cached, skipped when up to date; a package
// that cannot be installed is recorded with the reason (.cache/bench-deps/status.json) and the bench goes on.
//
//   node scripts/dev/bench-deps.mjs            install or check (`npm run bench` runs it first)
//   node scripts/dev/bench-deps.mjs --force    reinstall and rebuild everything (another build of opencv4nodejs),
//                                          retrying what failed before
//
// Plain Node ESM without npm dependencies.

import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const DIR = path.join(ROOT, '.cache', 'bench-deps');
const STATUS = path.join(DIR, 'status.json');
const OPENCV_PKG = '@u4/opencv4nodejs';
const PACKAGE_JSON = {
  name: 'edgecv-bench-deps',
  private: true,
  description: 'Bench-only packages of edgecv (scripts/dev/bench-deps.mjs); never part of npm ci',
  dependencies: { [OPENCV_PKG]: '7.1.2', sharp: '0.34.5' },
};
// Debian's OpenCV (libopencv-dev, installed by scripts/setup/setup.mjs): opencv4nodejs links against it, no own build.
const OPENCV_ENV = {
  OPENCV4NODEJS_DISABLE_AUTOBUILD: '1',
  OPENCV_INCLUDE_DIR: '/usr/include/opencv4',
  OPENCV_LIB_DIR: '/usr/lib/x86_64-linux-gnu',
  OPENCV_BIN_DIR: '/usr/bin',
  // node-gyp builds against the headers of the running Node (Debian's nodejs ships them under /usr/include/node).
  npm_config_nodedir: path.resolve(path.dirname(process.execPath), '..'),
};

const argv = process.argv.slice(2);
const FORCE = argv.includes('--force');
if (argv.some((a) => a !== '--force')) {
  console.error('usage: node scripts/dev/bench-deps.mjs [--force]');
  process.exit(2);
}
const log = (msg) => console.log(`[bench-deps] ${msg}`);

/** Runs a command that may fail; says whether it did and what it printed (both streams). */
function tryCommand(cmd, args, options = {}) {
  const r = spawnSync(cmd, args, { encoding: 'utf8', maxBuffer: 64 << 20, ...options });
  return { ok: !r.error && r.status === 0, out: `${r.stdout ?? ''}${r.stderr ?? ''}`, error: r.error?.message };
}

/** The last meaningful line of a failed command's output: what goes into status.json and the bench table. */
function lastError(out) {
  const lines = out
    .split('\n')
    .map((l) => l.trim())
    .filter(Boolean);
  return (lines.reverse().find((l) => /error|not found|ENOTFOUND|ERR!/i.test(l)) ?? lines[0] ?? 'no output').slice(0, 300);
}

function systemOpenCvVersion() {
  const r = tryCommand('pkg-config', ['--modversion', 'opencv4']);
  return r.ok ? r.out.trim() : null;
}

/** What the installed set depends on: a change of any of these reinstalls and rebuilds. */
const KEY = createHash('sha256')
  .update(JSON.stringify([PACKAGE_JSON, process.version, process.versions.modules, systemOpenCvVersion()]))
  .digest('hex')
  .slice(0, 16);

function readStatus() {
  try {
    return JSON.parse(fs.readFileSync(STATUS, 'utf8'));
  } catch {
    return null;
  }
}

/** Loads a package from the cache folder in a child Node and returns its version line, or the error. */
function probe(name, expr) {
  const code = `const m = require(${JSON.stringify(name)}); console.log(${expr});`;
  const r = tryCommand(process.execPath, ['-e', code], { cwd: DIR });
  return r.ok ? { ok: true, version: r.out.trim().split('\n').pop() } : { ok: false, reason: `${name} does not load: ${lastError(r.out)}` };
}

const probes = {
  sharp: () => probe('sharp', 'm.versions.sharp + " (libvips " + m.versions.vips + ")"'),
  [OPENCV_PKG]: () =>
    probe(OPENCV_PKG, `"${PACKAGE_JSON.dependencies[OPENCV_PKG]} (OpenCV " + [m.version.major, m.version.minor, m.version.revision].join(".") + ")"`),
};

const previous = readStatus();
const addon = path.join(DIR, 'node_modules', OPENCV_PKG, 'build', 'Release', 'opencv4nodejs.node');
if (!FORCE && previous?.key === KEY) {
  // Up to date: check the packages still load (a failed one stays failed until --force: no 11-minute retry per bench).
  const packages = Object.fromEntries(Object.entries(previous.packages).map(([name, s]) => [name, s.ok ? probes[name]() : s]));
  if (Object.values(packages).every((s, i) => s.ok === Object.values(previous.packages)[i].ok)) {
    for (const [name, s] of Object.entries(packages))
      log(`${name}: ${s.ok ? `up to date, ${s.version}` : `not available (${s.reason}); --force retries`}`);
    process.exit(0);
  }
  log('an installed package no longer loads: reinstalling');
}

fs.mkdirSync(DIR, { recursive: true });
fs.writeFileSync(path.join(DIR, 'package.json'), `${JSON.stringify(PACKAGE_JSON, null, 2)}\n`);
const packages = {};
log(`npm install in ${path.relative(ROOT, DIR)} (bench only; not part of npm ci)`);
// --ignore-scripts: neither package needs its install script here (sharp's binary is an npm package of its own;
// opencv4nodejs has none and is built below).
const install = tryCommand('npm', ['install', '--ignore-scripts', '--no-audit', '--no-fund'], { cwd: DIR });
if (!install.ok) {
  const reason = `npm install failed: ${lastError(install.out + (install.error ?? ''))}`;
  for (const name of Object.keys(PACKAGE_JSON.dependencies)) packages[name] = { ok: false, reason };
} else {
  packages.sharp = probes.sharp();
  packages[OPENCV_PKG] = buildOpenCv();
}
fs.writeFileSync(STATUS, `${JSON.stringify({ key: KEY, written: new Date().toISOString(), packages }, null, 2)}\n`);
for (const [name, s] of Object.entries(packages)) log(`${name}: ${s.ok ? s.version : `not available: ${s.reason}`}`);

function buildOpenCv() {
  const opencv = systemOpenCvVersion();
  if (!opencv || !fs.existsSync(path.join(OPENCV_ENV.OPENCV_INCLUDE_DIR, 'opencv2', 'dnn.hpp'))) {
    return { ok: false, reason: 'system OpenCV not found (libopencv-dev: run `node scripts/setup/setup.mjs`)' };
  }
  // A binary built before (same package version: npm kept the folder) that loads against this OpenCV is kept.
  if (!FORCE && fs.existsSync(addon)) {
    const loaded = probes[OPENCV_PKG]();
    if (loaded.ok && loaded.version.endsWith(`(OpenCV ${opencv})`)) return loaded;
  }
  const pkgDir = path.join(DIR, 'node_modules', OPENCV_PKG);
  const logFile = path.join(DIR, 'opencv4nodejs-build.log');
  log(
    `building ${OPENCV_PKG} against the system OpenCV ${opencv} (10 to 18 minutes on a busy 2-core machine; follow it with tail -f ${path.relative(ROOT, logFile)})`,
  );
  const gyp = path.join(DIR, 'node_modules', 'node-gyp', 'bin', 'node-gyp.js');
  const t = Date.now();
  // Output straight into the log file, so a long build can be followed with tail -f.
  const fd = fs.openSync(logFile, 'w');
  const r = spawnSync(process.execPath, [gyp, 'rebuild', '--release', '--jobs', '2'], {
    cwd: pkgDir,
    env: { ...process.env, ...OPENCV_ENV },
    stdio: ['ignore', fd, fd],
  });
  fs.closeSync(fd);
  if (r.error || r.status !== 0) {
    return { ok: false, reason: `node-gyp build failed: ${lastError(fs.readFileSync(logFile, 'utf8'))} (see ${path.relative(ROOT, logFile)})` };
  }
  log(`built in ${((Date.now() - t) / 60000).toFixed(1)} min`);
  return probes[OPENCV_PKG]();
}
