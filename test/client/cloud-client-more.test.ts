// The rest of today's CloudClient (npm @openhands/typescript-client 1.39.0, unchanged) against
// the service: its secrets methods, the git searches against a fake GitHub on 127.0.0.1, the
// device flow (startDeviceFlow, then pollForToken while the user approves), and the automation
// methods, which answer the "not available" they are documented to here; and a team
// organisation chosen with the client's orgId (X-Org-Id on every call). Each checks what the
// client hands its caller.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, startTestApp, type TestApp } from '../helpers/app.js';
import { startFakeGitHub } from '../helpers/fake-providers/github.js';
import type { FakeProvider } from '../helpers/fake-providers/server.js';
import { loadTsClient, type TsClient } from '../helpers/ts-client.js';

let app: TestApp;
let github: FakeProvider;
let ts: TsClient;
let key: string;
let client: any;

beforeAll(async () => {
  ts = await loadTsClient();
  github = await startFakeGitHub();
  github.validTokens.add('ghp_cloud_client');
  app = await startTestApp('cloud-client-more', {
    GITHUB_API_URL: github.url,
    DEVICE_CODE_INTERVAL_SECONDS: '1',
    ADMIN_USERS: 'cloud-more',
  });
  key = await app.keyFor('cloud-more');
  client = new ts.CloudClient({ host: app.url, apiKey: key, timeout: 30_000 });
}, 180_000);
afterAll(async () => {
  await app?.stop();
  await github?.close();
});

