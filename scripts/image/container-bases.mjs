// The base images deploy/Dockerfile names, made locally with no registry but Debian's archive and npm's (Docker
// Hub is out of reach on the project's machines), and tagged under the names Docker Hub gives them:
//
//   node:<major>-bookworm   Debian bookworm minbase (mmdebstrap) with what the official image carries for building
//                           native modules (g++, make, python3, ca-certificates), and Node's official build (npm
//                           package node-linux-<arch>: bin/node and include/node) with npm, in /usr/local as there;
//   debian:bookworm-slim    Debian bookworm minbase without documentation, man pages and locales, as Debian's own.
//
// Each is made for amd64 (the host's platform) and, for the arm64 image's run stage, debian:bookworm-slim for arm64
// too (mmdebstrap --arch=arm64 runs Debian's arm64 maintainer scripts under qemu-user: binfmt_misc, scripts/arm64/binfmt.mjs).
// The amd64 images carry Docker Hub's names (docker.io/library/...); the arm64 ones live beside them under the
// registry name ARCH_REGISTRY.arm64, which no amd64 build looks in. buildah 1.28 skips a local image of another
// platform than the one asked for (`bud --platform linux/arm64` finds no docker.io/library/debian:bookworm-slim of
// amd64), and searches unqualified names in the registries a registries.conf lists: registriesConf() writes one
// that lists ARCH_REGISTRY.arm64 first, for the arm64 build's buildah (CONTAINERS_REGISTRIES_CONF) alone.
//
// An image is made again only when its inputs change: a hash of the recipe (RECIPE, the Debian suite, mirrors,
// packages and dpkg options) and of the Node and npm releases (their sha512 integrity) is its label
// edgecv.base-inputs.
//
// Plain Node ESM without npm dependencies; used by scripts/image/test-image.mjs. Needs root, buildah and mmdebstrap.

import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { fetchNode, fetchRelease, nodePackage, resolveRelease } from '../setup/node-release.mjs';
import { capture, run } from '../setup/shell.mjs';

/** Raised when the way the images are made changes (anything not in the inputs hashed below). */
const RECIPE = 1;
const SUITE = 'bookworm';
const MIRRORS = [
  `deb http://deb.debian.org/debian ${SUITE} main`,
  `deb http://deb.debian.org/debian ${SUITE}-updates main`,
  `deb http://deb.debian.org/debian-security ${SUITE}-security main`,
];
/** What Debian's slim images leave out (their dpkg path-exclude rules, /etc/dpkg/dpkg.cfg.d/docker). */
const SLIM_EXCLUDES = [
  '/usr/share/doc/*',
  '/usr/share/man/*',
  '/usr/share/info/*',
  '/usr/share/locale/*',
  '/usr/share/groff/*',
  '/usr/share/lintian/*',
];
/**
 * mmdebstrap's minbase installs usrmerge (for a merged /usr) and, through it, perl with its modules: 50 MB that
 * Debian's own slim image, merged at creation, does not carry. Purged once the root file system is made; the empty
 * usr-is-merged stands in for usrmerge in init-system-helpers' dependency.
 */
const NOT_IN_DEBIAN_SLIM = [
  'usrmerge',
  'libfile-find-rule-perl',
  'libnumber-compare-perl',
  'libtext-glob-perl',
  'perl',
  'perl-modules-5.36',
  'libperl5.36',
  'libgdbm-compat4',
];
/** The images, by their name's tail: Debian packages beyond minbase (and purged), and whether Node and npm go in. */
const FLAVOURS = (nodeMajor) => ({
  [`node:${nodeMajor}-${SUITE}`]: {
    packages: ['ca-certificates', 'g++', 'make', 'python3', 'pkg-config'],
    purge: [],
    excludes: [],
    includes: [],
    node: true,
  },
  [`debian:${SUITE}-slim`]: {
    packages: ['usr-is-merged'],
    purge: NOT_IN_DEBIAN_SLIM,
    excludes: SLIM_EXCLUDES,
    includes: ['/usr/share/doc/*/copyright'],
    node: false,
  },
});
const LABEL = 'edgecv.base-inputs';
/** Where the base images of another platform than amd64 are named: a registry name nothing is pulled from. */
export const ARCH_REGISTRY = { arm64: 'edgecv-bases-arm64.local' };
const PATH_ENV = 'PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

