// Sandbox-scoped secrets as the SDK's cloud workspace and the agent server's LookupSecret read
// them: names as JSON, one value as text/plain, with nothing but the sandbox's own session key,
// and only while that sandbox runs. Over real HTTP with the fake agent server in process
// sandboxes; another user's key, another sandbox's key and a paused sandbox's key open nothing.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, startTestApp, type TestApp } from '../helpers/app.js';
import { eventually } from '../helpers/eventually.js';
import { startFakeGitProvider, type FakeGitProvider } from '../helpers/fake-git-provider.js';
import { sandboxRunning } from '../helpers/real-sandbox.js';
import { FAKE_AGENT_SPEC, writeSpecsFile } from '../helpers/specs.js';

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'acp-sandbox-secrets-'));
const logLines: string[] = [];
let app: TestApp;
let provider: FakeGitProvider;
let alice: string;
let bob: string;
let aliceBox: Sandbox;
let aliceOther: Sandbox;
let bobBox: Sandbox;

interface Sandbox {
  id: string;
  session_api_key: string;
}

beforeAll(async () => {
  provider = await startFakeGitProvider();
  provider.validTokens.add('ghp_sandbox_one').add('ghp_sandbox_two');
  app = await startTestApp(
    'sandbox-secrets',
    {
      SANDBOX_SPECS_FILE: writeSpecsFile(tmp, [FAKE_AGENT_SPEC]),
      // The fake agent server starts in well under a second, but three at once on a loaded 2-core
      // machine took over 8 s in one run: the bound is not what this file tests.
      SANDBOX_STARTUP_TIMEOUT_MS: '60000',
      SANDBOX_MAX_RUNNING_PER_USER: '5',
      GITHUB_API_URL: provider.url,
    },
    { logLines },
  );
  alice = await app.keyFor('box-alice');
  bob = await app.keyFor('box-bob');
  await call(app, 'POST', '/api/v1/secrets', {
    ...bearer(alice),
    body: { name: 'NPM_TOKEN', value: 'npm_alice_value', description: 'registry' },
  });
  await call(app, 'POST', '/api/v1/secrets', { ...bearer(alice), body: { name: 'team/deploy', value: 'deploy-value' } });
  await call(app, 'POST', '/api/v1/secrets/git-providers', {
    ...bearer(alice),
    body: { provider_tokens: { github: { token: 'ghp_sandbox_one' } } },
  });
  await call(app, 'POST', '/api/v1/secrets', { ...bearer(bob), body: { name: 'BOB_ONLY', value: 'bob_value' } });
  [aliceBox, aliceOther, bobBox] = await Promise.all([running(alice), running(alice), running(bob)]);
}, 120_000);

afterAll(async () => {
  await app?.stop();
  await provider?.close();
  fs.rmSync(tmp, { recursive: true, force: true });
});

function bearer(key: string) {
  return { headers: { authorization: `Bearer ${key}` } };
}

/** A new sandbox of the user, once RUNNING (what the SDK workspace waits for). */
async function running(key: string): Promise<Sandbox> {
  const started = (await call(app, 'POST', '/api/v1/sandboxes', bearer(key))).body as Sandbox;
  await sandboxRunning(app, key, started.id, 90_000);
  return started;
}

const names = (sandboxId: string, sessionKey?: string, query = '') =>
  call(app, 'GET', `/api/v1/sandboxes/${sandboxId}/settings/secrets${query}`, {
    headers: sessionKey === undefined ? {} : { 'x-session-api-key': sessionKey },
  });
const value = (sandboxId: string, name: string, sessionKey?: string) =>
  call(app, 'GET', `/api/v1/sandboxes/${sandboxId}/settings/secrets/${encodeURIComponent(name)}`, {
    headers: sessionKey === undefined ? {} : { 'x-session-api-key': sessionKey },
  });

