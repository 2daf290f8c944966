import { defineConfig } from 'vitest/config';
import { testFilesOf } from './test/support/tiers.js';

// Three tiers (test/support/tiers.ts says which file is in which), run one after the other (groupOrder):
// - unit: no engine, no server: files in parallel;
// - engine: in-process engines: two files at a time, each worker not reset between files (isolate: false), so
//   sharedEngine() (test/helpers.ts) opens each option set once per worker;
// - system: spawned servers and real Redis, InfluxDB, HAProxy, Prometheus, chromium: two files at a time.
// Two at a time: one file at a time left a core idle 30-50% of the run (vmstat, 2 cores), its time spent waiting on
// servers, sockets and timers; two took vitest from 653 s to 441-484 s (docs/testing.md).
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
          maxWorkers: 2,
          isolate: false,
          sequence: { groupOrder: 1 },
        },
      },
      { test: { ...common, name: 'system', include: testFilesOf('test', 'system'), maxWorkers: 2, sequence: { groupOrder: 2 } } },
    ],
  },
});
