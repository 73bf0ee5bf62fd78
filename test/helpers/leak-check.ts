// Runs around every test file (vitest.config.ts setupFiles). Files of the parallel group share
// their worker's process, so a service a file leaves running would go on (timers, sandboxes,
// connections) under the files after it: a file must stop every test app it starts.
import { afterAll } from 'vitest';
import { liveTestApps } from './app.js';

const before = new Set(liveTestApps.keys());

afterAll(() => {
  const left = [...liveTestApps].filter(([token]) => !before.has(token)).map(([, label]) => label);
  if (left.length > 0) throw new Error(`test apps left running (stop them in afterAll): ${left.join(', ')}`);
});
