// The tree is formatted: Prettier (TypeScript, JS, JSON: .prettierrc.json, .prettierignore) and clang-format
// (native/**/*.{cc,h}: .clang-format) find nothing to change, and each check fails on a misformatted copy of one of
// the tree's files (so a check that looks at nothing, or passes anything, fails here). `npm run format` fixes the tree.

import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT, useTempDirs } from './helpers.js';

const tmpDir = useTempDirs();
const PRETTIER = path.join(ROOT, 'node_modules', 'prettier', 'bin', 'prettier.cjs');
const CLANG_FORMAT = path.join(ROOT, 'scripts', 'dev', 'clang-format.mjs');

/** Runs a checker with node; its exit status and what it wrote. */
function check(script: string, args: string[]): { status: number | null; output: string } {
  const r = spawnSync(process.execPath, [script, ...args], { cwd: ROOT, encoding: 'utf8', timeout: 110_000 });
  return { status: r.status, output: `${r.stdout}${r.stderr}` };
}

/** Prettier --check with the tree's settings; the cache (under .cache/, ignored by git) skips files it saw unchanged. */
const prettierCheck = (...files: string[]) =>
  check(PRETTIER, ['--check', '--config', path.join(ROOT, '.prettierrc.json'), '--cache', '--cache-location', '.cache/prettier', ...files]);

/** A copy of the tree's file `rel` in a temporary folder: as it is, and with `misformat` applied (which must change it). */
function copies(rel: string, misformat: (text: string) => string): { same: string; changed: string } {
  const dir = tmpDir('edgecv-formatting-');
  const text = fs.readFileSync(path.join(ROOT, rel), 'utf8');
  const bad = misformat(text);
  expect(bad).not.toBe(text);
  const same = path.join(dir, `same-${path.basename(rel)}`);
  const changed = path.join(dir, `changed-${path.basename(rel)}`);
  fs.writeFileSync(same, text);
  fs.writeFileSync(changed, bad);
  return { same, changed };
}

// Indents the first line that starts with `start` by four more spaces.
const indentFirst = (start: string) => (text: string) => text.replace(new RegExp(`^${start}`, 'm'), `    ${start}`);

describe('formatting', () => {
  it('Prettier finds every TypeScript, JS and JSON file of the tree formatted', () => {
    const r = prettierCheck('.');
    expect(r.output).not.toMatch(/\[warn\]|\[error\]/);
    expect(r.status).toBe(0);
  });

  it('clang-format finds every .cc and .h under native/ formatted', () => {
    const r = check(CLANG_FORMAT, ['--check']);
    expect(r.status, r.output).toBe(0);
    const count = fs.readdirSync(path.join(ROOT, 'native'), { recursive: true }).filter((f) => /\.(cc|h)$/.test(String(f))).length;
    expect(r.output).toContain(`clang-format: ${count} file(s) formatted`);
  });

  it('Prettier fails on a misformatted copy of a source file, and passes the copy as it is', () => {
    const { same, changed } = copies('src/server/app.ts', indentFirst('import '));
    expect(prettierCheck(same).status).toBe(0);
    const r = prettierCheck(changed);
    expect(r.status).toBe(1);
    expect(r.output).toContain(path.basename(changed));
  });

  it('clang-format fails on a misformatted copy of a native file, and passes the copy as it is', () => {
    const { same, changed } = copies('native/pool/worker_pool.cc', indentFirst('namespace '));
    expect(check(CLANG_FORMAT, ['--check', same]).status).toBe(0);
    const r = check(CLANG_FORMAT, ['--check', changed]);
    expect(r.status).toBe(1);
    expect(r.output).toMatch(/code should be clang-formatted/);
    expect(r.output).toContain(`1 file(s) not formatted: ${changed}`);
  });
});
