import { defineConfig } from 'vitest/config';

// The arm64 build's checks (npm run test:arm64): opt-in, they need the arm64 server scripts/arm64/test-arm64.mjs builds.
// Emulated by qemu-user: generous timeouts, each still bounded.
export default defineConfig({
  test: {
    include: ['test/arm64/**/*.arm64.ts'],
    testTimeout: 600_000,
    hookTimeout: 900_000,
    fileParallelism: false,
  },
});
