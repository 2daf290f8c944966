#!/usr/bin/env node
// The shared libraries the server's native code needs, copied into the runtime image from the build stage's root
// file system (deploy/Dockerfile mounts it read-only): `node image-libs.mjs <build root> <binary>...`.
//
// Why not apt: Debian's OpenCV runtime packages bring 390 MB (GDAL's package closure, LLVM through Mesa, fonts,
// map projections); the libraries the addon links to, and theirs, are 34 MB. This copies exactly those: it asks
// ldd which sonames are not found here, takes each from the build root (the same Debian release, where set-up
// installed OpenCV), and repeats until nothing is missing. Each library's Debian copyright file comes with it.
//
// For arm64 the root is the arm64 sysroot the build stage made (scripts/image/image-build.mjs: Debian's arm64 packages
// unpacked, with no dynamic linker cache and no dpkg status): libraries are found in the directories its
// ld.so.conf.d names, and their packages by the file lists image-build.mjs wrote there. This runs under emulation
// then (the run stage is arm64), so it reads those lists itself rather than starting dpkg-query per library.
//
// Plain Node ESM without npm dependencies; it runs in the runtime stage, as root, before the user is switched.

import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

const DEST = '/usr/local/lib';
const MAX_ROUNDS = 12;
const log = (msg) => console.log(`[image-libs] ${msg}`);

/** The sonames ldd cannot find for these binaries. */
function missing(binaries) {
  const out = new Set();
  for (const b of binaries) {
    const text = execFileSync('ldd', [b], { encoding: 'utf8' });
    for (const m of text.matchAll(/^\s*(\S+) => not found/gm)) out.add(m[1]);
  }
  return out;
}

/** `p` (a path inside `root`) with every symbolic link followed inside `root`, as a path inside `root`. */
function realpathIn(root, p) {
  const parts = p.split('/').filter(Boolean);
  let at = '/';
  for (let hops = 0; parts.length;) {
    const next = path.posix.join(at, parts.shift());
    const st = fs.lstatSync(path.join(root, next));
    if (!st.isSymbolicLink()) {
      at = next;
      continue;
    }
    if (++hops > 40) throw new Error(`${p}: too many symbolic links in ${root}`);
    const link = fs.readlinkSync(path.join(root, next));
    parts.unshift(...link.split('/').filter(Boolean));
    at = link.startsWith('/') ? '/' : at;
  }
  return at;
}

/** The directories a root's dynamic linker searches, by its etc/ld.so.conf.d (the multiarch ones), then the defaults. */
function searchDirs(root) {
  const confDir = path.join(root, 'etc', 'ld.so.conf.d');
  const confs = fs.existsSync(confDir)
    ? fs
        .readdirSync(confDir)
        .filter((f) => f.endsWith('.conf'))
        .sort()
    : [];
  const dirs = confs.flatMap((f) =>
    fs
      .readFileSync(path.join(confDir, f), 'utf8')
      .split('\n')
      .map((l) => l.replace(/#.*/, '').trim())
      .filter((l) => l.startsWith('/')),
  );
  return [...dirs, '/lib', '/usr/lib'];
}

/**
 * Where the root's dynamic linker would find `soname`, as a path inside the root: by its ld.so.cache where it has
 * one (the build stage's own root file system), else by searching its library directories (a sysroot).
 */
function locate(root, soname, cache) {
  if (cache === null) {
    const dir = searchDirs(root).find((d) => fs.existsSync(path.join(root, d, soname)));
    if (!dir) throw new Error(`${soname}: in none of ${root}'s library directories either`);
    return realpathIn(root, path.posix.join(dir, soname));
  }
  const line = cache.split('\n').find((l) => l.trim().startsWith(`${soname} (`));
  const found = line && /=> (\S+)$/.exec(line)?.[1];
  if (!found) throw new Error(`${soname}: not in ${root}'s ld.so.cache either`);
  return realpathIn(root, found);
}

/** A sysroot's files by path, with their packages: its var/lib/dpkg/info/<package>.list files (image-build.mjs). */
function fileOwners(root) {
  const info = path.join(root, 'var', 'lib', 'dpkg', 'info');
  const owners = new Map();
  for (const f of fs.existsSync(info) ? fs.readdirSync(info).filter((n) => n.endsWith('.list')) : []) {
    for (const file of fs.readFileSync(path.join(info, f), 'utf8').split('\n')) if (file) owners.set(file, f.slice(0, -'.list'.length));
  }
  return owners;
}

/** The Debian package that owns `file` in the build root, or null. */
function owner(root, file, owners) {
  if (owners) return owners.get(file) ?? null;
  try {
    return execFileSync('dpkg-query', [`--admindir=${path.join(root, 'var/lib/dpkg')}`, '-S', file], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
    }).split(':')[0];
  } catch {
    return null;
  }
}

function main() {
  const [root, ...binaries] = process.argv.slice(2);
  if (!root || !binaries.length) {
    console.error('usage: node image-libs.mjs <build root> <binary>...');
    process.exit(2);
  }
  // the build root's own linker cache: `ldconfig -p` reads /etc/ld.so.cache, so read it through its root; a
  // sysroot has neither that cache nor a dpkg status
  const sysroot = !fs.existsSync(path.join(root, 'etc/ld.so.cache'));
  const cache = sysroot ? null : execFileSync('ldconfig', ['-p', '-C', path.join(root, 'etc/ld.so.cache')], { encoding: 'utf8' });
  const owners = sysroot ? fileOwners(root) : null;
  const packages = new Set();
  let copied = 0;
  let bytes = 0;
  for (let round = 0; ; round++) {
    const need = missing(binaries);
    if (!need.size) break;
    if (round === MAX_ROUNDS) throw new Error(`still missing after ${MAX_ROUNDS} rounds: ${[...need].join(' ')}`);
    for (const soname of need) {
      const file = locate(root, soname, cache);
      fs.copyFileSync(path.join(root, file), path.join(DEST, soname));
      bytes += fs.statSync(path.join(DEST, soname)).size;
      copied++;
      const pkg = owner(root, file, owners);
      if (pkg) packages.add(pkg.replace(/:.*/, ''));
    }
    execFileSync('ldconfig');
  }
  for (const pkg of packages) {
    const copyright = path.join('usr/share/doc', pkg, 'copyright');
    if (!fs.existsSync(path.join(root, copyright))) continue;
    fs.mkdirSync(path.join('/', path.dirname(copyright)), { recursive: true });
    fs.copyFileSync(path.join(root, copyright), path.join('/', copyright));
  }
  log(`${copied} libraries (${(bytes / 1e6).toFixed(1)} MB) from ${packages.size} Debian packages into ${DEST}`);
}

main();
