// What the process runtime does when it cannot isolate sandboxes (no bubblewrap, or no pasta, here:
// BWRAP_PATH or PASTA_PATH names a program that does not exist): by default it starts none (fail
// closed); SANDBOX_ISOLATION=none (a single-user deployment, said by the operator) starts them;
// SANDBOX_ISOLATION=bubblewrap refuses to start the service at all. With bubblewrap, each sandbox
// gets a uid of its own and its folder belongs to it.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/config.js';
import { generateKeyText } from '../../src/crypto.js';
import { createLogger } from '../../src/logger.js';
import { sandboxUid } from '../../src/sandbox/isolation/isolation.js';
import { detectLimitEnforcer } from '../../src/sandbox/isolation/limits.js';
import { ProcessSandboxRuntime } from '../../src/sandbox/process/process-runtime.js';
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

async function appWith(label: string, env: Record<string, string>, dbName?: string): Promise<TestApp> {
  const app = await startTestApp(label, { SANDBOX_SPECS_FILE: specsFile, ...env }, dbName ? { dbName } : {});
  apps.push(app);
  return app;
}

const startSandbox = (app: TestApp, key: string) => call(app, 'POST', '/api/v1/sandboxes', { key, body: {} });

describe('without isolation', () => {
  for (const [missing, env] of [
    ['bubblewrap', { BWRAP_PATH: NO_BWRAP }],
    ['pasta', { PASTA_PATH: NO_BWRAP }],
  ] as const) {
    it(`starts and resumes no sandbox for anyone without ${missing}, answering 503 with what is missing`, async () => {
      const app = await appWith(`closed-${missing}`, env);
      for (const user of ['alice', 'bob']) {
        const refused = await startSandbox(app, await app.keyFor(user));
        expect(refused.status).toBe(503);
        expect(refused.body.detail).toMatch(
          new RegExp(`cannot be isolated on this machine \\(.*${missing === 'pasta' ? 'pasta' : 'bwrap'}.*\\), so none starts`),
        );
      }
      // Nothing half-written: no record of a refused start.
      expect(await app.rawCollection('sandboxes').countDocuments({})).toBe(0);
    });
  }

  it('resumes no sandbox either: the runtime holds the gate, on every launch', async () => {
    const rootDir = fs.mkdtempSync(path.join(tmp, 'resume-'));
    fs.mkdirSync(path.join(rootDir, 'a1b2'), { recursive: true }); // a sandbox paused while isolation worked
    const runtime = new ProcessSandboxRuntime({
      rootDir,
      cacheDir: tmp,
      startupTimeoutMs: 5_000,
      agentServerVersion: '1.58.0',
      isolation: { kind: 'none', declaredSingleUser: false, reason: 'bubblewrap is not available (test)' },
      limits: { enforcer: await detectLimitEnforcer(createLogger('silent'), { cgroups: [] }), defaults: loadConfig({}).sandbox.limits },
      servicePort: () => null,
      hostPorts: [],
      log: createLogger('silent'),
    });
    const spec = { ...FAKE_AGENT_SPEC, initial_env: {} };
    const launch = {
      sandboxId: 'a1b2',
      userId: 'dora',
      spec,
      sessionApiKey: 'k',
      secretKey: 'sealing-key'.repeat(43),
      webhookBaseUrl: 'http://127.0.0.1:9/x',
    };
    await expect(runtime.resume(launch)).rejects.toMatchObject({ code: 'SERVICE_UNAVAILABLE', reason: 'sandbox_isolation_unavailable' });
    await expect(runtime.start({ ...launch, sandboxId: 'c3d4' })).rejects.toMatchObject({ reason: 'sandbox_isolation_unavailable' });
    expect(fs.readdirSync(rootDir).filter((f) => !f.startsWith('.'))).toEqual(['a1b2']);
    await runtime.close();
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
