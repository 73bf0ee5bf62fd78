// The 2026 settings through the procedures (createCaller, no HTTP), over the same document as
// the V0 settings: the nested shape, the *_set flags, the deep merge of the diffs, MCP replaced
// whole and masked, the refusals (legacy keys, values outside the contract) storing nothing,
// the form schemas, and the LLM profiles (saved, activated into the settings, renamed, limited
// to ten, keys never returned). The statuses and bodies of the same procedures over REST are in
// test/rest/settings.test.ts.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { refusal, startTestDomain, type TestDomain } from '../helpers/domain.js';

const LLM_KEY = 'sk-v1-llm-key-4b8e1d';
const PROFILE_KEY = 'sk-profile-key-93c0aa';

let domain: TestDomain;
beforeAll(async () => {
  domain = await startTestDomain('settings-v1');
});
afterAll(() => domain?.stop());

let counter = 0;
const freshUser = (name: string) => `${name}-${++counter}`;
const storedSettings = (userId: string) => domain.deps.db.models.Settings.collection.find({ userId }).toArray();

describe('the nested settings', () => {
  it('answer the defaults before the first save, and store nothing for it (V0 settings stay NOT_FOUND)', async () => {
    const user = domain.as(freshUser('fresh'));
    expect(await user.settingsV1.get()).toMatchObject({
      agent_settings: { agent_kind: 'openhands', llm: { model: null, api_key: null, base_url: null } },
      llm_api_key_set: false,
      search_api_key_set: false,
      provider_tokens_set: {},
      llm_profiles: { profiles: {} },
      active_agent_profile_id: null,
    });
    expect(await refusal(user.settings.get())).toMatchObject({ code: 'NOT_FOUND', reason: 'settings_not_found' });
  });

  it('store the diffs in the V0 fields: both shapes read the same values, the key is never returned', async () => {
    const id = freshUser('nested');
    const user = domain.as(id);
    expect(
      await user.settingsV1.save({
        agent_settings_diff: { llm: { model: 'anthropic/claude-sonnet-4-5', api_key: LLM_KEY, base_url: null, temperature: 0.2 } },
        conversation_settings_diff: { max_iterations: 50, confirmation_mode: true },
        language: 'de',
      }),
    ).toEqual({ message: 'Settings stored' });
    const v1 = await user.settingsV1.get();
    expect(v1.agent_settings).toMatchObject({
      agent_kind: 'openhands',
      llm: { model: 'anthropic/claude-sonnet-4-5', api_key: null, base_url: null, temperature: 0.2 },
      condenser: { enabled: true, max_size: null },
    });
    expect(v1.conversation_settings).toEqual({ max_iterations: 50, confirmation_mode: true, security_analyzer: null });
    expect(v1).toMatchObject({ language: 'de', llm_api_key_set: true, search_api_key_set: false, provider_tokens_set: {} });
    expect(v1).not.toHaveProperty('llm_model');
    expect(await user.settings.get()).toMatchObject({
      llm_model: 'anthropic/claude-sonnet-4-5',
      max_iterations: 50,
      confirmation_mode: true,
      llm_api_key_set: true,
    });
    expect((await domain.deps.services.settings.resolve(id))?.llm_api_key).toBe(LLM_KEY);
    expect(JSON.stringify(await storedSettings(id))).toContain('enc:v1:');
    expect(JSON.stringify(await storedSettings(id))).not.toContain(LLM_KEY);
    // A V0 save shows in the nested shape at once.
    await user.settings.save({ llm_model: 'openai/gpt-4o', security_analyzer: 'invariant' });
    const after = await user.settingsV1.get();
    expect(after.agent_settings.llm.model).toBe('openai/gpt-4o');
    expect(after.conversation_settings.security_analyzer).toBe('invariant');
  });

  it('deep-merge each diff: what a diff leaves out keeps its value; null goes back to the default', async () => {
    const user = domain.as(freshUser('merge'));
    await user.settingsV1.save({ agent_settings_diff: { llm: { model: 'openai/gpt-4.1', api_key: LLM_KEY, top_p: 0.9 } } });
    await user.settingsV1.save({ agent_settings_diff: { llm: { temperature: 0.5, top_p: null }, condenser: { max_size: 80 } } });
    await user.settingsV1.save({ conversation_settings_diff: { confirmation_mode: false } });
    const { agent_settings, conversation_settings, llm_api_key_set } = await user.settingsV1.get();
    expect(agent_settings.llm).toEqual({ model: 'openai/gpt-4.1', api_key: null, base_url: null, temperature: 0.5 });
    expect(agent_settings.condenser).toEqual({ enabled: true, max_size: 80 });
    expect(conversation_settings.confirmation_mode).toBe(false);
    expect(llm_api_key_set).toBe(true);
    // The key: null keeps it (as V0), "" clears it.
    await user.settingsV1.save({ agent_settings_diff: { llm: { api_key: null } } });
    expect((await user.settingsV1.get()).llm_api_key_set).toBe(true);
    await user.settingsV1.save({ agent_settings_diff: { llm: { api_key: '' } } });
    expect((await user.settingsV1.get()).llm_api_key_set).toBe(false);
  });

  it('replace mcp_config wholesale and mask its credentials: the 2026 map nested, the V0 lists at the top', async () => {
    const id = freshUser('mcp');
    const user = domain.as(id);
    const first = { sse_servers: [{ url: 'https://mcp.example/sse', api_key: 'mcp-secret-1' }], stdio_servers: [], shttp_servers: [] };
    await user.settingsV1.save({ agent_settings_diff: { mcp_config: first } });
    const read = await user.settingsV1.get();
    expect(read.agent_settings.mcp_config).toEqual({
      sse_0: { url: 'https://mcp.example/sse', transport: 'sse', auth: { strategy: 'bearer', value: '**********' }, enabled: true },
    });
    expect(read.mcp_config?.sse_servers).toEqual([{ url: 'https://mcp.example/sse', api_key: '**********' }]);
    await user.settingsV1.save({
      agent_settings_diff: { mcp_config: { mcpServers: { fs: { command: 'npx', args: ['-y', 'server-filesystem'] } } } },
    });
    expect((await user.settingsV1.get()).agent_settings.mcp_config).toEqual({
      fs: { command: 'npx', args: ['-y', 'server-filesystem'], env: {}, enabled: true },
    });
    expect((await user.settings.get()).mcp_config).toEqual({
      sse_servers: [],
      shttp_servers: [],
      stdio_servers: [{ name: 'fs', command: 'npx', args: ['-y', 'server-filesystem'], env: {} }],
    });
    expect(JSON.stringify(await storedSettings(id))).not.toContain('mcp-secret-1');
  });

  it('refuse agent_settings / conversation_settings sent directly, naming the keys, and store nothing', async () => {
    const user = domain.as(freshUser('legacy'));
    const refused = await refusal(
      user.settingsV1.save({ conversation_settings: { max_iterations: 3 }, agent_settings: {}, language: 'fr' } as never),
    );
    expect(refused).toMatchObject({
      code: 'UNPROCESSABLE_CONTENT',
      reason: 'legacy_settings_keys',
      message: 'Use *_diff nested settings payloads instead of legacy keys',
      fields: { keys: 'agent_settings,conversation_settings' },
    });
    expect(await refusal(user.settings.get())).toMatchObject({ code: 'NOT_FOUND' }); // nothing stored
    expect((await user.settingsV1.get()).language).toBeNull();
  });

  it.each([
    ['an unknown key in a diff', { agent_settings_diff: { llm: { custom_header: 'x' } } }, ['agent_settings_diff', 'llm']],
    ['a wrong type', { conversation_settings_diff: { max_iterations: 'many' } }, ['conversation_settings_diff', 'max_iterations']],
    [
      'a choice outside the list',
      { conversation_settings_diff: { security_analyzer: 'magic' } },
      ['conversation_settings_diff', 'security_analyzer'],
    ],
    ['an ACP agent', { agent_settings_diff: { agent_kind: 'acp' } }, ['agent_settings_diff', 'agent_kind']],
    ['a condenser too small', { agent_settings_diff: { condenser: { max_size: 5 } } }, ['agent_settings_diff', 'condenser', 'max_size']],
  ])('refuse %s (BAD_REQUEST naming the field), storing nothing', async (_label, input, path) => {
    const user = domain.as(freshUser('bad'));
    const refused = await refusal(user.settingsV1.save(input as never));
    expect(refused.code).toBe('BAD_REQUEST');
    expect(refused.paths[0]?.slice(0, path.length)).toEqual(path);
    expect(await refusal(user.settings.get())).toMatchObject({ code: 'NOT_FOUND' });
  });

  it('ignore top-level keys outside the contract (clients echo read-only ones), as the reference does', async () => {
    const user = domain.as(freshUser('echo'));
    await user.settingsV1.save({ llm_api_key_set: true, git_full_clone: true, disabled_skills: ['x'] } as never);
    expect(await user.settingsV1.get()).toMatchObject({ git_full_clone: true, disabled_skills: ['x'], llm_api_key_set: false });
  });
});

