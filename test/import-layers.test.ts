// The code's layers point one way (test/support/import-layers.ts writes the order once): no TypeScript import under
// src/ and no #include under native/ reaches a layer above its own, every file is in a layer, and no bench, tool or
// shared harness imports test code, nor a test a bench or tool; every file under bench/ is run by `npm run bench`,
// `npm run fuzz` or `npm run soak` (a one-off experiment leaves the tree). The checkers are also run on made-up
// trees, so they can fail.

import { describe, expect, it } from 'vitest';
import { importsOf, layerViolations, NATIVE_LAYERS, readSources, TS_LAYERS, unreached } from './support/import-layers.js';
import { ROOT } from './helpers.js';

/** The programs of bench/ the npm scripts run (package.json: bench, fuzz, soak). */
const BENCH_RUNNERS = ['bench/run.ts', 'bench/fuzz/fuzz.ts', 'bench/fuzz/soak.ts'];

const shown = (v: { file: string; imports: string; why: string }) => `${v.file} -> ${v.imports || '(itself)'}: ${v.why}`;

describe('layers', () => {
  it('src/ imports only its own layer and the ones below', () => {
    expect(layerViolations(TS_LAYERS, readSources(ROOT, 'src', ['.ts'])).map(shown)).toEqual([]);
  });

  it('native/ includes only its own layer and the ones below', () => {
    expect(layerViolations(NATIVE_LAYERS, readSources(ROOT, 'native', ['.cc', '.h'])).map(shown)).toEqual([]);
  });

  it('bench/, tools/ and testkit/ import nothing from test/, and test/ nothing from bench/ or tools/ (what they share lives in testkit/)', () => {
    const reaching = (dir: string, below: string[]) =>
      [...readSources(ROOT, dir, ['.ts'])].flatMap(([file, text]) =>
        importsOf(file, text)
          .filter((t) => below.some((b) => t.startsWith(b)))
          .map((t) => `${file} -> ${t}`),
      );
    expect([...reaching('bench', ['test/']), ...reaching('tools', ['test/']), ...reaching('testkit', ['test/', 'bench/', 'tools/'])]).toEqual([]);
    expect(reaching('test', ['bench/', 'tools/'])).toEqual([]);
  });

  it('bench/ holds only what npm run bench, fuzz and soak run: every file is reached from their entry points', () => {
    expect(unreached(readSources(ROOT, 'bench', ['.ts']), BENCH_RUNNERS)).toEqual([]);
  });

  it('names a bench file no runner reaches, and follows a module started by URL', () => {
    const bench = new Map([
      ['bench/run.ts', "import { a } from './a.js';"],
      ['bench/a.ts', "const probe = new URL('./probe.js', import.meta.url);"],
      ['bench/probe.ts', ''],
      ['bench/one-off.ts', "import { a } from './a.js';"],
    ]);
    expect(unreached(bench, ['bench/run.ts'])).toEqual(['bench/one-off.ts']);
  });

  it('names an upward import, a file in no layer and an import out of the tree', () => {
    const ts = new Map([
      ['src/engine/engine.ts', "import { GalleryIndex } from '../gallery/gallery-index.js';\nimport { x } from './limits.js';"],
      ['src/gallery/recognition-service.ts', "import type { Engine } from '../engine/engine.js';\nconst m = await import('../server/app.js');"],
      ['src/stray.ts', ''],
      ['src/auth/users.ts', "export { hash } from '../../bench/hash.js';"],
    ]);
    expect(layerViolations(TS_LAYERS, ts).map(shown)).toEqual([
      'src/engine/engine.ts -> src/gallery/gallery-index.ts: engine library imports services, a layer above it',
      'src/gallery/recognition-service.ts -> src/server/app.ts: services imports server, a layer above it',
      'src/stray.ts -> (itself): is in no layer',
      'src/auth/users.ts -> bench/hash.ts: reaches outside its tree (services)',
    ]);
    const native = new Map([
      ['native/pool/job.cc', '#include "bindings/js_errors.h"\n#include "runtime/error_code.h"\n#include <napi.h>'],
      ['native/models/crop.cc', '#include "pool/worker_context.h"'],
    ]);
    expect(layerViolations(NATIVE_LAYERS, native).map(shown)).toEqual([
      'native/pool/job.cc -> native/bindings/js_errors.h: jobs and pool imports bindings, a layer above it',
      'native/models/crop.cc -> native/pool/worker_context.h: models imports jobs and pool, a layer above it',
    ]);
  });
});
