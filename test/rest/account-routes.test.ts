// The account routes' credentials and statuses: Agent Canvas's health probe (the key's own
// record; a browser session or no credential refused), the CLI's login (200 JSON, 401), and the
// SDK workspace's get_llm / get_mcp_config: secrets open only beside the session key of this
// user's running sandbox (not another user's sandbox, not a paused one). What the start-up
// procedures and the user record answer is tested in test/domain/account.test.ts.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, startTestApp, type TestApp } from '../helpers/app.js';
import { sandboxRunning } from '../helpers/real-sandbox.js';
import { FAKE_AGENT_SPEC } from '../helpers/specs.js';

let app: TestApp;
let alice: string;
let bob: string;
const LLM_KEY = 'sk-alice-llm-5d1e2f';
const MCP_KEY = 'mcp-alice-key-0c9b';
const PROFILE_KEY = 'sk-alice-profile-8f7e';

const bearer = (key: string, extra: Record<string, string> = {}) => ({ headers: { authorization: `Bearer ${key}`, ...extra } });

beforeAll(async () => {
  app = await startTestApp('account', { SANDBOX_STARTUP_TIMEOUT_MS: '10000' }, { specs: [FAKE_AGENT_SPEC] });
  alice = await app.keyFor('alice');
  bob = await app.keyFor('bob');
  await call(app, 'POST', '/api/v1/settings', {
    ...bearer(alice),
    body: {
      agent_settings_diff: {
        llm: { model: 'anthropic/claude-sonnet-4-5', api_key: LLM_KEY, base_url: 'https://llm.example' },
        mcp_config: { shttp_servers: [{ url: 'https://mcp.example/mcp', api_key: MCP_KEY, timeout: 30 }] },
      },
      email: 'alice@example.com',
    },
  });
  await call(app, 'POST', '/api/v1/settings/profiles/fast', {
    ...bearer(alice),
    body: { llm: { model: 'openai/gpt-4o-mini', api_key: PROFILE_KEY } },
  });
});
afterAll(() => app.stop());

async function runningSandbox(key: string): Promise<{ id: string; session_api_key: string }> {
  const started = await call(app, 'POST', '/api/v1/sandboxes', bearer(key, { 'content-type': 'application/json' }));
  expect(started.status).toBe(200);
  return sandboxRunning(app, key, started.body.id, 20_000);
}

describe('GET /api/keys/current (Agent Canvas health probe)', () => {
  it('describes the key the request came with; its org_id is the personal organisation', async () => {
    const res = await call(app, 'GET', '/api/keys/current', bearer(alice));
    const keyId = /^ohk_([0-9A-Za-z]{12})_/.exec(alice)![1];
    expect(res).toMatchObject({
      status: 200,
      body: { id: keyId, user_id: 'alice', org_id: 'alice', bound_org_id: null, auth_type: 'api_key' },
    });
    expect(typeof res.body.name).toBe('string');
    expect(res.text).not.toContain(alice);
  });

  it('answers 400 for a browser session (read as a connected legacy key), 401 without credentials', async () => {
    const signIn = await call(app, 'POST', '/api/auth/session', { body: { api_key: alice } });
    const cookie = signIn.headers.getSetCookie()[0]!.split(';')[0]!;
    expect(await call(app, 'GET', '/api/keys/current', { headers: { cookie } })).toMatchObject({
      status: 400,
      body: { detail: expect.any(String) },
    });
    expect((await call(app, 'GET', '/api/keys/current')).status).toBe(401);
  });
});

