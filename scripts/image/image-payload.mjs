#!/usr/bin/env node
// What the runtime image carries, assembled from a checkout that set-up has built (deploy/Dockerfile's build
// stage runs it): `node scripts/image/image-payload.mjs <dest>` writes <dest>/app, the server's files and nothing else:
//
//   package.json, dist/src (the server's compiled TypeScript), build/Release/edgecv.node, web/;
//   node_modules: the packages the server's dependencies reach (package-lock.json), less the ones only a build
//     uses (BUILD_ONLY), less the native modules' sources and their binaries for other platforms than this one;
//   models/onnx: the models a server's configuration can select (serverModels), in every format the runtime and
//     precision options may load, with a manifest that lists only them (a file two formats share, once), and the
//     record of their sha256 check (recordVerified);
//   <dest>/node: the Node binary running this script, without its symbol table (18 MB; dynamic symbols stay).
//
// For another CPU (scripts/arm64/test-arm64.mjs): `--arch arm64 --addon <edgecv.node> --node <dir>` takes that addon
// build and that official Node build (bin/node, include/node) instead, and keeps the binaries of that CPU; the
// TypeScript output and the models are the same bytes on every CPU.
//
// Plain Node ESM without npm dependencies.

import { createHash } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const log = (msg) => console.log(`[image-payload] ${msg}`);

