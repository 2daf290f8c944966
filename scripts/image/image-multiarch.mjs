#!/usr/bin/env node
// One multi-platform image of deploy/Dockerfile, for linux/amd64 and linux/arm64, as an OCI archive:
// `npm run image:multiarch [-- --out <file.oci.tar>] [--name <list name>]`.
//
//   1. buildah, mmdebstrap, binfmt_misc with qemu's aarch64 handler, and the base images made locally
//      (scripts/image/container-bases.mjs), as test:image and test:arm64 do;
//   2. `buildah bud` for linux/amd64, then for linux/arm64 (one at a time; the arm64 build takes the amd64 one's
//      target-independent build steps from the build cache), tagged <name>-amd64 and <name>-arm64;
//   3. a manifest list <name> of the two (`buildah manifest create` / `add`), written with both images as one OCI
//      archive (`buildah manifest push --all ... oci-archive:<out>`), and checked: the archive's index lists one
//      image per platform, linux/amd64 and linux/arm64.
//
// docs/deploy.md says how to load, push and run it with docker or podman. Needs root (buildah, mmdebstrap).
//
// Plain Node ESM without npm dependencies.

import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { ensureArm64Binfmt } from '../arm64/binfmt.mjs';
import { ensureBaseImages } from './container-bases.mjs';
import { buildImage, dockerfileNodeMajor, installTools, printLayers } from './image-tools.mjs';
import { capture, run, StepError } from '../setup/shell.mjs';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const ARCHES = ['amd64', 'arm64'];
const log = (msg) => console.log(`[image-multiarch] ${msg}`);
const seconds = (ms) => `${Math.round(ms / 1000)} s`;

function options(argv) {
  const opt = (name, fallback) => {
    const i = argv.indexOf(`--${name}`);
    return i < 0 ? fallback : argv[i + 1];
  };
  return {
    out: path.resolve(opt('out', path.join(ROOT, '.cache', 'image', 'edgecv-multiarch.oci.tar'))),
    name: opt('name', 'localhost/edgecv:latest'),
  };
}

/** Removes a manifest list or image of that name, if there is one. */
function removeName(name) {
  for (const args of [
    ['manifest', 'rm', name],
    ['rmi', name],
  ]) {
    try {
      execFileSync('buildah', args, { stdio: 'ignore' });
    } catch {
      /* none of that kind */
    }
  }
}

/** The platforms of the images an OCI archive's index lists (through one nested index, as buildah writes it). */
function archivePlatforms(file) {
  const read = (member) => JSON.parse(execFileSync('tar', ['-xOf', file, member], { encoding: 'utf8', maxBuffer: 1 << 26 }));
  const blob = (digest) => read(`blobs/${digest.replace(':', '/')}`);
  const platforms = [];
  for (const m of read('index.json').manifests) {
    if (m.platform) platforms.push(`${m.platform.os}/${m.platform.architecture}`);
    else if (/index|manifest\.list/.test(m.mediaType))
      for (const i of blob(m.digest).manifests) platforms.push(`${i.platform.os}/${i.platform.architecture}`);
  }
  return platforms.sort();
}

function main() {
  const t0 = Date.now();
  const { out, name } = options(process.argv.slice(2));
  installTools(log);
  ensureArm64Binfmt(log);
  const nodeMajor = dockerfileNodeMajor(ROOT);
  ensureBaseImages({ root: ROOT, nodeMajor, arch: 'amd64', log });
  ensureBaseImages({ root: ROOT, nodeMajor, arch: 'arm64', only: ['debian:bookworm-slim'], log });
  const images = ARCHES.map((arch) => {
    const image = `${name}-${arch}`;
    const t = Date.now();
    buildImage({ root: ROOT, image, arch, log });
    log(`${image}: built in ${seconds(Date.now() - t)}`);
    printLayers(image, log);
    return image;
  });
  removeName(name);
  run('buildah', ['manifest', 'create', name], { log, capture: true });
  for (const image of images) run('buildah', ['manifest', 'add', name, `containers-storage:${image}`], { log, capture: true });
  fs.mkdirSync(path.dirname(out), { recursive: true });
  fs.rmSync(out, { force: true });
  const t = Date.now();
  run('buildah', ['manifest', 'push', '--all', '--format', 'oci', name, `oci-archive:${out}:${name.replace(/^[^/]*\//, '')}`], { log });
  log(`${out}: ${(fs.statSync(out).size / 1e6).toFixed(1)} MB, written in ${seconds(Date.now() - t)}`);
  const platforms = archivePlatforms(out);
  const wanted = ARCHES.map((a) => `linux/${a}`);
  if (JSON.stringify(platforms) !== JSON.stringify(wanted))
    throw new StepError(`${out} lists ${platforms.join(', ') || 'no image'}, not ${wanted.join(', ')}`);
  log(`${name}: ${platforms.join(', ')} (buildah manifest inspect ${name}); npm run image:multiarch took ${seconds(Date.now() - t0)}`);
  log(capture('buildah', ['manifest', 'inspect', name]).replace(/\s+/g, ' ').slice(0, 400));
}

try {
  main();
} catch (e) {
  console.error(`[image-multiarch] FAILED: ${e instanceof StepError ? e.message : e.stack}`);
  process.exit(1);
}
