// The first sandbox start on a machine without the agent-server install: the request answers
// at once with STARTING (status_reason says what is happening), the real setup script installs
// in the background, and the sandbox then runs, or reads ERROR with why. The interpreter the
// script is given is a small fake (test/fixtures/fake-python.sh): it answers the script's
// probes, "installs" in a few seconds without any network, and runs the fake agent server.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { call, startTestApp, type TestApp } from '../helpers/app.js';
import { eventually } from '../helpers/eventually.js';
import { FIXTURES_DIR } from '../helpers/specs.js';

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'acp-first-use-'));
fs.chmodSync(tmp, 0o755);
const apps: TestApp[] = [];

afterAll(async () => {
  for (const app of apps) await app.stop();
  fs.rmSync(tmp, { recursive: true, force: true });
});

/** A service whose cache holds no agent server, with a fake interpreter that installs in installSeconds. */
async function serviceWithoutInstall(label: string, installSeconds: number, installExit: number) {
  const dir = fs.mkdtempSync(path.join(tmp, `${label}-`));
  // World-readable, as an installed interpreter is: a sandbox runs it under its own uid.
  fs.chmodSync(dir, 0o755);
  // Beside the interpreter, as a real one's files are: an isolated sandbox sees the folders of
  // the interpreter its venv names, not this checkout.
  for (const file of ['fake-python.sh', 'fake-agent-server.mjs', 'fake-agent-git.mjs'])
    fs.copyFileSync(path.join(FIXTURES_DIR, file), path.join(dir, file));
  fs.chmodSync(path.join(dir, 'fake-python.sh'), 0o755);
  // The setup script passes its environment to the interpreter; the fake reads its behaviour there.
  const python = path.join(dir, 'python3.12');
  fs.writeFileSync(
    python,
    `#!/bin/sh\nexport FAKE_SELF='${python}' FAKE_INSTALL_SECONDS=${installSeconds} FAKE_INSTALL_EXIT=${installExit} FAKE_NODE='${process.execPath}'\nexec '${path.join(dir, 'fake-python.sh')}' "$@"\n`,
    { mode: 0o755 },
  );
  const app = await startTestApp(label, {
    AGENT_CP_CACHE_DIR: path.join(dir, 'cache'),
    AGENT_SERVER_PYTHON: python,
    SANDBOX_STARTUP_TIMEOUT_MS: '20000',
  });
  apps.push(app);
  return { app, key: await app.keyFor(`${label}-user`) };
}

async function timedStart(app: TestApp, key: string) {
  const started = Date.now();
  const res = await call(app, 'POST', '/api/v1/sandboxes', { key });
  return { res, ms: Date.now() - started };
}

const sandboxOf = async (app: TestApp, key: string, id: string) => (await call(app, 'GET', `/api/v1/sandboxes?id=${id}`, { key })).body[0];

describe('first sandbox start without the agent-server install', () => {
  it('answers STARTING at once, installs in the background, then runs', async () => {
    const { app, key } = await serviceWithoutInstall('install-ok', 4, 0);
    const { res, ms } = await timedStart(app, key);
    expect(res.status).toBe(200);
    expect(ms).toBeLessThan(4_000); // the install takes 4 s; the answer does not wait for it
    expect(res.body).toMatchObject({ status: 'STARTING', status_reason: expect.stringContaining('Installing the OpenHands agent server') });
    const running = await eventually('the sandbox to run after the install', async () => {
      const info = await sandboxOf(app, key, res.body.id);
      return info.status === 'RUNNING' ? info : null;
    });
    const url = running.exposed_urls[0].url as string;
    expect((await fetch(`${url}/alive`)).status).toBe(200);
    expect((await call(app, 'DELETE', `/api/v1/sandboxes/${res.body.id}`, { key })).status).toBe(200);
  });

  it('reads ERROR with the reason when the background install fails', async () => {
    const { app, key } = await serviceWithoutInstall('install-fails', 2, 1);
    const { res, ms } = await timedStart(app, key);
    expect(res.status).toBe(200);
    expect(ms).toBeLessThan(2_000 + 1_500);
    const failed = await eventually('the sandbox to fail', async () => {
      const info = await sandboxOf(app, key, res.body.id);
      return info.status === 'ERROR' ? info : null;
    });
    expect(failed.status_reason).toMatch(/^Installing the OpenHands agent server failed \(exit 4\)/);
  });

  it('starts nothing for a sandbox deleted while the install runs', async () => {
    const { app, key } = await serviceWithoutInstall('install-deleted', 3, 0);
    const { res } = await timedStart(app, key);
    expect(res.body.status).toBe('STARTING');
    expect((await call(app, 'DELETE', `/api/v1/sandboxes/${res.body.id}`, { key })).status).toBe(200);
    // A second start shares the install and runs once it is done: the deleted one never does.
    const second = await timedStart(app, key);
    await eventually('the second sandbox to run', async () => (await sandboxOf(app, key, second.res.body.id)).status === 'RUNNING');
    expect(await sandboxOf(app, key, res.body.id)).toBeNull();
    const dataDir = app.server.deps.config.dataDir;
    expect(fs.existsSync(path.join(dataDir, 'sandboxes', res.body.id))).toBe(false);
    await call(app, 'DELETE', `/api/v1/sandboxes/${second.res.body.id}`, { key });
  });
});
