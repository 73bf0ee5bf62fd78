// What today's clients read on start-up whatever they do next, through the procedures
// (createCaller, no HTTP): the write-only LLM key, the one personal organisation (another user's
// absent), the LLM profiles under it, automations "not available", the web client's
// configuration, the model, provider and skill searches, and the user record with secrets
// hidden. The key's own record, the credentials these routes take (a browser session, a sandbox
// key beside expose_secrets) and their statuses are in test/rest/account-routes.test.ts.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { refusal, startTestDomain, type TestDomain } from '../helpers/domain.js';

const LLM_KEY = 'sk-alice-llm-5d1e2f';
const MCP_KEY = 'mcp-alice-key-0c9b';
const PROFILE_KEY = 'sk-alice-profile-8f7e';

let domain: TestDomain;
const alice = () => domain.as('alice');
const bob = () => domain.as('bob');

beforeAll(async () => {
  domain = await startTestDomain('account');
  await alice().settingsV1.save({
    agent_settings_diff: {
      llm: { model: 'anthropic/claude-sonnet-4-5', api_key: LLM_KEY, base_url: 'https://llm.example' },
      mcp_config: { shttp_servers: [{ url: 'https://mcp.example/mcp', api_key: MCP_KEY, timeout: 30 }] },
    },
    email: 'alice@example.com',
  });
  await alice().settingsV1.profilesSave({ name: 'fast', llm: { model: 'openai/gpt-4o-mini', api_key: PROFILE_KEY } });
});
afterAll(() => domain?.stop());

describe('the start-up procedures', () => {
  it('hand out no BYOR key: the stored LLM key is write-only', async () => {
    expect(await alice().account.byorKey()).toEqual({ key: null });
  });

  it("list one personal organisation per user; another user's is absent (NOT_FOUND)", async () => {
    expect(await alice().organizations.list({})).toEqual({
      items: [{ id: 'alice', name: 'alice', is_personal: true, contact_name: '', contact_email: '', created_at: null }],
      next_page_id: null,
      current_org_id: 'alice',
    });
    const me = await alice().organizations.me({ org_id: 'alice' });
    expect(me).toMatchObject({ org_id: 'alice', user_id: 'alice', role: 'owner', email: 'alice@example.com' });
    expect(me.permissions).toContain('edit_org_settings');
    expect(await refusal(bob().organizations.me({ org_id: 'alice' }))).toMatchObject({
      code: 'NOT_FOUND',
      reason: 'organization_not_found',
    });
    expect(await refusal(bob().organizations.profilesList({ org_id: 'alice' } as never))).toMatchObject({
      code: 'NOT_FOUND',
      reason: 'organization_not_found',
    });
    expect(await alice().organizations.providerConnections({ org_id: 'alice' })).toEqual({ connections: [] });
  });

  it('serve the LLM profiles under the personal organisation too (where Agent Canvas goes once it picked it)', async () => {
    // The organisation's procedures take its org_id beside the plain input (typed for REST clients).
    const list = await alice().organizations.profilesList({ org_id: 'alice' } as never);
    expect(list.profiles).toEqual([{ name: 'fast', model: 'openai/gpt-4o-mini', base_url: null, api_key_set: true }]);
    const detail = await alice().organizations.profilesGet({ org_id: 'alice', name: 'fast' } as never);
    expect(detail).toMatchObject({ llm: { model: 'openai/gpt-4o-mini', api_key: null }, config: { api_key: null } });
    expect(JSON.stringify(detail)).not.toContain(PROFILE_KEY);
    expect(await bob().settingsV1.profilesList({})).toEqual({ profiles: [], active_profile: null });
  });

  it('say automations are not available, in the answer Agent Canvas reads as "unhealthy" without retrying', async () => {
    expect(await alice().account.automationHealth()).toMatchObject({ status: 'error' });
    expect(await alice().account.automationSdkVersion()).toMatchObject({ sdk_version: null, version: null });
  });

  it('give the web client configuration, model and provider searches a page at a time, and an empty skill page', async () => {
    expect(await alice().account.webClientConfig()).toMatchObject({
      app_mode: 'oss',
      feature_flags: { enable_automations: false },
      providers_configured: [],
    });
    const openhands = await alice().account.searchModels({ limit: 100, provider__eq: 'openhands' });
    expect(openhands.items.length).toBeGreaterThan(3);
    expect(openhands.items.every((m) => m.provider === 'openhands' && m.verified)).toBe(true);
    const page1 = await alice().account.searchModels({ limit: 5 });
    const page2 = await alice().account.searchModels({ limit: 5, page_id: page1.next_page_id });
    expect(page1.items).toHaveLength(5);
    expect(page2.items[0]).not.toEqual(page1.items[0]);
    const providers = await alice().account.searchProviders({ limit: 100 });
    expect(providers.items.map((p) => p.name)).toEqual(expect.arrayContaining(['anthropic', 'openai', 'openhands']));
    expect(await refusal(alice().account.searchModels({ limit: 101 }))).toMatchObject({ code: 'BAD_REQUEST', paths: [['limit']] });
    expect(await alice().account.searchSkills({ limit: 100 })).toEqual({ items: [], next_page_id: null });
  });
});

describe('the user record (users.me)', () => {
  it('answers any user, even before settings exist', async () => {
    expect(await domain.as('carol').users.me({})).toMatchObject({ id: 'carol', llm_model: null, llm_api_key: null, mcp_config: null });
  });

  it('gives the flat and nested settings with secrets hidden', async () => {
    const me = await alice().users.me({});
    expect(me).toMatchObject({
      id: 'alice',
      llm_model: 'anthropic/claude-sonnet-4-5',
      llm_base_url: 'https://llm.example',
      llm_api_key: null,
      llm_api_key_set: true,
      agent_settings: { llm: { model: 'anthropic/claude-sonnet-4-5', api_key: null } },
      llm_profiles: { profiles: { fast: { model: 'openai/gpt-4o-mini', api_key: null } } },
    });
    expect(me.mcp_config?.shttp_servers).toEqual([{ url: 'https://mcp.example/mcp', api_key: '**********', timeout: 30 }]);
    for (const secret of [LLM_KEY, MCP_KEY, PROFILE_KEY]) expect(JSON.stringify(me)).not.toContain(secret);
    expect(await bob().users.me({})).toMatchObject({ id: 'bob', llm_model: null, llm_profiles: { profiles: {} } });
  });
});
