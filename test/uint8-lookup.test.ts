// ApplyLookup (native/ops/uint8_lookup.cc), behind edgecv's int8 SiLU lookup and requantizing concat, must
// give table[x] for every byte whatever the length and alignment (test/int8-models.test.ts compares whole graphs
// with onnxruntime's, but only at the lengths those models happen to have). The check program (native/checks/uint8_lookup_check.cc) is built here with the addon's compiler.
import { execFileSync, spawnSync } from 'node:child_process';
import path from 'node:path';
import { expect, it } from 'vitest';
import { HAS_VBMI } from '../bench/shared/cpu-int8.js';
import { ROOT, useTempDirs } from './helpers.js';

const newTmpDir = useTempDirs();

it('looks up every byte of any length and alignment, in place or not, and writes nothing past the end', () => {
  const binary = path.join(newTmpDir('edgecv-lookup-'), 'uint8_lookup_check');
  const sources = ['native/checks/uint8_lookup_check.cc', 'native/ops/uint8_lookup.cc'].map((f) => path.join(ROOT, f));
  execFileSync('g++', ['-std=c++17', '-O2', `-I${path.join(ROOT, 'native')}`, '-o', binary, ...sources], { stdio: 'pipe' });
  const run = spawnSync(binary, [], { encoding: 'utf8' });
  expect(run.stderr).toBe('');
  expect(run.status).toBe(0);
  const result = JSON.parse(run.stdout) as { cases: number; mismatches: number; vectorized: boolean };
  expect(result).toEqual({ cases: 4 * 301 * 4, mismatches: 0, vectorized: HAS_VBMI });
}, 120_000);
