// The suite's tiers (test/support/tiers.ts, vitest.config.ts): each test file is in exactly one, read from what it
// uses, so that a file opening an engine never runs among the parallel unit files, and a spawned server never
// shares the engine tier's worker.
// Tier: unit (its sources name engines and servers only as strings to classify)
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT } from './helpers.js';
import { testFilesOf, tierOfSource } from './support/tiers.js';

describe('tiers', () => {
  it('puts every test file in exactly one tier', () => {
    const all = fs
      .readdirSync(path.join(ROOT, 'test'))
      .filter((f) => f.endsWith('.test.ts'))
      .map((f) => `test/${f}`)
      .sort();
    const tiers = (['unit', 'engine', 'system'] as const).map((t) => testFilesOf(path.join(ROOT, 'test'), t).map((f) => path.relative(ROOT, f)));
    expect(tiers.flat().sort()).toEqual(all);
    for (const tier of tiers) expect(tier.length).toBeGreaterThan(0);
  });

  it('reads the tier from what a file uses, and from its own line', () => {
    expect(tierOfSource("import { parse } from '../src/config.js';")).toBe('unit');
    expect(tierOfSource('engine = await openEngine({ workers: 1 });')).toBe('engine');
    expect(tierOfSource('engine = await sharedEngine();')).toBe('engine');
    expect(tierOfSource('const e = await Engine.open({});')).toBe('engine');
    expect(tierOfSource("import * as ort from 'onnxruntime-node';")).toBe('engine');
    expect(tierOfSource("import { startServerProcess } from '../testkit/server-process.js';\nawait openEngine();")).toBe('system');
    expect(tierOfSource("import { chromium } from 'playwright-core';")).toBe('system');
    expect(tierOfSource("spawn(process.execPath, [path.join(ROOT, 'dist/src/cli.js'), 'serve']);")).toBe('system');
    expect(tierOfSource('// what it checks\n// Tier: engine (it runs a model through models/)\nimport x from "y";')).toBe('engine');
    expect(tierOfSource('// Tier: unit\nawait openEngine();')).toBe('unit');
  });
});
