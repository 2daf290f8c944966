// The native/checks/ programs, built with g++ once per input and kept in .cache/check-programs/: a binary is named by
// the sha256 of the compiler's version, its arguments and the native/ files it compiles (its sources and every
// header they include, followed through the headers), so an unchanged program reuses it, whatever else changed
// under native/, and any change to its code, flags or compiler rebuilds it.
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { ROOT } from '../helpers.js';

const NATIVE = path.join(ROOT, 'native');
const CACHE = path.join(ROOT, '.cache', 'check-programs');

const INCLUDE = /^\s*#\s*include\s*"([^"]+)"/gm;

/** `sources` (paths under native/) and every native/ header they include, directly or through other headers, sorted. */
export function compiledFiles(sources: string[]): string[] {
  const seen = new Set<string>();
  const visit = (file: string) => {
    if (seen.has(file)) return;
    seen.add(file);
    for (const [, include] of fs.readFileSync(path.join(NATIVE, file), 'utf8').matchAll(INCLUDE)) {
      // native/ is the include root (-I native); a header of the same folder may be named without it
      const beside = path.join(path.dirname(file), include!);
      if (fs.existsSync(path.join(NATIVE, include!))) visit(include!);
      else if (fs.existsSync(path.join(NATIVE, beside))) visit(beside);
    }
  };
  for (const source of sources) visit(source);
  return [...seen].sort();
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
  for (const file of compiledFiles(sources)) hash.update(file).update(fs.readFileSync(path.join(NATIVE, file)));
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
