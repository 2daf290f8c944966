import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 120_000,
    hookTimeout: 300_000,
    // One file at a time: inference tests share two cores, parallel files only thrash.
    fileParallelism: false,
  },
});
