// No comment in the project names a project file that does not exist (src/..., native/..., test/... in // and
// /* */ comments of every source file), and the check itself finds a stale name when there is one.

import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { comments, namedPaths, stalePaths } from './support/comment-paths.js';
import { ROOT, useTempDirs } from './helpers.js';

const tmpDir = useTempDirs();

describe('paths named in comments', () => {
  it('all exist', () => {
    expect(stalePaths(ROOT).map((s) => `${s.file}:${s.line} names ${s.named}`)).toEqual([]);
  });

  it('finds a comment naming a missing file, and not a path in a string or an import', () => {
    const root = tmpDir('edgecv-comments-');
    fs.mkdirSync(path.join(root, 'src', 'engine'), { recursive: true });
    fs.writeFileSync(path.join(root, 'src', 'engine', 'limits.ts'), 'export const A = 1;\n');
    fs.writeFileSync(
      path.join(root, 'src', 'a.ts'),
      [
        "import { A } from './engine/limits.js'; // see src/engine/limits.ts",
        "const url = 'https://example.com//src/gone.ts';",
        '/* moved: src/engine.ts */',
        '// compiled name of an existing source: src/engine/limits.js',
      ].join('\n'),
    );
    expect(stalePaths(root)).toEqual([{ file: 'src/a.ts', line: 3, named: 'src/engine.ts' }]);
    expect(comments('x = "// not a comment"; // yes')).toEqual([{ line: 1, text: '// yes' }]);
    expect(namedPaths('// native/models/yolo_detector.cc and ../src/x.ts, not src/*.ts')).toEqual(['native/models/yolo_detector.cc']);
  });
});
