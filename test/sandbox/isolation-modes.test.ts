// What the process runtime does when it cannot isolate sandboxes (no bubblewrap here: BWRAP_PATH
// names a program that does not exist): by default it starts sandboxes for one user at a time;
// SANDBOX_ISOLATION=none (a single-user deployment, said by the operator) starts them for anyone;
// SANDBOX_ISOLATION=bubblewrap refuses to start the service at all. With bubblewrap, each sandbox
// gets a uid of its own and its folder belongs to it.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { generateKeyText } from '../../src/crypto.js';
import { createLogger } from '../../src/logger.js';
import { sandboxUid } from '../../src/sandbox/isolation.js';
import { startServer } from '../../src/server.js';
import { call, startTestApp, testDatabaseUri, uniqueDbName, type TestApp } from '../helpers/app.js';
import { eventually } from '../helpers/eventually.js';
import { FAKE_AGENT_SPEC, writeSpecsFile } from '../helpers/specs.js';

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'acp-isolation-modes-'));
const specsFile = writeSpecsFile(tmp, [FAKE_AGENT_SPEC]);
const NO_BWRAP = path.join(tmp, 'no-such-bwrap');
const apps: TestApp[] = [];

afterAll(async () => {
  for (const app of apps) await app.stop();
  fs.rmSync(tmp, { recursive: true, force: true });
});

async function appWith(label: string, env: Record<string, string>): Promise<TestApp> {
  const app = await startTestApp(label, { SANDBOX_SPECS_FILE: specsFile, ...env });
  apps.push(app);
  return app;
}

const startSandbox = (app: TestApp, key: string) => call(app, 'POST', '/api/v1/sandboxes', { key, body: {} });

describe('without isolation', () => {
  it('starts sandboxes for one user at a time, and for the next once the first has none left', async () => {
    const app = await appWith('one-user', { BWRAP_PATH: NO_BWRAP });
    const [alice, bob] = [await app.keyFor('alice'), await app.keyFor('bob')];
    const first = await startSandbox(app, alice);
    expect(first.status).toBe(200);
    expect((await startSandbox(app, alice)).status).toBe(200);

    const refused = await startSandbox(app, bob);
    expect(refused.status).toBe(503);
    expect(refused.body.detail).toMatch(/cannot be isolated on this machine .*bubblewrap/);
    expect(await app.rawCollection('sandboxes').countDocuments({ userId: 'bob' })).toBe(0);

    const mine = (await call(app, 'GET', '/api/v1/sandboxes/search', { key: alice })).body.items as { id: string }[];
    for (const { id } of mine) expect((await call(app, 'DELETE', `/api/v1/sandboxes/${id}`, { key: alice })).status).toBe(200);
    expect((await startSandbox(app, bob)).status).toBe(200);
    expect((await startSandbox(app, alice)).status).toBe(503);
  });

  it('starts them for anyone when the operator declares the deployment single-user', async () => {
    const app = await appWith('declared', { BWRAP_PATH: NO_BWRAP, SANDBOX_ISOLATION: 'none' });
    expect((await startSandbox(app, await app.keyFor('alice'))).status).toBe(200);
    expect((await startSandbox(app, await app.keyFor('bob'))).status).toBe(200);
  });

  it('refuses to start the service when isolation is required', async () => {
    const config = loadConfig({
      PORT: '0',
      DATA_DIR: path.join(tmp, 'required'),
      MONGODB_URI: testDatabaseUri(uniqueDbName('required')),
      ENCRYPTION_KEY: generateKeyText(),
      LOG_LEVEL: 'silent',
      SANDBOX_ISOLATION: 'bubblewrap',
      BWRAP_PATH: NO_BWRAP,
    });
    await expect(startServer(config, createLogger('silent'))).rejects.toThrow(
      /SANDBOX_ISOLATION=bubblewrap, but sandboxes cannot be isolated here/,
    );
  });
});

describe('with bubblewrap', () => {
  it('gives each sandbox a uid of its own, owning its folder, and keeps the service files out of it', async () => {
    const app = await appWith('uids', {});
    const key = await app.keyFor('carol');
    const ids: string[] = [];
    for (let i = 0; i < 2; i++) ids.push((await startSandbox(app, key)).body.id);
    for (const id of ids) {
      await eventually(
        'the sandbox to run',
        async () => (await call(app, 'GET', `/api/v1/sandboxes?id=${id}`, { key })).body[0].status === 'RUNNING',
      );
      const dir = path.join(app.server.deps.config.dataDir, 'sandboxes', id);
      expect(fs.statSync(dir).uid).toBe(sandboxUid(id));
      expect(fs.statSync(path.join(dir, 'workspace/project')).uid).toBe(sandboxUid(id));
      expect(fs.existsSync(path.join(dir, 'runtime.json'))).toBe(false);
      expect(fs.existsSync(path.join(app.server.deps.config.dataDir, 'sandboxes/.state', id, 'runtime.json'))).toBe(true);
    }
    expect(sandboxUid(ids[0]!)).not.toBe(sandboxUid(ids[1]!));
  });
});
