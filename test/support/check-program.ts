// The native/checks/ programs, built with g++ once per input and kept in .cache/check-programs/: a binary is named by
// the sha256 of the compiler's version, its arguments and every file under native/ (a header can change what any
// source compiles to), so an unchanged tree reuses it and any change to the code, flags or compiler rebuilds it.
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { ROOT } from '../helpers.js';

const NATIVE = path.join(ROOT, 'native');
const CACHE = path.join(ROOT, '.cache', 'check-programs');

function nativeFiles(dir: string, out: string[] = []): string[] {
  for (const e of fs.readdirSync(dir, { withFileTypes: true }).sort((a, b) => a.name.localeCompare(b.name))) {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) nativeFiles(p, out);
    else if (/\.(cc|h)$/.test(e.name)) out.push(p);
  }
  return out;
}

/**
 * The path of the check program `name` built from `sources` (paths under native/) with g++ and `args` (flags
 * before the sources) and `libs` (after them). Builds it when the cache has none for these inputs.
 */
export function checkProgram(name: string, sources: string[], args: string[], libs: string[] = []): string {
  const command = ['-std=c++17', ...args, `-I${NATIVE}`, '-o', '<out>', ...sources.map((f) => path.join(NATIVE, f)), ...libs];
  const hash = createHash('sha256');
  hash.update(execFileSync('g++', ['--version'], { encoding: 'utf8' }));
  hash.update(JSON.stringify(command));
  for (const file of nativeFiles(NATIVE)) hash.update(path.relative(NATIVE, file)).update(fs.readFileSync(file));
  const binary = path.join(CACHE, `${name}-${hash.digest('hex').slice(0, 16)}`);
  if (fs.existsSync(binary)) return binary;
  fs.mkdirSync(CACHE, { recursive: true });
  // Built under a private name and renamed into place: files built at once (the unit tier runs in parallel) never
  // see a half-written binary.
  const partial = `${binary}.${process.pid}.partial`;
  execFileSync(
    'g++',
    command.map((a) => (a === '<out>' ? partial : a)),
    { stdio: 'pipe' },
  );
  fs.renameSync(partial, binary);
  return binary;
}
