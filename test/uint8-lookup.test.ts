// ApplyLookup (native/ops/uint8_lookup.cc), behind edgecv's int8 SiLU lookup and requantizing concat, must
// give table[x] for every byte whatever the length and alignment (test/int8-models.test.ts compares whole graphs
// with onnxruntime's, but only at the lengths those models happen to have). The check program (native/checks/uint8_lookup_check.cc) is built here with the addon's compiler (test/support/check-program.ts).
import { spawnSync } from 'node:child_process';
import { expect, it } from 'vitest';
import { HAS_VBMI } from '../testkit/cpu-int8.js';
import { checkProgram } from './support/check-program.js';

it('looks up every byte of any length and alignment, in place or not, and writes nothing past the end', () => {
  const binary = checkProgram('uint8_lookup_check', ['checks/uint8_lookup_check.cc', 'ops/uint8_lookup.cc'], ['-O2']);
  const run = spawnSync(binary, [], { encoding: 'utf8' });
  expect(run.stderr).toBe('');
  expect(run.status).toBe(0);
  const result = JSON.parse(run.stdout) as { cases: number; mismatches: number; vectorized: boolean };
  expect(result).toEqual({ cases: 4 * 301 * 4, mismatches: 0, vectorized: HAS_VBMI });
}, 120_000);
