// Source files and functions too long to hold in the head: no file over 450 lines and no function over 80 lines in
// src/, native/ and models/. TypeScript functions are found by the TypeScript compiler's own parse (tsconfig.json's
// program); C++ function definitions in .cc files by a brace-matching scan. Used by code-size.test.ts.

import fs from 'node:fs';
import path from 'node:path';
import { API } from 'typescript/unstable/sync';
import { SyntaxKind, type Node, type SourceFile } from 'typescript/unstable/ast';
import { computeLineStarts, skipTrivia } from 'typescript/unstable/ast/scanner';

export const MAX_FILE_LINES = 450;
export const MAX_FUNCTION_LINES = 80;

/** The folders whose sources the limits hold for. */
export const CHECKED_DIRS = ['src', 'native', 'models'];
const SOURCE = /\.(ts|mts|mjs|cc|h|cpp)$/;
const SKIPPED_DIRS = new Set(['node_modules', 'onnx', 'calibration', 'dist', 'build']);

export interface LongFunction {
  /** Where it starts: the line of its name (1-based). */
  line: number;
  name: string;
  lines: number;
}

export interface Offender {
  file: string;
  line: number;
  /** 'file' for a whole file, else the function's name. */
  what: string;
  lines: number;
  limit: number;
}

/** `file:line what (N lines, limit L)`: how a test names an offender. */
export function describeOffender(o: Offender): string {
  return `${o.file}:${o.line} ${o.what === 'file' ? 'file' : `function ${o.what}`} is ${o.lines} lines (limit ${o.limit})`;
}

/** Lines of a file as `wc -l` counts them (a last line without a newline counts too). */
export function lineCount(text: string): number {
  if (text.length === 0) return 0;
  return text.split('\n').length - (text.endsWith('\n') ? 1 : 0);
}

const FUNCTION_KINDS = new Set<SyntaxKind>([
  SyntaxKind.FunctionDeclaration,
  SyntaxKind.FunctionExpression,
  SyntaxKind.ArrowFunction,
  SyntaxKind.MethodDeclaration,
  SyntaxKind.Constructor,
  SyntaxKind.GetAccessor,
  SyntaxKind.SetAccessor,
]);

/** A function's name: its own, the variable or property it is assigned to, or '<anonymous>'. */
function functionName(node: Node): string {
  const own = (node as { name?: { text?: string } }).name?.text;
  if (own) return own;
  if (node.kind === SyntaxKind.Constructor) return 'constructor';
  const parent = node.parent as { kind?: SyntaxKind; name?: { text?: string } } | undefined;
  if (
    parent?.kind === SyntaxKind.VariableDeclaration ||
    parent?.kind === SyntaxKind.PropertyAssignment ||
    parent?.kind === SyntaxKind.PropertyDeclaration
  ) {
    return parent.name?.text ?? '<anonymous>';
  }
  return '<anonymous>';
}

/** Every function of a parsed file longer than `max` lines, counted from its first token to its last. */
export function longTsFunctions(sourceFile: SourceFile, max = MAX_FUNCTION_LINES): LongFunction[] {
  const text = sourceFile.text;
  const starts = computeLineStarts(text);
  const lineOf = (pos: number) => {
    let lo = 0;
    let hi = starts.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (starts[mid]! <= pos) lo = mid;
      else hi = mid - 1;
    }
    return lo + 1;
  };
  const found: LongFunction[] = [];
  const visit = (node: Node): void => {
    if (FUNCTION_KINDS.has(node.kind) && (node as { body?: Node }).body) {
      const first = lineOf(skipTrivia(text, node.pos));
      const lines = lineOf(Math.max(node.end - 1, node.pos)) - first + 1;
      if (lines > max) found.push({ line: first, name: functionName(node), lines });
    }
    node.forEachChild(visit);
  };
  sourceFile.forEachChild(visit);
  return found;
}

/** Each TypeScript file's long functions, parsed as one program by the TypeScript compiler (a tsconfig.json in `root`). */
export function longTsFunctionsIn(root: string, files: string[], max = MAX_FUNCTION_LINES): Map<string, LongFunction[]> {
  const api = new API({ cwd: root });
  try {
    const snapshot = api.updateSnapshot({ openProjects: [path.join(root, 'tsconfig.json')] });
    const program = snapshot.getProjects()[0]?.program;
    if (!program) throw new Error(`no TypeScript project in ${root}/tsconfig.json`);
    const out = new Map<string, LongFunction[]>();
    for (const file of files) {
      const sourceFile = program.getSourceFile(path.join(root, file));
      if (!sourceFile) throw new Error(`${file} is not in ${root}/tsconfig.json's program`);
      out.set(file, longTsFunctions(sourceFile, max));
    }
    return out;
  } finally {
    api.close();
  }
}

/** C++ text with comments, string and character literals and preprocessor lines blanked (newlines kept). */
export function cppCode(text: string): string {
  const blank = (s: string) => s.replace(/[^\n]/g, ' ');
  const re = /\/\/[^\n]*|\/\*[\s\S]*?\*\/|R"([^(\s]*)\([\s\S]*?\)\1"|"(?:\\.|[^"\\\n])*"|'(?:\\.|[^'\\\n])*'|^[ \t]*#(?:[^\n]*\\\n)*[^\n]*/gm;
  return text.replace(re, blank);
}