describe('the settings of sharing, marketplaces and titles', () => {
  const marketplace = { name: 'team', source: 'github:acme/plugins', ref: 'v2', repo_path: 'market', auto_load: ['lint'] };

  it('round-trip: grouping strategy, marketplaces and title prompt stored and read back; null back to the default', async () => {
    const user = domain.as(freshUser('four'));
    expect(await user.settingsV1.get()).toMatchObject({
      sandbox_grouping_strategy: 'NO_GROUPING',
      registered_marketplaces: [],
      inherited_marketplaces: [],
      title_llm_profile: null,
      title_generation_prompt: null,
    });
    await user.settingsV1.save({
      sandbox_grouping_strategy: 'FEWEST_CONVERSATIONS',
      registered_marketplaces: [marketplace],
      title_generation_prompt: 'Five words at most: {conversation_content}',
      title_llm_profile: null,
    });
    expect(await user.settingsV1.get()).toMatchObject({
      sandbox_grouping_strategy: 'FEWEST_CONVERSATIONS',
      registered_marketplaces: [marketplace],
      title_generation_prompt: 'Five words at most: {conversation_content}',
    });
    await user.settingsV1.save({ sandbox_grouping_strategy: null, registered_marketplaces: null, title_generation_prompt: '' });
    expect(await user.settingsV1.get()).toMatchObject({
      sandbox_grouping_strategy: 'NO_GROUPING',
      registered_marketplaces: [],
      title_generation_prompt: null,
    });
  });

  it('refuse what they cannot keep, storing nothing: duplicate marketplace names, a title LLM profile, unknown strategies', async () => {
    const id = freshUser('four-refused');
    const user = domain.as(id);
    expect(await refusal(user.settingsV1.save({ registered_marketplaces: [marketplace, { ...marketplace, source: 'x' }] }))).toMatchObject({
      code: 'BAD_REQUEST',
      reason: 'marketplace_names_duplicated',
      message: 'Marketplace name(s) already in use or duplicated: team',
    });
    expect(await refusal(user.settingsV1.save({ title_llm_profile: 'fast' } as never))).toMatchObject({ code: 'BAD_REQUEST' });
    expect(await refusal(user.settingsV1.save({ sandbox_grouping_strategy: 'ROUND_ROBIN' } as never))).toMatchObject({
      code: 'BAD_REQUEST',
    });
    expect(await refusal(user.settingsV1.save({ registered_marketplaces: [{ ...marketplace, repo_path: '../up' }] }))).toMatchObject({
      code: 'BAD_REQUEST',
    });
    expect(await storedSettings(id)).toEqual([]);
  });
});

