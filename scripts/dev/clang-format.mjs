#!/usr/bin/env node
// clang-format over the C++ under native/ (.cc, .h), with the tree's .clang-format.
//
//   node scripts/dev/clang-format.mjs --check [files...]   exit 1 and name each file clang-format would change
//   node scripts/dev/clang-format.mjs --write [files...]   format them in place
//
// Without files: every .cc and .h under native/. `npm run format` and `npm run format:check` run it after Prettier;
// test/formatting.test.ts runs --check. Plain Node ESM without npm dependencies.

import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const [mode, ...named] = process.argv.slice(2);
if (mode !== '--check' && mode !== '--write') {
  console.error('usage: node scripts/dev/clang-format.mjs --check|--write [files...]');
  process.exit(2);
}

/** Every .cc and .h under dir, sorted, relative to ROOT. */
function cppFiles(dir) {
  return fs
    .readdirSync(dir, { recursive: true })
    .filter((f) => /\.(cc|h)$/.test(f))
    .sort()
    .map((f) => path.relative(ROOT, path.join(dir, f)));
}

const files = named.length ? named : cppFiles(path.join(ROOT, 'native'));
// --dry-run --Werror: a warning (and exit 1) per place clang-format would change; -i rewrites the file.
const args = mode === '--check' ? ['--dry-run', '--Werror'] : ['-i'];
// The style is ROOT's .clang-format, also for a file outside the tree (a test's misformatted copy).
const r = spawnSync('clang-format', [`--style=file:${path.join(ROOT, '.clang-format')}`, ...args, ...files], {
  cwd: ROOT,
  encoding: 'utf8',
});
if (r.error) {
  console.error(`clang-format: ${r.error.message} (node scripts/setup/setup.mjs --test installs it)`);
  process.exit(2);
}
if (r.status !== 0) {
  const offenders = [...new Set([...r.stderr.matchAll(/^(.+?):\d+:\d+: (?:error|warning)/gm)].map((m) => m[1]))];
  console.error(r.stderr.split('\n').slice(0, 20).join('\n'));
  console.error(`clang-format: ${offenders.length} file(s) not formatted: ${offenders.join(', ')}`);
  process.exit(1);
}
if (mode === '--check') console.log(`clang-format: ${files.length} file(s) formatted`);
