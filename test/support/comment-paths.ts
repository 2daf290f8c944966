// Project paths named in code comments (`src/...`, `native/...`, `test/...`, ...), and which of them do not exist:
// a comment that points at a moved or deleted file misleads every reader after. Used by comment-paths.test.ts.

import fs from 'node:fs';
import path from 'node:path';

/** Top-level folders of the project whose files comments name. */
const ROOTS = ['src', 'native', 'test', 'testkit', 'bench', 'tools', 'scripts', 'models', 'web', 'docs', 'deploy'];
/** Folders searched for comments, and the source file endings read. */
const SEARCHED = ['src', 'native', 'test', 'testkit', 'bench', 'tools', 'scripts', 'models', 'web'];
const SOURCE = /\.(ts|mts|mjs|js|cc|h|cpp)$/;
const SKIPPED_DIRS = new Set(['node_modules', 'data', 'onnx', 'dist', 'build']);

export interface StalePath {
  file: string;
  line: number;
  named: string;
}

/** The comments of a source file (// line comments and block comments), with the line each starts on. */
export function comments(text: string): { line: number; text: string }[] {
  const out: { line: number; text: string }[] = [];
  // Strings are skipped so that a '//' inside a URL or a quoted path is not taken for a comment.
  const re = /\/\/[^\n]*|\/\*[\s\S]*?\*\/|'(?:\\.|[^'\\\n])*'|"(?:\\.|[^"\\\n])*"|`(?:\\.|[^`\\])*`/g;
  for (let m = re.exec(text); m; m = re.exec(text)) {
    if (m[0].startsWith('//') || m[0].startsWith('/*')) out.push({ line: text.slice(0, m.index).split('\n').length, text: m[0] });
  }
  return out;
}

/** Project paths a comment names: a root folder, a slash, and a file or folder name (globs and templates skipped). */
export function namedPaths(comment: string): string[] {
  const re = new RegExp(`(?<![\\w./-])(?:${ROOTS.join('|')})/[\\w./-]*[\\w]`, 'g');
  return [...comment.matchAll(re)].map((m) => m[0]).filter((p) => !/[*{}<>$]/.test(p));
}

/** Folders the project makes when it runs (set-up, the bench): a comment may name them and what goes in them. */
const GENERATED = ['bench/results', 'test/data', 'models/onnx'];

/** Whether a named path exists: as written, as the TypeScript source of a compiled .js name, or in a made folder. */
export function pathExists(root: string, named: string): boolean {
  if (GENERATED.some((g) => named === g || named.startsWith(`${g}/`))) return true;
  const full = path.join(root, named);
  if (fs.existsSync(full)) return true;
  return named.endsWith('.js') && fs.existsSync(full.replace(/\.js$/, '.ts'));
}

function sourceFiles(dir: string, out: string[] = []): string[] {
  for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
    if (e.name.startsWith('.') || SKIPPED_DIRS.has(e.name)) continue;
    const full = path.join(dir, e.name);
    if (e.isDirectory()) sourceFiles(full, out);
    else if (SOURCE.test(e.name)) out.push(full);
  }
  return out;
}

/** Every comment in the project's sources that names a project path that does not exist. */
export function stalePaths(root: string): StalePath[] {
  const stale: StalePath[] = [];
  for (const dir of SEARCHED) {
    if (!fs.existsSync(path.join(root, dir))) continue;
    for (const file of sourceFiles(path.join(root, dir))) {
      for (const c of comments(fs.readFileSync(file, 'utf8'))) {
        for (const named of namedPaths(c.text)) {
          if (!pathExists(root, named)) stale.push({ file: path.relative(root, file), line: c.line, named });
        }
      }
    }
  }
  return stale;
}