describe('GET /api/v1/users/me', () => {
  it('answers any signed-in user with 200 JSON (the CLI reads that as logged in), and a key it does not know with 401', async () => {
    const carol = await app.keyFor('carol');
    const res = await call(app, 'GET', '/api/v1/users/me', bearer(carol));
    expect(res).toMatchObject({ status: 200, body: { id: 'carol', llm_model: null } });
    expect(res.headers.get('content-type')).toMatch(/^application\/json/);
    expect((await call(app, 'GET', '/api/v1/users/me', bearer('ohk_AAAAAAAAAAAA_' + 'A'.repeat(40)))).status).toBe(401);
  });

  it('exposes secrets only beside the session key of a running sandbox of the same user', { timeout: 60_000 }, async () => {
    const mine = await runningSandbox(alice);
    const theirs = await runningSandbox(bob);
    const me = (key: string, headers: Record<string, string>) =>
      call(app, 'GET', '/api/v1/users/me?expose_secrets=true', bearer(key, headers));

    const exposed = await me(alice, { 'x-session-api-key': mine.session_api_key });
    expect(exposed.status).toBe(200);
    expect(exposed.body).toMatchObject({
      llm_model: 'anthropic/claude-sonnet-4-5',
      llm_api_key: LLM_KEY,
      llm_base_url: 'https://llm.example',
      agent_settings: { llm: { api_key: LLM_KEY } },
      llm_profiles: { profiles: { fast: { model: 'openai/gpt-4o-mini', api_key: PROFILE_KEY } } },
    });
    expect(exposed.body.mcp_config.shttp_servers[0].api_key).toBe(MCP_KEY);

    const refused = [
      await me(alice, {}), // no sandbox key
      await me(alice, { 'x-session-api-key': theirs.session_api_key }), // another user's sandbox
      await me(bob, { 'x-session-api-key': mine.session_api_key }), // alice's sandbox beside bob's key
      await me(alice, { 'x-session-api-key': alice }), // a user key is no sandbox key
    ];
    for (const res of refused) {
      expect(res).toMatchObject({ status: 403, body: { detail: expect.any(String) } });
      expect(res.text).not.toContain(LLM_KEY);
    }
    // Without expose_secrets the sandbox key opens the MCP credentials only (the SDK's
    // get_mcp_config configures the agent's MCP servers from them), never the LLM key.
    const mcpOnly = (await call(app, 'GET', '/api/v1/users/me', bearer(alice, { 'x-session-api-key': mine.session_api_key }))).body;
    expect(mcpOnly.llm_api_key).toBeNull();
    expect(mcpOnly.mcp_config.shttp_servers[0].api_key).toBe(MCP_KEY);
    for (const other of [theirs.session_api_key, alice]) {
      const masked = (await call(app, 'GET', '/api/v1/users/me', bearer(alice, { 'x-session-api-key': other }))).body;
      expect(masked.mcp_config.shttp_servers[0].api_key).toBe('**********');
    }

    expect(
      (await call(app, 'POST', `/api/v1/sandboxes/${mine.id}/pause`, bearer(alice, { 'content-type': 'application/json' }))).status,
    ).toBe(200);
    expect((await me(alice, { 'x-session-api-key': mine.session_api_key })).status).toBe(403);
    for (const [key, id] of [
      [alice, mine.id],
      [bob, theirs.id],
    ]) {
      await call(app, 'DELETE', `/api/v1/sandboxes/${id}`, bearer(key!));
    }
  });

  it('answers git-info without a connected provider with 403, not a 401 that reads as signed out', async () => {
    expect(await call(app, 'GET', '/api/v1/users/git-info', bearer(alice))).toMatchObject({
      status: 403,
      body: { detail: expect.any(String) },
    });
  });
});

