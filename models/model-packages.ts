// Where a model package lives on disk: the default one is an npm dependency, the others were fetched
// by set-up (scripts/setup/model-packages.mjs) into .cache/model-packages/.
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { SourceManifest } from './model-manifest.js';

export interface ModelPackage {
  name: string;
  version: string;
  licence: string;
  dir: string;
}

/** The edgecv checkout this file belongs to (from source or from dist/). */
export function findRoot(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    try {
      const pkg = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { name?: string };
      if (pkg.name === 'edgecv') return dir;
    } catch {
      // keep walking up
    }
    const up = dirname(dir);
    if (up === dir) throw new Error('edgecv package root not found');
    dir = up;
  }
}

export function readSourceManifest(root: string): SourceManifest {
  return JSON.parse(readFileSync(join(root, 'models', 'manifest.json'), 'utf8')) as SourceManifest;
}

/** Same path as scripts/setup/model-packages.mjs fetchedPackageDir(). */
export function fetchedPackageDir(root: string, name: string, version: string): string {
  return join(root, '.cache', 'model-packages', `${name.replace('/', '+')}-${version}`, 'package');
}

/** `name` undefined means the manifest's default package. */
export function modelPackage(root: string, manifest: SourceManifest, name?: string): ModelPackage {
  if (name === undefined || name === manifest.package) {
    const require = createRequire(join(root, 'package.json'));
    const pkgJsonPath = require.resolve(`${manifest.package}/package.json`);
    const pkg = JSON.parse(readFileSync(pkgJsonPath, 'utf8')) as { version: string };
    return { name: manifest.package, version: pkg.version, licence: manifest.licence, dir: dirname(pkgJsonPath) };
  }
  const fetched = manifest.fetchedPackages?.[name];
  if (!fetched) throw new Error(`models/manifest.json: package ${name} is neither the default package nor in fetchedPackages`);
  return { name, version: fetched.version, licence: fetched.licence, dir: fetchedPackageDir(root, name, fetched.version) };
}