describe('sandbox-scoped secrets', () => {
  it("list the owner's custom secrets and git provider tokens by name, never a value", async () => {
    const listed = await names(aliceBox.id, aliceBox.session_api_key);
    expect(listed.status).toBe(200);
    expect(listed.body).toEqual({
      secrets: [
        { name: 'NPM_TOKEN', description: 'registry' },
        { name: 'team/deploy', description: '' },
        { name: 'github_token', description: 'github_token provider token' },
      ],
    });
    expect(listed.text).not.toMatch(/npm_alice_value|deploy-value|ghp_sandbox/);
    // The SDK may name an agent profile; the set is the same.
    expect((await names(aliceBox.id, aliceBox.session_api_key, '?agent_profile_id=default')).body).toEqual(listed.body);
  });

  it('serve one value as text/plain, the provider token as it is now', async () => {
    const npm = await value(aliceBox.id, 'NPM_TOKEN', aliceBox.session_api_key);
    expect(npm).toMatchObject({ status: 200, text: 'npm_alice_value' });
    expect(npm.headers.get('content-type')).toBe('text/plain; charset=utf-8');
    expect(npm.headers.get('cache-control')).toContain('no-store');
    expect((await value(aliceBox.id, 'team/deploy', aliceBox.session_api_key)).text).toBe('deploy-value');
    expect((await value(aliceBox.id, 'github_token', aliceBox.session_api_key)).text).toBe('ghp_sandbox_one');
    await call(app, 'POST', '/api/v1/secrets/git-providers', {
      ...bearer(alice),
      body: { provider_tokens: { github: { token: 'ghp_sandbox_two' } } },
    });
    expect((await value(aliceBox.id, 'github_token', aliceBox.session_api_key)).text).toBe('ghp_sandbox_two');
    expect(await value(aliceBox.id, 'NOPE', aliceBox.session_api_key)).toMatchObject({ status: 404, body: { detail: 'Secret not found' } });
  });

  it("open nothing without the sandbox's own key: none, a user's API key, Bearer alone", async () => {
    for (const request of [() => names(aliceBox.id), () => value(aliceBox.id, 'NPM_TOKEN')]) {
      expect(await request()).toMatchObject({ status: 401, body: { detail: 'X-Session-API-Key header is required' } });
    }
    expect(await names(aliceBox.id, alice)).toMatchObject({ status: 401, body: { detail: 'Invalid session API key' } });
    expect(await value(aliceBox.id, 'NPM_TOKEN', alice)).toMatchObject({ status: 401, body: { detail: 'Invalid session API key' } });
    const withBearer = await call(app, 'GET', `/api/v1/sandboxes/${aliceBox.id}/settings/secrets/NPM_TOKEN`, bearer(alice));
    expect(withBearer).toMatchObject({ status: 401, body: { detail: 'X-Session-API-Key header is required' } });
  });

  it("refuse another sandbox's key, the owner's other sandbox's and another user's, with 403", async () => {
    for (const other of [aliceOther, bobBox]) {
      expect(await names(aliceBox.id, other.session_api_key)).toMatchObject({
        status: 403,
        body: { detail: 'Session API key does not match sandbox' },
      });
      const read = await value(aliceBox.id, 'NPM_TOKEN', other.session_api_key);
      expect(read).toMatchObject({ status: 403, body: { detail: 'Session API key does not match sandbox' } });
      expect(read.text).not.toContain('npm_alice_value');
    }
    // Bob's sandbox sees bob's secrets only.
    expect((await names(bobBox.id, bobBox.session_api_key)).body).toEqual({ secrets: [{ name: 'BOB_ONLY', description: '' }] });
    expect((await value(bobBox.id, 'NPM_TOKEN', bobBox.session_api_key)).status).toBe(404);
  });

  it('stop working the moment the sandbox is paused, and work again once it runs, with its new key only', async () => {
    expect((await call(app, 'POST', `/api/v1/sandboxes/${aliceOther.id}/pause`, { ...bearer(alice), body: {} })).status).toBe(200);
    expect(await names(aliceOther.id, aliceOther.session_api_key)).toMatchObject({
      status: 401,
      body: { detail: 'Invalid session API key' },
    });
    expect((await value(aliceOther.id, 'NPM_TOKEN', aliceOther.session_api_key)).status).toBe(401);
    expect((await call(app, 'POST', `/api/v1/sandboxes/${aliceOther.id}/resume`, { ...bearer(alice), body: {} })).status).toBe(200);
    // A resume gives the sandbox a new session key: the one that leaked before opens nothing.
    const resumed = (await call(app, 'GET', `/api/v1/sandboxes?id=${aliceOther.id}`, bearer(alice))).body[0];
    expect(resumed.session_api_key).not.toBe(aliceOther.session_api_key);
    await eventually('the resumed sandbox to run', async () => (await names(aliceOther.id, resumed.session_api_key)).status === 200);
    expect((await value(aliceOther.id, 'NPM_TOKEN', resumed.session_api_key)).text).toBe('npm_alice_value');
    expect((await names(aliceOther.id, aliceOther.session_api_key)).status).toBe(401);
  });

  it('write no secret value into any log line', () => {
    const text = logLines.join('\n');
    for (const secret of ['npm_alice_value', 'deploy-value', 'ghp_sandbox_one', 'ghp_sandbox_two', 'bob_value']) {
      expect(text).not.toContain(secret);
    }
    for (const box of [aliceBox, aliceOther, bobBox]) expect(text).not.toContain(box.session_api_key);
  });
});
