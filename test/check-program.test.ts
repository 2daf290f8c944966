// The native check programs are built once per input (test/support/check-program.ts): the same sources and flags
// give the cached binary back without building it again, and any change to the flags gives another one.
import fs from 'node:fs';
import { expect, it } from 'vitest';
import { checkProgram, compiledFiles } from './support/check-program.js';

it('reuses a check program built from the same inputs, and builds another for other flags', () => {
  const sources = ['checks/uint8_lookup_check.cc', 'ops/uint8_lookup.cc'];
  const first = checkProgram('uint8_lookup_check', sources, ['-O2']);
  const built = fs.statSync(first).mtimeMs;
  expect(checkProgram('uint8_lookup_check', sources, ['-O2'])).toBe(first);
  expect(fs.statSync(first).mtimeMs).toBe(built);
  const other = checkProgram('uint8_lookup_check', sources, ['-O1']);
  expect(other).not.toBe(first);
  expect(fs.existsSync(other)).toBe(true);
}, 120_000);

it('keys a program by the native files it compiles: its sources and the headers they include, through other headers', () => {
  expect(compiledFiles(['checks/uint8_lookup_check.cc', 'ops/uint8_lookup.cc'])).toEqual([
    'checks/uint8_lookup_check.cc',
    'ops/uint8_lookup.cc',
    'ops/uint8_lookup.h',
  ]);
  // through headers: edgecv_ops.cc names ops/silu_lookup_op.h, which names ops/uint8_lookup.h; not the rest of ops/
  const ops = compiledFiles(['ops/edgecv_ops.cc']);
  expect(fs.readFileSync('native/ops/edgecv_ops.cc', 'utf8')).not.toContain('ops/uint8_lookup.h');
  expect(ops).toEqual(expect.arrayContaining(['ops/edgecv_ops.cc', 'ops/silu_lookup_op.h', 'ops/uint8_lookup.h', 'runtime/onnxruntime_api.h']));
  expect(ops).not.toContain('ops/int8_graph_fusion.h');
});
