import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    globalSetup: ['test/helpers/global-setup.ts'],
    testTimeout: 30_000,
    hookTimeout: 240_000, // the first run builds FerretDB from the Go module proxy
    pool: 'forks',
    // Most test time is spent waiting on real processes (agent servers, FerretDB, chromium), not
    // on the CPU: three files at a time on the 2-core CI machine. Each file has its own database,
    // data folder and ports, so files never share state.
    maxWorkers: 3,
    reporters: ['default', './test/helpers/summary-reporter.ts'],
  },
});
