import { defineConfig } from 'vitest/config';
import { testFilesOf } from './test/support/tiers.js';

// Three tiers (test/support/tiers.ts says which file is in which), run one after the other (groupOrder):
// - unit: no engine, no server: files in parallel;
// - engine: in-process engines: one file at a time (inference on two cores only thrashes), in one worker that is
//   not reset between files (isolate: false), so sharedEngine() (test/helpers.ts) opens each option set once;
// - system: spawned servers and real Redis, InfluxDB, HAProxy, Prometheus, chromium: one file at a time.
// `npm run test:unit` (or `vitest run --project unit`) runs one tier.
const common = { testTimeout: 120_000, hookTimeout: 300_000 };

export default defineConfig({
  test: {
    // CI prints each file's time (test/support/file-durations.ts), so the next cut is measured.
    reporters: process.env.CI ? ['default', './test/support/file-durations.ts'] : ['default'],
    projects: [
      { test: { ...common, name: 'unit', include: testFilesOf('test', 'unit'), sequence: { groupOrder: 0 } } },
      {
        test: {
          ...common,
          name: 'engine',
          include: testFilesOf('test', 'engine'),
          fileParallelism: false,
          isolate: false,
          sequence: { groupOrder: 1 },
        },
      },
      { test: { ...common, name: 'system', include: testFilesOf('test', 'system'), fileParallelism: false, sequence: { groupOrder: 2 } } },
    ],
  },
});
