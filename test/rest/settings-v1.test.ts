// The 2026 settings (/api/v1/settings) over the same document as V0 /api/settings: what
// Agent Canvas, the CloudClient and the CLI read (the nested shape, the *_set flags, the form
// schemas, the profiles), the deep merge of the diffs, and the refusals.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, startTestApp, type TestApp } from '../helpers/app.js';

let app: TestApp;
const LLM_KEY = 'sk-v1-llm-key-4b8e1d';
const PROFILE_KEY = 'sk-profile-key-93c0aa';

beforeAll(async () => {
  app = await startTestApp('settings-v1');
});
afterAll(() => app.stop());

const user = async (name: string) => {
  const key = await app.keyFor(`${name}-${Math.random().toString(36).slice(2, 8)}`);
  const as = (method: string, path: string, body?: unknown) =>
    call(app, method, path, { headers: { authorization: `Bearer ${key}` }, ...(body === undefined ? {} : { body }) });
  return { key, as };
};

describe('GET/POST /api/v1/settings', () => {
  it('answers the defaults before the first save (V0 /api/settings keeps its 404), and stores nothing for it', async () => {
    const { key, as } = await user('fresh');
    const fresh = await as('GET', '/api/v1/settings');
    expect(fresh.status).toBe(200);
    expect(fresh.body).toMatchObject({
      agent_settings: { agent_kind: 'openhands', llm: { model: null, api_key: null, base_url: null } },
      llm_api_key_set: false,
      search_api_key_set: false,
      provider_tokens_set: {},
      llm_profiles: { profiles: {} },
      active_agent_profile_id: null,
    });
    expect(await call(app, 'GET', '/api/settings', { key })).toMatchObject({ status: 404, body: { error: 'Settings not found' } });
  });

  it('stores the diffs in the V0 fields: both shapes read the same values, the key is never returned', async () => {
    const { key, as } = await user('nested');
    const saved = await as('POST', '/api/v1/settings', {
      agent_settings_diff: { llm: { model: 'anthropic/claude-sonnet-4-5', api_key: LLM_KEY, base_url: null, temperature: 0.2 } },
      conversation_settings_diff: { max_iterations: 50, confirmation_mode: true },
      language: 'de',
    });
    expect(saved).toMatchObject({ status: 200, body: { message: 'Settings stored' } });
    const v1 = (await as('GET', '/api/v1/settings')).body;
    expect(v1.agent_settings).toMatchObject({
      agent_kind: 'openhands',
      llm: { model: 'anthropic/claude-sonnet-4-5', api_key: null, base_url: null, temperature: 0.2 },
      condenser: { enabled: true, max_size: null },
    });
    expect(v1.conversation_settings).toEqual({ max_iterations: 50, confirmation_mode: true, security_analyzer: null });
    expect(v1).toMatchObject({ language: 'de', llm_api_key_set: true, search_api_key_set: false, provider_tokens_set: {} });
    expect(v1).not.toHaveProperty('llm_model');
    const v0 = (await call(app, 'GET', '/api/settings', { key })).body;
    expect(v0).toMatchObject({
      llm_model: 'anthropic/claude-sonnet-4-5',
      max_iterations: 50,
      confirmation_mode: true,
      llm_api_key_set: true,
    });
    expect(JSON.stringify(await app.rawCollection('settings').find({}).toArray())).not.toContain(LLM_KEY);
    // A V0 save shows in the nested shape at once.
    await call(app, 'POST', '/api/settings', { key, body: { llm_model: 'openai/gpt-4o', security_analyzer: 'invariant' } });
    const after = (await as('GET', '/api/v1/settings')).body;
    expect(after.agent_settings.llm.model).toBe('openai/gpt-4o');
    expect(after.conversation_settings.security_analyzer).toBe('invariant');
  });

  it('deep-merges each diff: what a diff leaves out keeps its value; null goes back to the default', async () => {
    const { as } = await user('merge');
    await as('POST', '/api/v1/settings', { agent_settings_diff: { llm: { model: 'openai/gpt-4.1', api_key: LLM_KEY, top_p: 0.9 } } });
    await as('POST', '/api/v1/settings', { agent_settings_diff: { llm: { temperature: 0.5, top_p: null }, condenser: { max_size: 80 } } });
    await as('POST', '/api/v1/settings', { conversation_settings_diff: { confirmation_mode: false } });
    const { agent_settings, conversation_settings, llm_api_key_set } = (await as('GET', '/api/v1/settings')).body;
    expect(agent_settings.llm).toEqual({ model: 'openai/gpt-4.1', api_key: null, base_url: null, temperature: 0.5 });
    expect(agent_settings.condenser).toEqual({ enabled: true, max_size: 80 });
    expect(conversation_settings.confirmation_mode).toBe(false);
    expect(llm_api_key_set).toBe(true);
    // The key: null keeps it (as V0), "" clears it.
    await as('POST', '/api/v1/settings', { agent_settings_diff: { llm: { api_key: null } } });
    expect((await as('GET', '/api/v1/settings')).body.llm_api_key_set).toBe(true);
    await as('POST', '/api/v1/settings', { agent_settings_diff: { llm: { api_key: '' } } });
    expect((await as('GET', '/api/v1/settings')).body.llm_api_key_set).toBe(false);
  });

  it('replaces mcp_config wholesale and masks its credentials', async () => {
    const { as } = await user('mcp');
    const first = { sse_servers: [{ url: 'https://mcp.example/sse', api_key: 'mcp-secret-1' }], stdio_servers: [], shttp_servers: [] };
    await as('POST', '/api/v1/settings', { agent_settings_diff: { mcp_config: first } });
    const read = (await as('GET', '/api/v1/settings')).body;
    expect(read.agent_settings.mcp_config.sse_servers).toEqual([{ url: 'https://mcp.example/sse', api_key: '**********' }]);
    expect(read.mcp_config).toEqual(read.agent_settings.mcp_config);
    const second = { stdio_servers: [{ name: 'fs', command: 'npx', args: ['-y', 'server-filesystem'] }] };
    await as('POST', '/api/v1/settings', { agent_settings_diff: { mcp_config: second } });
    const replaced = (await as('GET', '/api/v1/settings')).body.agent_settings.mcp_config;
    expect(replaced).toEqual({
      sse_servers: [],
      shttp_servers: [],
      stdio_servers: [{ name: 'fs', command: 'npx', args: ['-y', 'server-filesystem'], env: {} }],
    });
    expect(JSON.stringify(await app.rawCollection('settings').find({}).toArray())).not.toContain('mcp-secret-1');
  });

  it('refuses agent_settings / conversation_settings sent directly with 422 naming the keys, and stores nothing', async () => {
    const { key, as } = await user('legacy');
    const res = await as('POST', '/api/v1/settings', { conversation_settings: { max_iterations: 3 }, agent_settings: {}, language: 'fr' });
    expect(res).toMatchObject({
      status: 422,
      body: { error: 'Use *_diff nested settings payloads instead of legacy keys', keys: ['agent_settings', 'conversation_settings'] },
    });
    expect((await call(app, 'GET', '/api/settings', { key })).status).toBe(404); // nothing stored
    expect((await as('GET', '/api/v1/settings')).body.language).toBeNull();
  });

  it.each([
    ['an unknown key in a diff', { agent_settings_diff: { llm: { custom_header: 'x' } } }, ['body', 'agent_settings_diff', 'llm']],
    ['a wrong type', { conversation_settings_diff: { max_iterations: 'many' } }, ['body', 'conversation_settings_diff', 'max_iterations']],
    [
      'a choice outside the list',
      { conversation_settings_diff: { security_analyzer: 'magic' } },
      ['body', 'conversation_settings_diff', 'security_analyzer'],
    ],
    ['an ACP agent', { agent_settings_diff: { agent_kind: 'acp' } }, ['body', 'agent_settings_diff', 'agent_kind']],
    [
      'a condenser too small',
      { agent_settings_diff: { condenser: { max_size: 5 } } },
      ['body', 'agent_settings_diff', 'condenser', 'max_size'],
    ],
  ])('answers %s with a 422 in the contract shape', async (_label, body, loc) => {
    const { as } = await user('bad');
    const res = await as('POST', '/api/v1/settings', body);
    expect(res.status).toBe(422);
    expect(res.body.detail[0].loc.slice(0, loc.length)).toEqual(loc);
  });

  it('ignores top-level keys outside the contract (clients echo read-only ones), as the reference does', async () => {
    const { as } = await user('echo');
    expect((await as('POST', '/api/v1/settings', { llm_api_key_set: true, git_full_clone: true, disabled_skills: ['x'] })).status).toBe(
      200,
    );
    expect((await as('GET', '/api/v1/settings')).body).toMatchObject({
      git_full_clone: true,
      disabled_skills: ['x'],
      llm_api_key_set: false,
    });
  });
});