type Scope = 'namespace' | 'class' | 'function' | 'block';

/** What a `{` opens, from the code between the previous `;`, `{` or `}` and it, at namespace or class scope. */
function scopeOf(header: string): Scope {
  const h = header.replace(/\s+/g, ' ').trim();
  if (/^(inline )?namespace\b|^extern "C"|^extern\s*$/.test(h)) return 'namespace';
  if (/^(template ?<.*> ?)?(class|struct|union)\b/.test(h) && !h.includes('(')) return 'class';
  if (/^(typedef )?enum\b/.test(h)) return 'block';
  // a definition: a parameter list, and no '=' before it (an initialized variable or a lambda)
  const paren = h.indexOf('(');
  if (paren > 0 && !h.slice(0, paren).includes('=') && !/^(if|for|while|switch|catch|do|else|return)\b/.test(h)) return 'function';
  return 'block';
}

/** The name of a function definition: the (qualified) name before its parameter list. */
function cppName(header: string): string {
  const h = header.replace(/\s+/g, ' ').trim();
  const paren = h.search(/\((?![^(]*\boperator\b)/);
  const m = /((?:[\w~]+::)*(?:operator\s*\S+?|[\w~]+))\s*$/.exec(h.slice(0, paren));
  return m?.[1] ?? '<anonymous>';
}

/**
 * Every function defined in a C++ file longer than `max` lines (from the line of its name to its closing brace).
 * Braces of a constructor's member initializers (`x_{y}`) are not taken for its body.
 */
export function longCppFunctions(text: string, max = MAX_FUNCTION_LINES): LongFunction[] {
  const code = cppCode(text);
  const lineAt = (pos: number) => code.slice(0, pos).split('\n').length;
  const stack: { scope: Scope; start: number; name: string }[] = [];
  const found: LongFunction[] = [];
  let headerStart = 0;
  for (let i = 0; i < code.length; i++) {
    const c = code[i];
    const inFunction = stack.some((s) => s.scope === 'function' || s.scope === 'block');
    if (c === ';' || (c === ':' && !inFunction && /\b(public|private|protected)\s*$/.test(code.slice(headerStart, i)))) {
      if (!inFunction) headerStart = i + 1;
    } else if (c === '{') {
      if (inFunction) {
        stack.push({ scope: 'block', start: i, name: '' });
        continue;
      }
      const header = code.slice(headerStart, i);
      // inside a constructor's initializer list, `member_{...}` is an initializer: skip to its closing brace
      if (/\)\s*:[^:]/.test(header) && /[\w>]\s*$/.test(header) && !/\b(const|override|final|noexcept)\s*$/.test(header)) {
        i = matchingBrace(code, i);
        continue;
      }
      const scope = scopeOf(header);
      const nameAt = headerStart + (header.length - header.trimStart().length);
      stack.push({ scope, start: nameAt, name: scope === 'function' ? cppName(header) : '' });
      headerStart = i + 1;
    } else if (c === '}') {
      const open = stack.pop();
      if (open?.scope === 'function') {
        const first = lineAt(open.start);
        const lines = lineAt(i) - first + 1;
        if (lines > max) found.push({ line: first, name: open.name, lines });
      }
      if (!stack.some((s) => s.scope === 'function' || s.scope === 'block')) headerStart = i + 1;
    }
  }
  return found;
}

function matchingBrace(code: string, open: number): number {
  let depth = 0;
  for (let i = open; i < code.length; i++) {
    if (code[i] === '{') depth++;
    else if (code[i] === '}' && --depth === 0) return i;
  }
  return code.length;
}

function sourceFiles(root: string, dir: string, out: string[] = []): string[] {
  const full = path.join(root, dir);
  if (!fs.existsSync(full)) return out;
  for (const e of fs.readdirSync(full, { withFileTypes: true })) {
    if (e.name.startsWith('.') || SKIPPED_DIRS.has(e.name)) continue;
    const rel = path.join(dir, e.name);
    if (e.isDirectory()) sourceFiles(root, rel, out);
    else if (SOURCE.test(e.name)) out.push(rel);
  }
  return out;
}

/** Every file over MAX_FILE_LINES and every function over MAX_FUNCTION_LINES in `root`'s checked folders. */
export function codeSizeOffenders(root: string): Offender[] {
  const files = CHECKED_DIRS.flatMap((d) => sourceFiles(root, d)).sort();
  const offenders: Offender[] = [];
  for (const file of files) {
    const lines = lineCount(fs.readFileSync(path.join(root, file), 'utf8'));
    if (lines > MAX_FILE_LINES) offenders.push({ file, line: 1, what: 'file', lines, limit: MAX_FILE_LINES });
  }
  const long = (file: string, fns: LongFunction[]) =>
    fns.map((f): Offender => ({ file, line: f.line, what: f.name, lines: f.lines, limit: MAX_FUNCTION_LINES }));
  const tsFiles = files.filter((f) => /\.(ts|mts)$/.test(f));
  for (const [file, fns] of longTsFunctionsIn(root, tsFiles)) offenders.push(...long(file, fns));
  for (const file of files.filter((f) => /\.(cc|cpp)$/.test(f)))
    offenders.push(...long(file, longCppFunctions(fs.readFileSync(path.join(root, file), 'utf8'))));
  return offenders.sort((a, b) => a.file.localeCompare(b.file) || a.line - b.line);
}