/** What the payload is for: the CPU, the addon, the Node binary and the Node-API version it supports. */
function targetOf(argv) {
  const opt = (name) => {
    const i = argv.indexOf(`--${name}`);
    return i < 0 ? undefined : argv[i + 1];
  };
  const nodeDir = opt('node');
  if (!nodeDir)
    return {
      arch: process.arch,
      addon: path.join(ROOT, 'build', 'Release', 'edgecv.node'),
      node: process.execPath,
      napi: Number(process.versions.napi),
      strip: 'strip',
    };
  const version = fs.readFileSync(path.join(nodeDir, 'include', 'node', 'node_version.h'), 'utf8');
  const napi = Number(/#define\s+NODE_API_SUPPORTED_VERSION_MAX\s+(\d+)/.exec(version)?.[1]);
  const arch = opt('arch') ?? process.arch;
  const strip = arch === process.arch ? 'strip' : `${{ arm64: 'aarch64', x64: 'x86_64' }[arch]}-linux-gnu-strip`;
  return {
    arch,
    addon: path.resolve(opt('addon') ?? path.join(ROOT, 'build', 'Release', 'edgecv.node')),
    node: path.join(nodeDir, 'bin', 'node'),
    napi,
    strip,
  };
}
const TARGET = targetOf(process.argv.slice(3));

/**
 * Dependencies the running server never loads: cmake-js and node-addon-api build the addon (they are ordinary
 * dependencies so that `npm install` builds it); better-sqlite3-node20 is the SQLite binding of Node 20 alone
 * (src/sqlite.ts), and the image runs a newer Node.
 */
const BUILD_ONLY = new Set(['cmake-js', 'node-addon-api', ...(TARGET.napi >= 10 ? ['better-sqlite3-node20'] : [])]);

/** The lock entry path a package at `from` gets for `name`, by Node's lookup (nearest node_modules upwards). */
function resolveLocked(packages, from, name) {
  let base = from;
  for (;;) {
    const candidate = `${base ? `${base}/` : ''}node_modules/${name}`;
    if (packages[candidate]) return candidate;
    if (!base) return null;
    const i = base.lastIndexOf('/node_modules/');
    base = i < 0 ? '' : base.slice(0, i);
  }
}

/** Lock paths (node_modules/...) of every package the server's dependencies reach. */
function runtimePackages(lock, pkg) {
  const reached = new Set();
  const queue = Object.keys(pkg.dependencies ?? {})
    .filter((n) => !BUILD_ONLY.has(n))
    .map((n) => resolveLocked(lock.packages, '', n));
  while (queue.length) {
    const at = queue.pop();
    if (!at || reached.has(at)) continue;
    reached.add(at);
    const entry = lock.packages[at];
    for (const name of Object.keys({ ...entry.dependencies, ...entry.optionalDependencies, ...entry.peerDependencies })) {
      if (BUILD_ONLY.has(name)) continue; // usearch lists node-addon-api: its headers, for compiling
      const dep = resolveLocked(lock.packages, at, name);
      if (dep) queue.push(dep);
      else if (!entry.optionalDependencies?.[name] && !entry.peerDependencies?.[name])
        throw new Error(`${at} needs ${name}, which package-lock.json lacks`);
    }
  }
  return reached;
}

function copyNodeModules(dest) {
  const lock = JSON.parse(fs.readFileSync(path.join(ROOT, 'package-lock.json'), 'utf8'));
  const pkg = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8'));
  const keep = runtimePackages(lock, pkg);
  for (const at of [...keep].sort()) {
    const from = path.join(ROOT, at);
    if (!fs.existsSync(from)) continue; // an optional dependency for another platform
    // nested node_modules are entries of their own: copied when reached
    fs.cpSync(from, path.join(dest, at), { recursive: true, filter: (src) => path.relative(from, src).split(path.sep)[0] !== 'node_modules' });
  }
  trimNativeModules(path.join(dest, 'node_modules'));
  log(`node_modules: ${keep.size} packages (left out: ${[...BUILD_ONLY].join(', ')} and the dev dependencies)`);
}

/** Native modules' C/C++ sources, which their prebuilt binaries make unneeded at run time. */
const NATIVE_SOURCES = {
  'better-sqlite3': ['deps', 'src', 'build'],
  usearch: ['c', 'cpp', 'include', 'numkong', 'cmake', 'binding.gyp', 'javascript/lib.cpp'],
};

/** Leaves each native module its binary for the target platform only, and no sources. */
function trimNativeModules(modules) {
  const target = `${process.platform}-${TARGET.arch}`;
  // onnxruntime-node: bin/napi-v*/<platform>/<arch> (src/engine/onnxruntime-library.ts loads linux/<arch>)
  const ortBin = path.join(modules, 'onnxruntime-node', 'bin');
  for (const napi of fs.existsSync(ortBin) ? fs.readdirSync(ortBin) : []) {
    for (const platform of fs.readdirSync(path.join(ortBin, napi))) {
      const dir = path.join(ortBin, napi, platform);
      if (platform !== process.platform) fs.rmSync(dir, { recursive: true });
      else for (const arch of fs.readdirSync(dir)) if (arch !== TARGET.arch) fs.rmSync(path.join(dir, arch), { recursive: true });
    }
  }
  // prebuilds/<platform>-<arch>[.node] (better-sqlite3, usearch); linuxmusl-* and darwin-arm64+x64 are others
  for (const name of fs.readdirSync(modules)) {
    const prebuilds = path.join(modules, name, 'prebuilds');
    if (!fs.existsSync(prebuilds)) continue;
    for (const p of fs.readdirSync(prebuilds)) if (p !== target && p !== `${target}.node`) fs.rmSync(path.join(prebuilds, p), { recursive: true });
  }
  for (const [name, paths] of Object.entries(NATIVE_SOURCES))
    for (const p of paths) fs.rmSync(path.join(modules, name, p), { recursive: true, force: true });
  // TypeScript sources and declarations, source maps and Markdown: read by editors and compilers, never by Node
  for (const f of fs.readdirSync(modules, { recursive: true })) {
    if (/\.(m|c)?ts$|\.map$|\.md$/i.test(f) && fs.lstatSync(path.join(modules, f)).isFile()) fs.rmSync(path.join(modules, f));
  }
}

/** Names of the models `edgecv serve` can load: the fixed face and pose models and every selectable object model. */
async function serverModels() {
  const { ENGINE_DEFAULTS } = await import(pathToFileURL(path.join(ROOT, 'dist', 'src', 'engine', 'limits.js')).href);
  const { OBJECT_DETECTOR_MODELS } = await import(pathToFileURL(path.join(ROOT, 'dist', 'src', 'engine', 'object-model.js')).href);
  // the face detector, embedder and pose model are no server option (src/config.ts): the engine's defaults;
  // --object-model and --pose-person-model choose among OBJECT_DETECTOR_MODELS
  return new Set([ENGINE_DEFAULTS.faceDetector, ENGINE_DEFAULTS.faceEmbedder, ENGINE_DEFAULTS.poseModel, ...OBJECT_DETECTOR_MODELS]);
}

/**
 * The server checks each model file against the manifest's sha256 at start, hashing it once per size and mtime
 * (src/engine/model-integrity.ts); in the image it cannot write that record beside the files, so without one it
 * would hash them at every start (seconds under emulation). The record is written here by the same code, with each
 * file's mtime cut to whole seconds first, as image layers keep it, so that the image's files match it.
 */
async function recordVerified(dir, models, files) {
  const { verifyModelFile } = await import(pathToFileURL(path.join(ROOT, 'dist', 'src', 'engine', 'model-integrity.js')).href);
  for (const file of files) {
    const f = path.join(dir, file);
    fs.utimesSync(f, new Date(), Math.floor(fs.statSync(f).mtimeMs / 1000));
    await verifyModelFile(path.join(dir, 'manifest.json'), models, f);
  }
}

async function copyModels(dest) {
  const from = path.join(ROOT, 'models', 'onnx');
  const manifest = JSON.parse(fs.readFileSync(path.join(from, 'manifest.json'), 'utf8'));
  const wanted = await serverModels();
  const missing = [...wanted].filter((m) => !manifest.models[m]);
  if (missing.length) throw new Error(`models/onnx/manifest.json lacks ${missing.join(', ')}: run node scripts/setup/setup.mjs`);
  const models = Object.fromEntries(Object.entries(manifest.models).filter(([name]) => wanted.has(name)));
  const out = path.join(dest, 'models', 'onnx');
  fs.mkdirSync(out, { recursive: true });
  // where a model's OpenCV and onnxruntime files are the same bytes (yolov5s-320/416/512), one file serves both
  const byDigest = new Map();
  const once = (file) => {
    const digest = createHash('sha256')
      .update(fs.readFileSync(path.join(from, file)))
      .digest('hex');
    if (!byDigest.has(digest)) {
      byDigest.set(digest, file);
      fs.cpSync(path.join(from, file), path.join(out, file));
    }
    return byDigest.get(digest);
  };
  for (const m of Object.values(models)) {
    m.file = once(m.file);
    m.ortFile = once(m.ortFile);
    if (m.int8) m.int8.ortFile = once(m.int8.ortFile);
  }
  fs.writeFileSync(path.join(out, 'manifest.json'), JSON.stringify({ ...manifest, models }, null, 2) + '\n');
  await recordVerified(out, models, [...byDigest.values()]);
  const dropped = Object.keys(manifest.models).filter((m) => !wanted.has(m));
  log(`models: ${Object.keys(models).length} (${byDigest.size} files); left out ${dropped.join(', ') || 'none'}`);
}

async function main() {
  const target = process.argv[2];
  if (!target) {
    console.error('usage: node scripts/image/image-payload.mjs <dest> [--arch arm64 --addon <edgecv.node> --node <dir>]');
    process.exit(2);
  }
  const dest = path.resolve(target, 'app');
  fs.rmSync(dest, { recursive: true, force: true });
  fs.mkdirSync(dest, { recursive: true });
  fs.copyFileSync(path.join(ROOT, 'package.json'), path.join(dest, 'package.json'));
  // the server's code only (no bench, models converter or test support); declarations and source maps stay out
  fs.cpSync(path.join(ROOT, 'dist', 'src'), path.join(dest, 'dist', 'src'), { recursive: true, filter: (f) => !/\.d\.ts$|\.map$/.test(f) });
  fs.mkdirSync(path.join(dest, 'build', 'Release'), { recursive: true });
  // symbol tables are for debuggers; the dynamic symbols a binary links by stay (strip keeps .dynsym)
  execFileSync(TARGET.strip, ['--strip-unneeded', '-o', path.join(dest, 'build', 'Release', 'edgecv.node'), TARGET.addon]);
  execFileSync(TARGET.strip, ['-o', path.join(target, 'node'), TARGET.node]);
  fs.cpSync(path.join(ROOT, 'web'), path.join(dest, 'web'), { recursive: true });
  copyNodeModules(dest);
  await copyModels(dest);
}

main().catch((e) => {
  console.error(`[image-payload] FAILED: ${e.stack}`);
  process.exit(1);
});
