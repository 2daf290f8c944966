// The layers of edgecv's code, written once, and the check that every import and #include points down them.
// A file may import files of its own layer or of any layer below; a layer is a list of paths (a folder ends
// in '/'), matched longest first, so a file in no layer is reported too.

import fs from 'node:fs';
import path from 'node:path';

export interface Layer {
  name: string;
  paths: readonly string[];
}

/** TypeScript under src/, top to bottom. */
export const TS_LAYERS: readonly Layer[] = [
  { name: 'commands', paths: ['src/cli.ts', 'src/commands/', 'src/client/', 'src/console/'] },
  { name: 'server', paths: ['src/server/', 'src/config.ts'] },
  { name: 'services', paths: ['src/gallery/', 'src/metrics/', 'src/auth/', 'src/audit/'] },
  { name: 'engine library', paths: ['src/index.ts', 'src/engine/'] },
  { name: 'base', paths: ['src/sqlite.ts', 'src/base64.ts', 'src/address-group.ts'] },
];

/** The addon's C++ under native/, top to bottom (fuzz/ is its own program, over jobs and models). */
export const NATIVE_LAYERS: readonly Layer[] = [
  { name: 'bindings', paths: ['native/bindings/', 'native/gallery/gallery_object.', 'native/checks/', 'native/fuzz/'] },
  { name: 'jobs and pool', paths: ['native/jobs/', 'native/pipelines/', 'native/pool/', 'native/gallery/'] },
  { name: 'models', paths: ['native/models/'] },
  { name: 'image', paths: ['native/image/'] },
  { name: 'runtimes and ops', paths: ['native/runtime/', 'native/ops/'] },
];

export interface Violation {
  file: string;
  imports: string;
  why: string;
}

/** The layer index of a repository-relative path (0 = top), or -1 when no layer holds it. */
export function layerOf(layers: readonly Layer[], file: string): number {
  let best = -1;
  let bestLength = -1;
  layers.forEach((layer, i) => {
    for (const p of layer.paths) {
      if ((p.endsWith('/') || p.endsWith('.') ? file.startsWith(p) : file === p) && p.length > bestLength) {
        best = i;
        bestLength = p.length;
      }
    }
  });
  return best;
}

const TS_SPECIFIER = /(?:\bfrom\s*|\bimport\s*\(\s*|^\s*import\s+)['"](\.{1,2}\/[^'"]+)['"]/gm;
const INCLUDE = /^\s*#\s*include\s+"([^"]+)"/gm;

/** Repository-relative targets of a source's relative imports (TS) or quoted includes (C++, from native/). */
export function importsOf(file: string, text: string): string[] {
  if (file.endsWith('.ts')) {
    return [...text.matchAll(TS_SPECIFIER)].map((m) =>
      path.posix.normalize(path.posix.join(path.posix.dirname(file), m[1]!)).replace(/\.js$/, '.ts'),
    );
  }
  return [...text.matchAll(INCLUDE)].map((m) => `native/${m[1]!}`);
}

/** Every import of `files` (path -> text) that points up the layers, or leaves them. */
export function layerViolations(layers: readonly Layer[], files: ReadonlyMap<string, string>): Violation[] {
  const out: Violation[] = [];
  for (const [file, text] of files) {
    const from = layerOf(layers, file);
    if (from < 0) {
      out.push({ file, imports: '', why: 'is in no layer' });
      continue;
    }
    for (const target of importsOf(file, text)) {
      const to = layerOf(layers, target);
      if (to < 0) {
        if (target.startsWith('src/') || target.startsWith('native/')) out.push({ file, imports: target, why: 'is in no layer' });
        else out.push({ file, imports: target, why: `reaches outside its tree (${layers[from]!.name})` });
      } else if (to < from) {
        out.push({ file, imports: target, why: `${layers[from]!.name} imports ${layers[to]!.name}, a layer above it` });
      }
    }
  }
  return out;
}

/** The sources under `dir` (repository-relative) with one of `extensions`, read. */
export function readSources(root: string, dir: string, extensions: readonly string[]): Map<string, string> {
  const files = new Map<string, string>();
  for (const entry of fs.readdirSync(path.join(root, dir), { recursive: true, encoding: 'utf8' })) {
    const rel = path.posix.join(dir, entry.split(path.sep).join('/'));
    if (extensions.some((e) => rel.endsWith(e))) files.set(rel, fs.readFileSync(path.join(root, rel), 'utf8'));
  }
  return files;
}

/** A module a file starts as a program of its own: `new URL('./rss-probe.js', import.meta.url)` (a child or a worker). */
const STARTED = /new URL\(\s*['"](\.{1,2}\/[^'"]+)['"],\s*import\.meta\.url\s*\)/g;

/**
 * The files of `files` (path -> text) that no entry point reaches through imports and the modules it starts: for
 * bench/, what no runner runs.
 */
export function unreached(files: ReadonlyMap<string, string>, entries: readonly string[]): string[] {
  const seen = new Set<string>();
  const todo = [...entries];
  for (let file = todo.pop(); file !== undefined; file = todo.pop()) {
    if (seen.has(file) || !files.has(file)) continue;
    seen.add(file);
    const text = files.get(file)!;
    const started = [...text.matchAll(STARTED)].map((m) =>
      path.posix.normalize(path.posix.join(path.posix.dirname(file), m[1]!)).replace(/\.js$/, '.ts'),
    );
    todo.push(...importsOf(file, text), ...started);
  }
  return [...files.keys()].filter((f) => !seen.has(f));
}