describe('/api/keys (the user mints and revokes their own keys, in the Cloud’s shapes)', () => {
  it('mints a key shown once, lists it without the key, and revokes it: the key then answers 401', async () => {
    const expires = new Date(Date.now() + 86_400_000).toISOString();
    const created = await call(app, 'POST', '/api/keys', { ...bearer(alice), body: { name: 'ci', expires_at: expires } });
    expect(created.status).toBe(200);
    expect(created.body).toEqual({
      id: expect.stringMatching(/^[0-9A-Za-z]{12}$/),
      name: 'ci',
      key: expect.stringMatching(/^ohk_/),
      created_at: expect.any(String),
      last_used_at: null,
      expires_at: expires,
      org_id: null,
    });
    const minted = created.body.key as string;
    expect((await call(app, 'GET', '/api/keys/current', bearer(minted))).body).toMatchObject({ id: created.body.id, name: 'ci' });

    const listed = await call(app, 'GET', '/api/keys', bearer(alice));
    expect(listed.status).toBe(200);
    expect(listed.body.find((k: { id: string }) => k.id === created.body.id)).toMatchObject({ name: 'ci', expires_at: expires });
    expect(JSON.stringify(listed.body)).not.toContain(minted);
    // Bob sees none of Alice's keys and cannot revoke them.
    expect((await call(app, 'GET', '/api/keys', bearer(bob))).body.map((k: { id: string }) => k.id)).not.toContain(created.body.id);
    const refused = await call(app, 'DELETE', `/api/keys/${created.body.id}`, bearer(bob));
    expect(refused.status).toBe(404);
    expect(refused.body).toEqual({ detail: 'API key not found' });
    expect((await call(app, 'GET', '/api/keys/current', bearer(minted))).status).toBe(200);

    const deleted = await call(app, 'DELETE', `/api/keys/${created.body.id}`, bearer(alice));
    expect(deleted.status).toBe(200);
    expect(deleted.body).toEqual({ message: 'API key deleted successfully' });
    expect((await call(app, 'GET', '/api/keys/current', bearer(minted))).status).toBe(401);
    expect((await call(app, 'GET', '/api/keys', bearer(alice))).body.map((k: { id: string }) => k.id)).not.toContain(created.body.id);
    expect((await call(app, 'DELETE', `/api/keys/${created.body.id}`, bearer(alice))).status).toBe(404);
  });

  it('refuses an expiry already past (422) and a request without credentials (401)', async () => {
    const past = await call(app, 'POST', '/api/keys', { ...bearer(alice), body: { expires_at: '2020-01-01T00:00:00Z' } });
    expect(past.status).toBe(422);
    expect(JSON.stringify(past.body)).toContain('Expiration date cannot be in the past');
    expect((await call(app, 'POST', '/api/keys', { body: {} })).status).toBe(401);
    expect((await call(app, 'GET', '/api/keys', {})).status).toBe(401);
  });
});

describe('/api/audit/events (the audit log, for ADMIN_USERS: "default" here)', () => {
  it('lists and exports as JSON lines who did what, to an administrator only', async () => {
    const admin = await app.keyFor('default');
    const value = 'audit-rest-secret-5c1d';
    expect((await call(app, 'POST', '/api/secrets', { ...bearer(alice), body: { name: 'AUDITED', value } })).status).toBe(201);

    const refused = await call(app, 'GET', '/api/audit/events/search', bearer(alice));
    expect(refused.status).toBe(403);
    expect(refused.body).toEqual({ detail: 'Only administrators read the audit log' });
    expect((await call(app, 'GET', '/api/audit/events/export', bearer(alice))).status).toBe(403);

    const found = await call(app, 'GET', '/api/audit/events/search?action=secrets.create&limit=5', bearer(admin));
    expect(found.status).toBe(200);
    expect(found.body.items[0]).toMatchObject({ action: 'secrets.create', outcome: 'ok', via: 'rest', target: { name: 'AUDITED' } });

    const exported = await call(app, 'GET', '/api/audit/events/export?action=secrets.create', bearer(admin));
    expect(exported.status).toBe(200);
    expect(exported.headers.get('content-type')).toBe('application/x-ndjson; charset=utf-8');
    const lines = exported.text
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line));
    expect(lines[0]).toEqual(found.body.items[0]);
    expect(exported.text).not.toContain(value);
    expect((await call(app, 'GET', '/api/audit/events/search?since=yesterday', bearer(admin))).status).toBe(422);
  });
});