/** The HttpError a client call throws. */
async function refusal(promise: Promise<unknown>): Promise<{ status: number; response: unknown }> {
  const error = await promise.then(
    () => null,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(ts.HttpError);
  return error as unknown as { status: number; response: unknown };
}

describe('CloudClient 1.39.0: secrets', () => {
  it('createSecret, listSecrets (names only, every page), updateSecret (rename), deleteSecret', async () => {
    for (let i = 0; i < 3; i++) await client.createSecret(`TOKEN_${i}`, `value-${i}`, `secret ${i}`);
    const listed = await client.listSecrets();
    expect(listed.map((s: { name: string }) => s.name)).toEqual(['TOKEN_0', 'TOKEN_1', 'TOKEN_2']);
    expect(JSON.stringify(listed)).not.toContain('value-');
    await client.updateSecret('TOKEN_1', 'RENAMED', 'renamed one');
    await client.deleteSecret('TOKEN_2');
    expect((await client.listSecrets()).map((s: { name: string; description: string }) => [s.name, s.description])).toEqual([
      ['RENAMED', 'renamed one'],
      ['TOKEN_0', 'secret 0'],
    ]);
    // The value stayed with the secret through the rename.
    const user = (await app.server.deps.services.apiKeys.authenticateApiKey(key))!.userId;
    expect((await app.server.deps.services.secrets.resolve(user)).find((s) => s.name === 'RENAMED')?.value).toBe('value-1');
    expect((await refusal(client.createSecret('TOKEN_0', 'again', ''))).status).toBe(400);
  });
});

describe('CloudClient 1.39.0: a team organisation', () => {
  it('with orgId set: lists it as current, reads the role, acts in it, keeps the profiles at the organisation path', async () => {
    const created = await call(app, 'POST', '/api/organizations', { key, body: { name: 'Client Team' } });
    const orgId = created.body.id as string;
    const mateKey = await app.keyFor('cloud-mate');
    await call(app, 'POST', '/api/v1/settings', { key: mateKey, body: { email: 'mate@example.com' } });
    const invited = await call(app, 'POST', `/api/organizations/${orgId}/members/invite`, {
      key,
      body: { emails: ['mate@example.com'], role: 'admin' },
    });
    const token = new URL(invited.body.successful[0].invite_url).searchParams.get('token');
    await call(app, 'POST', '/api/organizations/members/invite/accept', { key: mateKey, body: { token } });

    const mate = new ts.CloudClient({ host: app.url, apiKey: mateKey, timeout: 30_000, orgId });
    const orgs = await mate.getOrganizations();
    expect(orgs.items.map((o: { id: string; is_personal: boolean }) => [o.id, o.is_personal])).toEqual([
      ['cloud-mate', true],
      [orgId, false],
    ]);
    expect(await mate.getOrganizationMe(orgId)).toMatchObject({ orgId, userId: 'cloud-mate', role: 'admin' });
    expect((await mate.getOrganizationMe(orgId)).permissions).toContain('edit_org_settings');
    expect(await mate.getCurrentApiKey()).toMatchObject({ org_id: orgId, bound_org_id: null });
    // With the organisation's LLM set by its owner, the member's settings show it (their conversations there use it), never the key.
    await call(app, 'PATCH', `/api/organizations/${orgId}/settings`, {
      key,
      body: { agent_settings_diff: { llm: { model: 'openai/gpt-4o', api_key: 'sk-client-team' } } },
    });
    const settings = await mate.getSettingsWithDerivedFields();
    expect(settings).toMatchObject({ llm_api_key_set: true, agent_settings: { llm: { model: 'openai/gpt-4o', api_key: null } } });
    expect(JSON.stringify(settings)).not.toContain('sk-client-team');
    const personal = new ts.CloudClient({ host: app.url, apiKey: mateKey, timeout: 30_000 });
    expect((await personal.getSettingsWithDerivedFields()).llm_api_key_set).toBe(false);
    await mate.saveProfile('team-fast', { llm: { model: 'openai/gpt-4o-mini', api_key: 'sk-team-profile' } });
    expect((await mate.listProfiles()).profiles.map((p: { name: string }) => p.name)).toEqual(['team-fast']);
    // Not a member: the client gets the HttpError.
    const stranger = new ts.CloudClient({ host: app.url, apiKey: await app.keyFor('cloud-stranger'), timeout: 30_000, orgId });
    expect((await refusal(stranger.getOrganizationMe(orgId))).status).toBe(404);
    expect((await refusal(stranger.getCurrentApiKey())).status).toBe(403);
  });
});

describe('CloudClient 1.39.0: git searches', () => {
  beforeAll(async () => {
    const stored = await call(app, 'POST', '/api/v1/secrets/git-providers', {
      headers: { authorization: `Bearer ${key}` },
      body: { provider_tokens: { github: { token: 'ghp_cloud_client' } } },
    });
    expect(stored.status).toBe(200);
  });

  it('getInstallations, searchRepositories, getRepositoryBranches, getSuggestedTasks', async () => {
    const installations = await client.getInstallations({ provider: 'github' });
    expect(installations.items.length).toBeGreaterThan(0);
    const repositories = await client.searchRepositories({ provider: 'github', limit: 5 });
    expect(repositories.items).toHaveLength(5);
    expect(repositories.items[0]).toMatchObject({ full_name: expect.stringContaining('/'), git_provider: 'github' });
    expect(repositories.next_page_id).not.toBeNull();
    const repository = repositories.items[0].full_name as string;
    const branches = await client.getRepositoryBranches({ provider: 'github', repository });
    expect(branches.items.length).toBeGreaterThan(0);
    expect(branches.items[0]).toMatchObject({ name: expect.any(String) });
    const tasks = await client.getSuggestedTasks();
    expect(Array.isArray(tasks.items)).toBe(true);
    // Another user, without a token: the client throws the provider failure, not a crash.
    const stranger = new ts.CloudClient({ host: app.url, apiKey: await app.keyFor('cloud-stranger'), timeout: 30_000 });
    expect((await refusal(stranger.searchRepositories({ provider: 'github' }))).status).toBe(401);
  });
});

describe('CloudClient 1.39.0: the device flow', () => {
  it('startDeviceFlow, then pollForToken gets an API key once the user approves it', async () => {
    const anonymous = new ts.CloudClient({ host: app.url, apiKey: '', timeout: 30_000 });
    const started = await anonymous.startDeviceFlow();
    expect(started).toMatchObject({
      device_code: expect.any(String),
      user_code: expect.any(String),
      verification_uri: `${app.url}/oauth/device`,
      verification_uri_complete: expect.stringContaining(encodeURIComponent(started.user_code).slice(0, 4)),
      interval: 1,
    });
    const polling = anonymous.pollForToken(started.device_code, { interval: started.interval });
    // The user approves on the verification page (here its form, with the user's key).
    const approved = await call(app, 'POST', '/oauth/device/verify-authenticated', {
      rawBody: new URLSearchParams({ user_code: started.user_code, action: 'approve' }).toString(),
      headers: { 'x-session-api-key': key, 'content-type': 'application/x-www-form-urlencoded' },
    });
    expect(approved.status).toBe(200);
    const token = await polling;
    expect(token.access_token).toMatch(/^ohk_/);
    const device = new ts.CloudClient({ host: app.url, apiKey: token.access_token, timeout: 30_000 });
    expect(await device.getCurrentApiKey()).toMatchObject({ user_id: 'cloud-more' });
  });
});

describe('CloudClient 1.39.0: automations', () => {
  it('answers every automation method with "not available" (404 saying so), and its health as not ok', async () => {
    for (const call of [
      () => client.listAutomations(),
      () => client.getAutomation('a1'),
      () => client.updateAutomation('a1', { name: 'x' }),
      () => client.deleteAutomation('a1'),
      () => client.dispatchAutomation('a1'),
      () => client.listAutomationRuns('a1'),
      () => client.downloadAutomationTarball('a1'),
    ]) {
      const refused = await refusal(call());
      expect(refused.status).toBe(404);
      expect(JSON.stringify(refused.response)).toContain('not available');
    }
    const health = await client.getAutomationHealth();
    expect(health.status).not.toBe('ok');
  });
});