/** The image's edgecv.base-inputs label, or null when there is no such image. */
function imageInputs(image) {
  try {
    return capture('buildah', ['inspect', '--type', 'image', '--format', `{{index .OCIv1.Config.Labels "${LABEL}"}}`, image], {
      stdio: ['ignore', 'pipe', 'ignore'],
    });
  } catch {
    return null;
  }
}

/** /usr/local of the image as a folder: node, its headers, npm and the npm/npx links, as the official images lay them out. */
function stageUsrLocal(stage, nodeDir, npmDir) {
  fs.rmSync(stage, { recursive: true, force: true });
  const local = path.join(stage, 'usr', 'local');
  for (const d of ['bin', 'include', 'lib/node_modules']) fs.mkdirSync(path.join(local, d), { recursive: true });
  fs.copyFileSync(path.join(nodeDir, 'bin', 'node'), path.join(local, 'bin', 'node'));
  fs.chmodSync(path.join(local, 'bin', 'node'), 0o755);
  run('cp', ['-a', path.join(nodeDir, 'include', 'node'), path.join(local, 'include', 'node')], { quiet: true });
  run('cp', ['-a', npmDir, path.join(local, 'lib', 'node_modules', 'npm')], { quiet: true });
  fs.rmSync(path.join(local, 'lib', 'node_modules', 'npm', '.integrity'));
  fs.symlinkSync('../lib/node_modules/npm/bin/npm-cli.js', path.join(local, 'bin', 'npm'));
  fs.symlinkSync('../lib/node_modules/npm/bin/npx-cli.js', path.join(local, 'bin', 'npx'));
}

/** The image's ID, or null when there is none of that name. */
function imageId(image) {
  try {
    return capture('buildah', ['inspect', '--type', 'image', '--format', '{{.FromImageID}}', image], { stdio: ['ignore', 'pipe', 'ignore'] });
  } catch {
    return null;
  }
}

function removeQuietly(args) {
  try {
    run('buildah', args, { quiet: true, capture: true, stdio: ['ignore', 'pipe', 'ignore'] });
  } catch {
    /* gone already, or still the parent of a cached build step */
  }
}

/** The image's architecture (its configuration's), or null when there is no such image. */
function imageArch(image) {
  try {
    return capture('buildah', ['inspect', '--type', 'image', '--format', '{{.OCIv1.Architecture}}', image], { stdio: ['ignore', 'pipe', 'ignore'] });
  } catch {
    return null;
  }
}

/**
 * Sets the image's architecture in its configuration (buildah from scratch takes the host's): an image of another
 * platform with the host's would be taken by builds for the host's and passed over by builds for its own.
 */
function setArch(image, arch, log) {
  const ctr = capture('buildah', ['from', '--pull=never', image]);
  run('buildah', ['config', '--arch', arch, '--os', 'linux', ctr], { log, quiet: true });
  run('buildah', ['commit', '--quiet', '--rm', ctr, image], { log, quiet: true, capture: true });
}

/** Commits the root file system (and /usr/local's stage) as `image`; the image it replaces is removed. */
function makeImage({ image, arch, inputs, rootfs, stage, node, log }) {
  const previous = imageId(image);
  const ctr = capture('buildah', ['from', 'scratch']);
  try {
    run('buildah', ['add', '--quiet', ctr, rootfs, '/'], { log, quiet: true });
    if (stage) run('buildah', ['add', '--quiet', ctr, stage, '/'], { log, quiet: true });
    const env = ['--env', PATH_ENV, ...(node ? ['--env', `NODE_VERSION=${node.version}`] : [])];
    run('buildah', ['config', ...env, '--arch', arch, '--os', 'linux', '--label', `${LABEL}=${inputs}`, '--cmd', node ? 'node' : 'bash', ctr], {
      log,
      quiet: true,
    });
    run('buildah', ['commit', '--quiet', '--rm', ctr, image], { log, quiet: true, capture: true });
  } catch (e) {
    removeQuietly(['rm', ctr]);
    throw e;
  }
  if (previous) removeQuietly(['rmi', previous]);
}

