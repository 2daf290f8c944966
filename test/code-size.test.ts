// No source file over 450 lines and no function over 80 lines in src/, native/ and models/, and the check itself
// finds a made-up long file and long functions (TypeScript and C++) when there are some.

import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  codeSizeOffenders,
  describeOffender,
  lineCount,
  longCppFunctions,
  longTsFunctionsIn,
  MAX_FILE_LINES,
  MAX_FUNCTION_LINES,
} from './support/code-size.js';
import { ROOT, useTempDirs } from './helpers.js';

const tmpDir = useTempDirs();

/** `n` statement lines, for the body of a made-up function. */
const body = (n: number, indent = '  ') => Array.from({ length: n }, (_, i) => `${indent}x += ${i};`).join('\n');

describe('code size', () => {
  it(`no file over ${MAX_FILE_LINES} lines, no function over ${MAX_FUNCTION_LINES} lines`, () => {
    expect(codeSizeOffenders(ROOT).map(describeOffender)).toEqual([]);
  });

  it('counts lines as wc -l does', () => {
    expect([lineCount(''), lineCount('a\n'), lineCount('a\nb'), lineCount('a\nb\n')]).toEqual([0, 1, 2, 2]);
  });

  it('finds long TypeScript functions, methods and arrows by their parse, not long strings or short ones', () => {
    const root = tmpDir('edgecv-code-size-');
    fs.writeFileSync(path.join(root, 'tsconfig.json'), JSON.stringify({ compilerOptions: { strict: true }, include: ['src/**/*.ts'] }));
    fs.mkdirSync(path.join(root, 'src'));
    const source = [
      '// a comment that is not counted',
      'export function long(): number {', // line 2: 81 lines
      '  let x = 0;',
      body(77),
      '  return x;',
      '}',
      'export function short(): number {', // line 83: 80 lines, at the limit
      '  let x = 0;',
      body(77),
      '}',
      'class Box {',
      '  method(): number {',
      '    let x = 0;',
      body(80, '    '),
      '    return x;',
      '  }',
      '}',
      'export const arrow = (): number => {',
      '  let x = 0;',
      body(90),
      '  return x;',
      '};',
      `export const text = \`${'{\n'.repeat(100)}\`;`,
    ].join('\n');
    fs.writeFileSync(path.join(root, 'src', 'a.ts'), source);
    const found = longTsFunctionsIn(root, ['src/a.ts']).get('src/a.ts');
    expect(found).toEqual([
      { line: 2, name: 'long', lines: 81 },
      { line: 164, name: 'method', lines: 84 },
      { line: 249, name: 'arrow', lines: 94 },
    ]);
  });

  it('finds long C++ function definitions, not namespaces, classes, initializer braces or comments', () => {
    const source = [
      '#include <vector>',
      'namespace edgecv {',
      'namespace {',
      'struct Options {',
      '  int a = 1;',
      '};',
      '}  // namespace',
      '// void commented(int a) {',
      'Detector::Detector(int a) : a_(a), list_{1, 2} {', // line 9
      body(85),
      '}',
      'static int Small(const char* s) {',
      '  return s[0] == \'{\' ? 1 : 0;  // "}"',
      '}',
      'class Model {',
      ' public:',
      '  int Run(int x) const {', // line 101
      body(81, '    '),
      '    if (x) {',
      '      return x;',
      '    }',
      '    return 0;',
      '  }',
      '};',
      '}  // namespace edgecv',
    ].join('\n');
    expect(longCppFunctions(source)).toEqual([
      { line: 9, name: 'Detector::Detector', lines: 87 },
      { line: 101, name: 'Run', lines: 87 },
    ]);
    expect(longCppFunctions(source, 90)).toEqual([]);
  });

  it('names each offender with its file, line and length', () => {
    expect(describeOffender({ file: 'src/a.ts', line: 2, what: 'long', lines: 81, limit: 80 })).toBe(
      'src/a.ts:2 function long is 81 lines (limit 80)',
    );
    expect(describeOffender({ file: 'src/b.ts', line: 1, what: 'file', lines: 451, limit: 450 })).toBe('src/b.ts:1 file is 451 lines (limit 450)');
  });
});
