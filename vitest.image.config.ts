import { defineConfig } from 'vitest/config';

// The image's checks (npm run test:image): opt-in, they need the image scripts/image/test-image.mjs builds.
export default defineConfig({
  test: {
    include: ['test/image/**/*.image.ts'],
    testTimeout: 240_000,
    hookTimeout: 300_000,
    fileParallelism: false,
  },
});
