import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    globalSetup: ['test/helpers/global-setup.ts'],
    testTimeout: 30_000,
    hookTimeout: 240_000, // the first run builds FerretDB from the Go module proxy
    pool: 'forks',
    // One file at a time. Three at a time took 423-457 s instead of
    // 794 s, but timing-bound real-process tests (database outage, killed start, agent server
    // 1.1.0's terminal) failed in 2 of 4 fresh-clone runs: docs/testing.md.
    maxWorkers: 1,
    reporters: ['default', './test/helpers/summary-reporter.ts'],
  },
});