describe('the form schemas', () => {
  it('serve the agent SDK settings-schema format with the fields a save accepts', async () => {
    const { as } = await user('schema');
    const agent = (await as('GET', '/api/v1/settings/agent-schema')).body;
    expect(agent.model_name).toBe('AgentSettings');
    const fields = agent.sections.flatMap((s: { fields: { key: string }[] }) => s.fields);
    expect(fields.find((f: { key: string }) => f.key === 'llm.api_key')).toMatchObject({
      secret: true,
      value_type: 'string',
      section: 'llm',
    });
    expect(fields.find((f: { key: string }) => f.key === 'llm.model')).toMatchObject({ prominence: 'critical', section_label: 'LLM' });
    const conversation = (await as('GET', '/api/v1/settings/conversation-schema')).body;
    expect(conversation.model_name).toBe('ConversationSettings');
    const analyzer = conversation.sections
      .flatMap((s: { fields: object[] }) => s.fields)
      .find((f: { key: string }) => f.key === 'security_analyzer');
    expect(analyzer.choices).toContainEqual({ value: 'llm', label: 'llm' });
    expect(analyzer.depends_on).toEqual(['confirmation_mode']);
  });
});

describe('LLM profiles', () => {
  it('save (201), list, get, activate, rename and delete, never returning a key', async () => {
    const { key, as } = await user('profiles');
    const llm = { model: 'anthropic/claude-opus-4-1-20250805', api_key: PROFILE_KEY, temperature: 0.1 };
    expect(await as('POST', '/api/v1/settings/profiles/opus', { llm })).toMatchObject({
      status: 201,
      body: { name: 'opus', message: "Profile 'opus' saved" },
    });
    expect(await as('POST', '/api/v1/settings/profiles/cheap', { llm: { model: 'openai/gpt-4o-mini' } })).toMatchObject({ status: 201 });
    expect((await as('GET', '/api/v1/settings/profiles')).body).toEqual({
      profiles: [
        { name: 'opus', model: 'anthropic/claude-opus-4-1-20250805', base_url: null, api_key_set: true },
        { name: 'cheap', model: 'openai/gpt-4o-mini', base_url: null, api_key_set: false },
      ],
      active_profile: null,
    });
    const detail = (await as('GET', '/api/v1/settings/profiles/opus')).body;
    expect(detail).toMatchObject({ name: 'opus', api_key_set: true, config: { model: llm.model, api_key: null, temperature: 0.1 } });
    const activated = await as('POST', '/api/v1/settings/profiles/opus/activate', {});
    expect(activated.body).toMatchObject({ name: 'opus', model: llm.model });
    const settings = (await as('GET', '/api/v1/settings')).body;
    expect(settings.agent_settings.llm).toMatchObject({ model: llm.model, api_key: null, temperature: 0.1 });
    expect(settings).toMatchObject({ llm_api_key_set: true, llm_profiles: { active: 'opus', profiles: { opus: { api_key: null } } } });
    // The profile's key became the settings' key, as the agents receive it.
    expect((await app.server.deps.services.settings.resolve(await userIdOf(key)))!.llm_api_key).toBe(PROFILE_KEY);
    expect(await as('POST', '/api/v1/settings/profiles/opus/rename', { new_name: 'cheap' })).toMatchObject({ status: 409 });
    expect(await as('POST', '/api/v1/settings/profiles/opus/rename', { new_name: 'best' })).toMatchObject({
      status: 200,
      body: { name: 'best' },
    });
    expect((await as('GET', '/api/v1/settings/profiles')).body.active_profile).toBe('best');
    // An LLM changed by hand is no longer the profile's.
    await as('POST', '/api/v1/settings', { agent_settings_diff: { llm: { temperature: 0.7 } } });
    expect((await as('GET', '/api/v1/settings/profiles')).body.active_profile).toBeNull();
    expect(await as('DELETE', '/api/v1/settings/profiles/best')).toMatchObject({ status: 200, body: { name: 'best' } });
    expect(await as('DELETE', '/api/v1/settings/profiles/best')).toMatchObject({ status: 200 });
    expect(await as('GET', '/api/v1/settings/profiles/best')).toMatchObject({ status: 404, body: { detail: "Profile 'best' not found" } });
    expect(JSON.stringify(await app.rawCollection('settings').find({}).toArray())).not.toContain(PROFILE_KEY);
  });

  it('saves the current settings LLM when no llm is sent, and refuses names outside the pattern', async () => {
    const { as } = await user('snapshot');
    expect(await as('POST', '/api/v1/settings/profiles/now', {})).toMatchObject({ status: 404, body: { error: 'Settings not found' } });
    await as('POST', '/api/v1/settings', { agent_settings_diff: { llm: { model: 'gemini/gemini-2.5-pro', api_key: LLM_KEY } } });
    expect((await as('POST', '/api/v1/settings/profiles/now', {})).status).toBe(201);
    expect((await as('GET', '/api/v1/settings/profiles/now')).body).toMatchObject({
      api_key_set: true,
      config: { model: 'gemini/gemini-2.5-pro' },
    });
    expect((await as('POST', '/api/v1/settings/profiles/bad%20name', {})).status).toBe(422);
    expect((await as('POST', '/api/v1/settings/profiles/x', { llm: { model: 'm', surprise: 1 } })).status).toBe(422);
  });

  it("accepts Agent Canvas's LLM-form keys at their defaults (an API key: nothing stored), refuses other values with 422", async () => {
    const { as } = await user('canvas-form');
    const form = { auth_type: 'api_key', subscription_vendor: null, provider_connection_id: null };
    const llm = { model: 'openai/stub-model', base_url: 'http://127.0.0.1:9/v1', api_key: LLM_KEY, ...form };
    expect((await as('POST', '/api/v1/settings', { agent_settings_diff: { llm } })).status).toBe(200);
    expect((await as('POST', '/api/v1/settings/profiles/canvas', { llm })).status).toBe(201);
    const detail = (await as('GET', '/api/v1/settings/profiles/canvas')).body;
    expect(detail.config).toMatchObject({ model: 'openai/stub-model', base_url: 'http://127.0.0.1:9/v1' });
    expect((await as('GET', '/api/v1/settings')).body.agent_settings.llm).toMatchObject({ model: 'openai/stub-model' });
    for (const key of Object.keys(form)) {
      expect(detail.config).not.toHaveProperty(key);
      expect((await as('GET', '/api/v1/settings')).body.agent_settings.llm).not.toHaveProperty(key);
    }
    for (const unsupported of [{ auth_type: 'subscription' }, { subscription_vendor: 'openai' }, { provider_connection_id: 'conn-1' }]) {
      expect((await as('POST', '/api/v1/settings/profiles/other', { llm: { model: 'm', ...unsupported } })).status).toBe(422);
      expect((await as('POST', '/api/v1/settings', { agent_settings_diff: { llm: unsupported } })).status).toBe(422);
    }
    expect((await as('GET', '/api/v1/settings/profiles/other')).status).toBe(404);
  });

  it('stops at ten profiles (409), as the reference does', async () => {
    const { as } = await user('limit');
    for (let i = 0; i < 10; i++) expect((await as('POST', `/api/v1/settings/profiles/p${i}`, { llm: { model: 'm' } })).status).toBe(201);
    expect(await as('POST', '/api/v1/settings/profiles/p10', { llm: { model: 'm' } })).toMatchObject({ status: 409 });
    expect((await as('POST', '/api/v1/settings/profiles/p3', { llm: { model: 'other' } })).status).toBe(201);
  });
});

async function userIdOf(key: string): Promise<string> {
  return (await app.server.deps.services.apiKeys.authenticateApiKey(key))!.userId;
}
