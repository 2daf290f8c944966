// What the scripts that build deploy/Dockerfile with buildah share (test-image.mjs, test-arm64.mjs,
// image-multiarch.mjs): Debian's buildah and mmdebstrap, this host's CA bundle as the build secret, the Node line the
// Dockerfile names, one `buildah bud` for one platform, and an image's size by layer.
//
// Plain Node ESM without npm dependencies. Needs root (buildah, mmdebstrap).

import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { registriesConf } from './container-bases.mjs';
import { capture, run, StepError } from '../setup/shell.mjs';

/** The platform's architecture as Docker names it; the images are built on amd64 hosts. */
const HOST_ARCH = { x64: 'amd64', arm64: 'arm64' }[process.arch];

export function installTools(log) {
  const r = spawnSync('dpkg-query', ['-W', '-f=${Package} ${db:Status-Status}\n', 'buildah', 'mmdebstrap'], { encoding: 'utf8' });
  const installed = new Set(
    (r.stdout ?? '')
      .split('\n')
      .filter((l) => l.endsWith(' installed'))
      .map((l) => l.split(' ')[0]),
  );
  const missing = ['buildah', 'mmdebstrap'].filter((p) => !installed.has(p));
  if (!missing.length) return log('buildah and mmdebstrap present');
  if (process.getuid?.() !== 0) throw new StepError(`missing ${missing.join(', ')}: sudo apt-get install ${missing.join(' ')}`);
  run('apt-get', ['update', '-q'], { log });
  run('apt-get', ['install', '-y', '-q', '--no-install-recommends', ...missing], { log, env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' } });
}

/** The CA bundle this host's npm and Node trust (these machines' TLS interception included), if any. */
export function hostCaBundle() {
  const candidates = [
    process.env.NODE_EXTRA_CA_CERTS,
    spawnSync('npm', ['config', 'get', 'cafile'], { encoding: 'utf8' }).stdout?.trim(),
    '/etc/ssl/certs/ca-certificates.crt',
  ];
  return candidates.find((f) => f && f !== 'null' && fs.existsSync(f)) ?? null;
}

/** The Node major line deploy/Dockerfile's build stage runs (FROM [--platform=...] node:<major>-bookworm). */
export function dockerfileNodeMajor(root) {
  const dockerfile = fs.readFileSync(path.join(root, 'deploy', 'Dockerfile'), 'utf8');
  const major = /^FROM\s+(?:--platform=\S+\s+)?node:(\d+)-bookworm\b/m.exec(dockerfile)?.[1];
  if (!major) throw new StepError('deploy/Dockerfile names no node:<major>-bookworm base');
  return major;
}

/**
 * `buildah bud` of deploy/Dockerfile for one platform (amd64 or arm64), tagged `image`, with its build cache
 * (--layers), the base images made locally (--pull=never) and this host's CA bundle as the build secret `ca`.
 * Another platform than amd64 finds its base images through registriesConf() (scripts/image/container-bases.mjs).
 */
export function buildImage({ root, image, arch = 'amd64', log }) {
  const ca = hostCaBundle();
  // buildah 1.28 predefines TARGETARCH but not BUILDPLATFORM, which the build stage's FROM names (BuildKit does)
  const args = [
    'bud',
    '--isolation',
    'chroot',
    '--format',
    'docker',
    '--pull=never',
    '--layers',
    '-f',
    'deploy/Dockerfile',
    '-t',
    image,
    '--build-arg',
    `BUILDPLATFORM=linux/${HOST_ARCH}`,
  ];
  if (arch !== HOST_ARCH) args.push('--platform', `linux/${arch}`);
  if (ca) args.push('--secret', `id=ca,src=${ca}`);
  const env = arch === HOST_ARCH ? process.env : { ...process.env, CONTAINERS_REGISTRIES_CONF: registriesConf(root, arch) };
  log(`building ${image} for linux/${arch}${ca ? ` (build secret ca: ${ca})` : ''}`);
  run('buildah', [...args, '.'], { cwd: root, log, env });
}

/** The image's layers (size, the step that made it) from buildah's storage, and their total in bytes. */
export function layers(image) {
  const inspect = JSON.parse(capture('buildah', ['inspect', '--type', 'image', image]));
  const history = (inspect.Docker?.history ?? inspect.OCIv1?.history ?? []).filter((h) => !h.empty_layer);
  const diffIds = inspect.Docker?.rootfs?.diff_ids ?? inspect.OCIv1?.rootfs?.diff_ids ?? [];
  const { store } = JSON.parse(capture('buildah', ['info']));
  const layersFile = path.join(store.GraphRoot, `${store.GraphDriverName}-layers`, 'layers.json');
  const sizes = new Map(JSON.parse(fs.readFileSync(layersFile, 'utf8')).map((l) => [l['diff-digest'], l['diff-size']]));
  const rows = diffIds.map((d, i) => ({
    bytes: sizes.get(d) ?? NaN,
    step: (i === 0 ? `base image (${history[i]?.created_by ?? '?'})` : (history[i]?.created_by ?? '?'))
      .replace(/\s+/g, ' ')
      .replace(/^\/bin\/sh -c (#\(nop\) )?/, '')
      .slice(0, 110),
  }));
  return { rows, total: rows.reduce((s, r) => s + r.bytes, 0) };
}

/** Prints the image's size by layer; returns the total in bytes. */
export function printLayers(image, log) {
  const { rows, total } = layers(image);
  log(`${image}: layers:`);
  for (const r of rows) console.log(`  ${(r.bytes / 1e6).toFixed(1).padStart(7)} MB  ${r.step}`);
  console.log(`  ${(total / 1e6).toFixed(1).padStart(7)} MB  in all`);
  return total;
}