describe('the form schemas', () => {
  it('are the agent SDK settings-schema format with the fields a save accepts', async () => {
    const user = domain.as(freshUser('schema'));
    const agent = await user.settingsV1.agentSchema();
    expect(agent.model_name).toBe('AgentSettings');
    const fields = agent.sections.flatMap((s) => s.fields);
    expect(fields.find((f) => f.key === 'llm.api_key')).toMatchObject({ secret: true, value_type: 'string', section: 'llm' });
    expect(fields.find((f) => f.key === 'llm.model')).toMatchObject({ prominence: 'critical', section_label: 'LLM' });
    const conversation = await user.settingsV1.conversationSchema();
    expect(conversation.model_name).toBe('ConversationSettings');
    const analyzer = conversation.sections.flatMap((s) => s.fields).find((f) => f.key === 'security_analyzer');
    expect(analyzer?.choices).toContainEqual({ value: 'llm', label: 'llm' });
    expect(analyzer?.depends_on).toEqual(['confirmation_mode']);
  });
});

describe('LLM profiles', () => {
  it('save, list, get, activate, rename and delete, never returning a key', async () => {
    const id = freshUser('profiles');
    const user = domain.as(id);
    const llm = { model: 'anthropic/claude-opus-4-1-20250805', api_key: PROFILE_KEY, temperature: 0.1 };
    expect(await user.settingsV1.profilesSave({ name: 'opus', llm })).toMatchObject({ name: 'opus', message: "Profile 'opus' saved" });
    await user.settingsV1.profilesSave({ name: 'cheap', llm: { model: 'openai/gpt-4o-mini' } });
    expect(await user.settingsV1.profilesList({})).toEqual({
      profiles: [
        { name: 'opus', model: 'anthropic/claude-opus-4-1-20250805', base_url: null, api_key_set: true },
        { name: 'cheap', model: 'openai/gpt-4o-mini', base_url: null, api_key_set: false },
      ],
      active_profile: null,
    });
    expect(await user.settingsV1.profilesGet({ name: 'opus' })).toMatchObject({
      name: 'opus',
      api_key_set: true,
      config: { model: llm.model, api_key: null, temperature: 0.1 },
    });
    expect(await user.settingsV1.profilesActivate({ name: 'opus' })).toMatchObject({ name: 'opus', model: llm.model });
    const settings = await user.settingsV1.get();
    expect(settings.agent_settings.llm).toMatchObject({ model: llm.model, api_key: null, temperature: 0.1 });
    expect(settings).toMatchObject({ llm_api_key_set: true, llm_profiles: { active: 'opus', profiles: { opus: { api_key: null } } } });
    // The profile's key became the settings' key, as the agents receive it.
    expect((await domain.deps.services.settings.resolve(id))!.llm_api_key).toBe(PROFILE_KEY);
    expect(await refusal(user.settingsV1.profilesRename({ name: 'opus', new_name: 'cheap' }))).toMatchObject({
      code: 'CONFLICT',
      reason: 'llm_profile_exists',
    });
    expect(await user.settingsV1.profilesRename({ name: 'opus', new_name: 'best' })).toMatchObject({ name: 'best' });
    expect((await user.settingsV1.profilesList({})).active_profile).toBe('best');
    // An LLM changed by hand is no longer the profile's.
    await user.settingsV1.save({ agent_settings_diff: { llm: { temperature: 0.7 } } });
    expect((await user.settingsV1.profilesList({})).active_profile).toBeNull();
    expect(await user.settingsV1.profilesDelete({ name: 'best' })).toMatchObject({ name: 'best' });
    expect(await user.settingsV1.profilesDelete({ name: 'best' })).toMatchObject({ name: 'best' }); // idempotent
    expect(await refusal(user.settingsV1.profilesGet({ name: 'best' }))).toMatchObject({
      code: 'NOT_FOUND',
      reason: 'llm_profile_not_found',
      message: "Profile 'best' not found",
    });
    expect(JSON.stringify(await storedSettings(id))).toContain('enc:v1:');
    expect(JSON.stringify(await storedSettings(id))).not.toContain(PROFILE_KEY);
  });

  it('save the current settings LLM when no llm is sent, and refuse names outside the pattern and unknown keys', async () => {
    const user = domain.as(freshUser('snapshot'));
    expect(await refusal(user.settingsV1.profilesSave({ name: 'now' }))).toMatchObject({ code: 'NOT_FOUND', reason: 'settings_not_found' });
    await user.settingsV1.save({ agent_settings_diff: { llm: { model: 'gemini/gemini-2.5-pro', api_key: LLM_KEY } } });
    await user.settingsV1.profilesSave({ name: 'now' });
    expect(await user.settingsV1.profilesGet({ name: 'now' })).toMatchObject({
      api_key_set: true,
      config: { model: 'gemini/gemini-2.5-pro' },
    });
    expect(await refusal(user.settingsV1.profilesSave({ name: 'bad name' }))).toMatchObject({ code: 'BAD_REQUEST', paths: [['name']] });
    const surprise = await refusal(user.settingsV1.profilesSave({ name: 'x', llm: { model: 'm', surprise: 1 } as never }));
    expect(surprise.code).toBe('BAD_REQUEST');
    expect(surprise.paths[0]?.[0]).toBe('llm');
    expect((await user.settingsV1.profilesList({})).profiles.map((p) => p.name)).toEqual(['now']);
  });

  it("accept Agent Canvas's LLM-form keys at their defaults (an API key: nothing stored), refuse other values", async () => {
    const user = domain.as(freshUser('canvas-form'));
    const form = { auth_type: 'api_key', subscription_vendor: null, provider_connection_id: null };
    const llm = { model: 'openai/stub-model', base_url: 'http://127.0.0.1:9/v1', api_key: LLM_KEY, ...form };
    await user.settingsV1.save({ agent_settings_diff: { llm } as never });
    await user.settingsV1.profilesSave({ name: 'canvas', llm } as never);
    const detail = await user.settingsV1.profilesGet({ name: 'canvas' });
    expect(detail.config).toMatchObject({ model: 'openai/stub-model', base_url: 'http://127.0.0.1:9/v1' });
    expect((await user.settingsV1.get()).agent_settings.llm).toMatchObject({ model: 'openai/stub-model' });
    for (const key of Object.keys(form)) {
      expect(detail.config).not.toHaveProperty(key);
      expect((await user.settingsV1.get()).agent_settings.llm).not.toHaveProperty(key);
    }
    for (const unsupported of [{ auth_type: 'subscription' }, { subscription_vendor: 'openai' }, { provider_connection_id: 'conn-1' }]) {
      const key = Object.keys(unsupported)[0]!;
      const asProfile = await refusal(user.settingsV1.profilesSave({ name: 'other', llm: { model: 'm', ...unsupported } } as never));
      expect(asProfile).toMatchObject({ code: 'BAD_REQUEST', paths: [['llm', key]] });
      const asSettings = await refusal(user.settingsV1.save({ agent_settings_diff: { llm: unsupported } } as never));
      expect(asSettings).toMatchObject({ code: 'BAD_REQUEST', paths: [['agent_settings_diff', 'llm', key]] });
    }
    expect(await refusal(user.settingsV1.profilesGet({ name: 'other' }))).toMatchObject({ code: 'NOT_FOUND' });
  });

  it('stop at ten profiles (CONFLICT llm_profile_limit), as the reference does; overwriting one is no new profile', async () => {
    const user = domain.as(freshUser('limit'));
    for (let i = 0; i < 10; i++) await user.settingsV1.profilesSave({ name: `p${i}`, llm: { model: 'm' } });
    expect(await refusal(user.settingsV1.profilesSave({ name: 'p10', llm: { model: 'm' } }))).toMatchObject({
      code: 'CONFLICT',
      reason: 'llm_profile_limit',
    });
    await user.settingsV1.profilesSave({ name: 'p3', llm: { model: 'other' } });
    expect(await user.settingsV1.profilesGet({ name: 'p3' })).toMatchObject({ config: { model: 'other' } });
    expect((await user.settingsV1.profilesList({})).profiles).toHaveLength(10);
  });
});
