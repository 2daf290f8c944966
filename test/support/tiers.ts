// Which tier a test file runs in (vitest.config.ts), read from what the file uses, so a new file lands in the
// right one without a list to keep:
// - system: it spawns a server or the CLI, or drives a real Redis, InfluxDB, HAProxy, Prometheus or chromium;
// - engine: it opens an engine or runs a model in process (onnxruntime-node): one file at a time, engines shared
//   across files;
// - unit: neither (files run in parallel).
// A file whose first lines hold `// Tier: engine` (or unit, system) is in that tier whatever it uses: one that runs
// models through models/ rather than onnxruntime-node directly says so.
import fs from 'node:fs';

export type Tier = 'unit' | 'engine' | 'system';

const SYSTEM = /server-process\.js|redis-server\.js|influxd\.js|\/fleet\.js|playwright-core|dist\/src\/cli\.js|support\/cli\.js/;
const ENGINE = /\b(openEngine|sharedEngine)\(|\bEngine\.open\(|from 'onnxruntime-node'/;

const OVERRIDE = /^\/\/ Tier: (unit|engine|system)\b/m;

export function tierOfSource(source: string): Tier {
  const named = OVERRIDE.exec(source.slice(0, 2000))?.[1] as Tier | undefined;
  if (named) return named;
  if (SYSTEM.test(source)) return 'system';
  if (ENGINE.test(source)) return 'engine';
  return 'unit';
}

/** The test files of `dir` (relative paths, as vitest's include takes them) in `tier`. */
export function testFilesOf(dir: string, tier: Tier): string[] {
  return fs
    .readdirSync(dir)
    .filter((f) => f.endsWith('.test.ts'))
    .filter((f) => tierOfSource(fs.readFileSync(`${dir}/${f}`, 'utf8')) === tier)
    .map((f) => `${dir}/${f}`);
}
