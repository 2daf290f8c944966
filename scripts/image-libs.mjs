#!/usr/bin/env node
// The shared libraries the server's native code needs, copied into the runtime image from the build stage's root
// file system (deploy/Dockerfile mounts it read-only): `node image-libs.mjs <build root> <binary>...`.
//
// Why not apt: Debian's OpenCV runtime packages bring 390 MB (GDAL's package closure, LLVM through Mesa, fonts,
// map projections); the libraries the addon links to, and theirs, are 34 MB. This copies exactly those: it asks
// ldd which sonames are not found here, takes each from the build root (the same Debian release, where set-up
// installed OpenCV), and repeats until nothing is missing. Each library's Debian copyright file comes with it.
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
  for (let hops = 0; parts.length; ) {
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

/** Where the build root's dynamic linker would find `soname` (its ld.so.cache), as a path inside the root. */
function locate(root, soname, cache) {
  const line = cache.split('\n').find((l) => l.trim().startsWith(`${soname} (`));
  const found = line && /=> (\S+)$/.exec(line)?.[1];
  if (!found) throw new Error(`${soname}: not in ${root}'s ld.so.cache either`);
  return realpathIn(root, found);
}

/** The Debian package that owns `file` in the build root, or null. */
function owner(root, file) {
  try {
    return execFileSync('dpkg-query', [`--admindir=${path.join(root, 'var/lib/dpkg')}`, '-S', file], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).split(':')[0];
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
  // the build root's own linker cache: `ldconfig -p` reads /etc/ld.so.cache, so read it through its root
  const cache = execFileSync('ldconfig', ['-p', '-C', path.join(root, 'etc/ld.so.cache')], { encoding: 'utf8' });
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
      const pkg = owner(root, file);
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
