import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // Starts a throwaway PostgreSQL when WHEREABOUTS_TEST_PG_URL is not set (see the file).
    globalSetup: ['test/pg-global-setup.ts'],
    testTimeout: 60_000,
    hookTimeout: 120_000,
  },
});
