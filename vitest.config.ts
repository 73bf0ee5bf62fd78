import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    globalSetup: ['test/helpers/global-setup.ts'],
    testTimeout: 30_000,
    hookTimeout: 240_000, // the first run builds FerretDB from the Go module proxy
    pool: 'forks',
    reporters: ['default', './test/helpers/summary-reporter.ts'],
  },
});