/** The local name of a base image (`debian:bookworm-slim`) for `arch`. */
export function baseImageName(name, arch = 'amd64') {
  return arch === 'amd64' ? `docker.io/library/${name}` : `${ARCH_REGISTRY[arch]}/${name}`;
}

/**
 * A registries.conf for building for `arch` (buildah's CONTAINERS_REGISTRIES_CONF): unqualified names are looked up
 * among ARCH_REGISTRY[arch]'s images first, then Docker Hub's (the build stage's amd64 node image, through the
 * system's short-name aliases). Written under .cache; returns its path.
 */
export function registriesConf(root, arch) {
  const file = path.join(root, '.cache', 'container-bases', `registries-${arch}.conf`);
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(
    file,
    `# written by scripts/image/container-bases.mjs: ${arch} base images first\nunqualified-search-registries = ["${ARCH_REGISTRY[arch]}", "docker.io"]\nshort-name-mode = "permissive"\n`,
  );
  return file;
}

/**
 * Makes docker.io/library/node:<major>-bookworm and debian:bookworm-slim for `arch` (amd64 or arm64) in buildah's
 * storage, unless they are there with the same inputs; `only` limits it to some of them (the arm64 build needs
 * debian:bookworm-slim alone: its build stage runs on the build platform). Returns the image names by flavour.
 */
export function ensureBaseImages({ root, nodeMajor, arch = 'amd64', only, log }) {
  const nodeArch = arch === 'amd64' ? 'x64' : arch;
  const node = resolveRelease(nodePackage(nodeArch), nodeMajor, log);
  // the npm major the official images of that Node line carry
  const npm = resolveRelease('npm', Number(nodeMajor) >= 24 ? '11' : '10', log);
  const images = {};
  for (const [name, flavour] of Object.entries(FLAVOURS(nodeMajor))) {
    if (only && !only.includes(name)) continue;
    const image = baseImageName(name, arch);
    images[name] = image;
    const releases = flavour.node ? { node, npm } : {};
    const inputs = createHash('sha256').update(JSON.stringify({ RECIPE, arch, SUITE, MIRRORS, flavour, releases })).digest('hex');
    const what = flavour.node ? ` (Node ${node.version}, npm ${npm.version})` : '';
    if (imageInputs(image) === inputs) {
      if (imageArch(image) !== arch) {
        setArch(image, arch, log);
        log(`${image}: its configuration now says ${arch}`);
      }
      log(`${image}: up to date${what}`);
      continue;
    }
    const t0 = Date.now();
    const work = path.join(root, '.cache', 'container-bases', `${name.replace(/[:/]/g, '_')}-${arch}`);
    fs.rmSync(work, { recursive: true, force: true });
    fs.mkdirSync(work, { recursive: true });
    const rootfs = path.join(work, 'rootfs.tar');
    log(`${image}: Debian ${SUITE} minbase${flavour.packages.length ? ` + ${flavour.packages.join(', ')}` : ''} (mmdebstrap)`);
    const args = ['--quiet', '--variant=minbase', `--architectures=${arch}`];
    if (flavour.packages.length) args.push(`--include=${flavour.packages.join(',')}`);
    for (const x of flavour.excludes) args.push(`--dpkgopt=path-exclude=${x}`);
    for (const x of flavour.includes) args.push(`--dpkgopt=path-include=${x}`); // the licences stay
    if (flavour.purge.length) args.push(`--customize-hook=chroot "$1" dpkg --purge ${flavour.purge.join(' ')}`);
    run('mmdebstrap', [...args, SUITE, rootfs, ...MIRRORS], { log });
    let stage = null;
    if (flavour.node) {
      stage = path.join(work, 'usr-local');
      stageUsrLocal(stage, fetchNode(root, node, log), fetchRelease(npm, path.join(root, '.cache', 'npm', npm.version), log));
    }
    makeImage({ image, arch, inputs, rootfs, stage, node: flavour.node ? node : null, log });
    fs.rmSync(work, { recursive: true, force: true });
    log(`${image}: made in ${Math.round((Date.now() - t0) / 1000)} s${what}`);
  }
  return images;
}
