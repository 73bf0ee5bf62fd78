// A stopping service starts no sandbox: its process runtime, once closed (the last step of a
// shutdown), refuses a start that comes late (a start task still under way), so no process is
// left that nothing watches and no shutdown lists.
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { call, startTestApp, type TestApp } from '../helpers/app.js';
import { FAKE_AGENT_SPEC } from '../helpers/specs.js';

let app: TestApp;

beforeAll(async () => {
  app = await startTestApp('closed-runtime', {}, { specs: [FAKE_AGENT_SPEC] });
});

afterAll(() => app.stop());

it('answers 503 to a start once the runtime is closed, and leaves no sandbox behind', async () => {
  const key = await app.keyFor('late-starter');
  const sandboxesDir = path.join(app.server.deps.config.dataDir, 'sandboxes');
  const before = fs.existsSync(sandboxesDir) ? fs.readdirSync(sandboxesDir) : [];
  await app.server.deps.runtime.close();
  const res = await call(app, 'POST', '/api/v1/sandboxes', { key, body: {} });
  expect(res.status, res.text).toBe(503);
  expect(res.body).toMatchObject({ detail: 'The service is shutting down' });
  // Neither a record nor a folder: the failed start removed what it had made.
  expect((await call(app, 'GET', '/api/v1/sandboxes/search', { key })).body.items).toEqual([]);
  expect(fs.existsSync(sandboxesDir) ? fs.readdirSync(sandboxesDir) : []).toEqual(before);
});
