import path from 'node:path';
import { defineConfig } from 'vitest/config';
import { cacheRoot } from './src/config/config-values.js';

// Tests bound to real timing, run two at a time after the others: a database killed and
// restarted against a clock, or a real agent server driven end to end, some through a browser
// (Agent Canvas in chromium, one file per sign-in so that its two runs take both workers).
// Beside the busy first group they failed in 2 of 4 fresh-clone runs; three at a time slowed
// each: docs/testing.md. The start tasks (a start killed mid-way among them) run in the first
// group: they wait for events, not for time, and kept the second group's two workers busy.
const serialFiles = ['test/reliability/database-outage.test.ts', 'test/e2e/**/*.test.ts', 'test/browser/agent-canvas-*.test.ts'];

export default defineConfig({
  // Vitest's results (each file's last duration: the longest files start first) are kept outside
  // the checkout, so a fresh clone orders its files as a warm one does (about 30 s shorter).
  cacheDir: path.join(cacheRoot(), 'vite'),
  test: {
    // Each worker's transformed modules, kept by content outside the checkout too: a warm run
    // transforms almost nothing (the files' summed transform time 6.5 → 1.6 s on 40 files).
    experimental: { fsModuleCache: true, fsModuleCachePath: path.join(cacheRoot(), 'vitest-modules') },
    globalSetup: ['test/helpers/global-setup.ts'],
    setupFiles: ['test/helpers/leak-check.ts'],
    testTimeout: 30_000,
    hookTimeout: 240_000, // the first run builds FerretDB from the Go module proxy
    pool: 'forks',
    reporters: ['default', './test/helpers/summary-reporter.ts'],
    projects: [
      {
        extends: true,
        // Most test time waits on real processes (the 2-core machine's load stays under 1 with one
        // file at a time), so four files share it: with three, stretches where all three waited
        // left the cores idle (a fresh-clone run 310 s against 293 s with four; four had been the
        // slower when the suite spent a third more CPU: docs/testing.md).
        test: {
          name: 'parallel',
          // A worker's files share its module cache: each file imported the whole service anew
          // (131 of CI's 540 s). The source keeps no state in its modules (every test app builds its
          // own services), and no file of this group mocks a module or leaves fake timers behind.
          isolate: false,
          include: ['test/**/*.test.ts'],
          exclude: serialFiles,
          maxWorkers: 4,
          sequence: { groupOrder: 0 },
        },
      },
      {
        extends: true,
        // Its files, too, share each worker's module cache (none mocks a module or fakes timers).
        test: { name: 'serial', include: serialFiles, isolate: false, maxWorkers: 2, sequence: { groupOrder: 1 } },
      },
    ],
  },
});
