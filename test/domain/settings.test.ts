// Settings rules, through the procedures themselves (createCaller, no HTTP): every field stored
// and read back, partial updates, a save with any invalid field storing nothing, the secret
// slots' null/"" rules, encryption at rest, MCP masks and shorthands. The wire bytes
// of the same procedures (statuses, bodies, validation shapes) are tested in test/rest/.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { refusal, startTestDomain, type TestDomain } from '../helpers/domain.js';

const LLM_KEY = 'sk-live-llm-key-7f3a9c';
const SEARCH_KEY = 'tvly-search-key-51b2';
const MCP_KEY = 'mcp-api-key-a1b2c3';
const MCP_ENV = 'ghp_mcp_env_secret_998';

let domain: TestDomain;
beforeAll(async () => {
  domain = await startTestDomain('settings');
});
afterAll(() => domain.stop());

let counter = 0;
const freshUser = (name: string) => `${name}-${++counter}`;
const resolve = (user: string) => domain.deps.services.settings.resolve(user);

describe('settings', () => {
  it('applies the reference defaults to fields never saved', async () => {
    const user = domain.as(freshUser('defaults'));
    await user.settings.save({ llm_model: 'gpt-4o' });
    expect(await user.settings.get()).toMatchObject({
      llm_model: 'gpt-4o',
      enable_default_condenser: true,
      enable_sound_notifications: false,
      enable_proactive_conversation_starters: true,
      enable_solvability_analysis: true,
      confirmation_mode: null,
      llm_api_key_set: false,
      search_api_key_set: false,
    });
  });

  it('stores every field and reads back the full settings shape, secrets masked and read-only echoes ignored', async () => {
    const user = domain.as(freshUser('full'));
    expect(
      await user.settings.save({
        language: 'en',
        agent: 'CodeActAgent',
        max_iterations: 50,
        security_analyzer: 'llm',
        confirmation_mode: true,
        llm_model: 'anthropic/claude-sonnet-4-5',
        llm_api_key: LLM_KEY,
        llm_base_url: 'https://llm.example.com',
        remote_runtime_resource_factor: 2,
        enable_default_condenser: false,
        enable_sound_notifications: true,
        enable_proactive_conversation_starters: false,
        enable_solvability_analysis: false,
        user_consents_to_analytics: true,
        sandbox_base_container_image: 'base:1',
        sandbox_runtime_container_image: 'runtime:1',
        search_api_key: SEARCH_KEY,
        sandbox_api_key: 'sandbox-key-123',
        max_budget_per_task: 2.5,
        condenser_max_size: 40,
        email: 'a@example.com',
        email_verified: true,
        git_user_name: 'Ada',
        git_user_email: 'ada@example.com',
        llm_api_key_set: true, // read-only keys the frontend echoes back are ignored
        provider_tokens_set: { github: null },
      } as never),
    ).toEqual({ message: 'Settings stored' });
    const read = await user.settings.get();
    expect(read).toEqual({
      language: 'en',
      agent: 'CodeActAgent',
      max_iterations: 50,
      security_analyzer: 'llm',
      confirmation_mode: true,
      llm_model: 'anthropic/claude-sonnet-4-5',
      llm_api_key: null,
      llm_base_url: 'https://llm.example.com',
      remote_runtime_resource_factor: 2,
      secrets_store: { provider_tokens: {} },
      enable_default_condenser: false,
      enable_sound_notifications: true,
      enable_proactive_conversation_starters: false,
      enable_solvability_analysis: false,
      user_consents_to_analytics: true,
      sandbox_base_container_image: 'base:1',
      sandbox_runtime_container_image: 'runtime:1',
      mcp_config: null,
      search_api_key: null,
      sandbox_api_key: null,
      max_budget_per_task: 2.5,
      max_budget_per_month: null,
      condenser_max_size: 40,
      email: 'a@example.com',
      email_verified: true,
      git_user_name: 'Ada',
      git_user_email: 'ada@example.com',
      llm_api_key_set: true,
      search_api_key_set: true,
      provider_tokens_set: {},
    });
    expect(JSON.stringify(read)).not.toContain(LLM_KEY);
    expect(JSON.stringify(read)).not.toContain(SEARCH_KEY);
  });

  it('stores nothing when any field is invalid (BAD_REQUEST naming it)', async () => {
    const user = domain.as(freshUser('atomic'));
    expect(await refusal(user.settings.save({ llm_model: 'kept-out', max_iterations: 'many' } as never))).toMatchObject({
      code: 'BAD_REQUEST',
      paths: [['max_iterations']],
    });
    expect(await refusal(user.settings.get())).toMatchObject({ code: 'NOT_FOUND', reason: 'settings_not_found' });
  });

  it('keeps omitted fields on a partial update (e.g. an MCP-only save)', async () => {
    const user = domain.as(freshUser('partial'));
    await user.settings.save({ agent: 'CodeActAgent', language: 'fr', confirmation_mode: true, git_user_name: 'Bo', llm_api_key: LLM_KEY });
    await user.settings.save({ mcp_config: { sse_servers: ['https://mcp.example.com/sse'] } });
    await user.settings.save({ language: null });
    expect(await user.settings.get()).toMatchObject({
      agent: 'CodeActAgent',
      language: null,
      confirmation_mode: true,
      git_user_name: 'Bo',
      llm_api_key_set: true,
      mcp_config: { sse_servers: [{ url: 'https://mcp.example.com/sse', api_key: null }], stdio_servers: [], shttp_servers: [] },
    });
  });

  it('keeps a secret on null or omission and clears it on "" (or blanks)', async () => {
    const id = freshUser('secrets');
    const user = domain.as(id);
    await user.settings.save({ llm_api_key: LLM_KEY, search_api_key: SEARCH_KEY });
    await user.settings.save({ llm_api_key: null, llm_model: 'm' });
    expect(await user.settings.get()).toMatchObject({ llm_api_key_set: true, search_api_key_set: true, llm_api_key: null });
    await user.settings.save({ search_api_key: '' });
    expect(await user.settings.get()).toMatchObject({ llm_api_key_set: true, search_api_key_set: false });
    await user.settings.save({ llm_api_key: '   ' });
    expect(await user.settings.get()).toMatchObject({ llm_api_key_set: false });
    expect(await resolve(id)).toMatchObject({ llm_api_key: null });
  });

  it('stores secrets encrypted: the stored document holds no secret in clear, yet they decrypt', async () => {
    const id = freshUser('raw');
    await domain.as(id).settings.save({
      llm_api_key: LLM_KEY,
      search_api_key: SEARCH_KEY,
      mcp_config: {
        shttp_servers: [{ url: 'https://mcp.example.com/mcp', api_key: MCP_KEY }],
        stdio_servers: [{ name: 'gh', command: 'npx', args: ['-y', 'server-github'], env: { GITHUB_TOKEN: MCP_ENV } }],
      },
    });
    const raw = await domain.deps.db.models.Settings.collection.findOne({ userId: id });
    const dump = JSON.stringify(raw);
    for (const secret of [LLM_KEY, SEARCH_KEY, MCP_KEY, MCP_ENV]) expect(dump).not.toContain(secret);
    expect(raw?.llm_api_key).toMatch(/^enc:v1:/);
    const resolved = await resolve(id);
    expect(resolved?.llm_api_key).toBe(LLM_KEY);
    expect(resolved?.mcp_config?.shttp_servers[0]?.api_key).toBe(MCP_KEY);
    expect(resolved?.mcp_config?.stdio_servers[0]?.env).toEqual({ GITHUB_TOKEN: MCP_ENV });
  });

  it('masks MCP credentials on reads and keeps them when the mask is sent back', async () => {
    const id = freshUser('mcpmask');
    const user = domain.as(id);
    await user.settings.save({
      mcp_config: {
        sse_servers: [{ url: 'https://a.example.com/sse', api_key: MCP_KEY }],
        stdio_servers: [{ name: 'gh', command: 'npx', env: { GITHUB_TOKEN: MCP_ENV } }],
      },
    });
    const got = await user.settings.get();
    expect(JSON.stringify(got)).not.toContain(MCP_KEY);
    expect(JSON.stringify(got)).not.toContain(MCP_ENV);
    expect(got.mcp_config).toEqual({
      sse_servers: [{ url: 'https://a.example.com/sse', api_key: '**********' }],
      stdio_servers: [{ name: 'gh', command: 'npx', args: [], env: { GITHUB_TOKEN: '**********' } }],
      shttp_servers: [],
    });
    // A frontend posts the whole config back, masks included, plus a new server.
    await user.settings.save({ mcp_config: { ...got.mcp_config!, shttp_servers: [{ url: 'https://b.example.com/mcp', timeout: 30 }] } });
    expect((await resolve(id))?.mcp_config).toEqual({
      sse_servers: [{ url: 'https://a.example.com/sse', api_key: MCP_KEY }],
      stdio_servers: [{ name: 'gh', command: 'npx', args: [], env: { GITHUB_TOKEN: MCP_ENV } }],
      shttp_servers: [{ url: 'https://b.example.com/mcp', api_key: null, timeout: 30 }],
    });
  });

  it('normalises the MCP shorthands of the reference (string URLs, args string, env string)', async () => {
    const id = freshUser('mcpshort');
    await domain.as(id).settings.save({
      mcp_config: {
        sse_servers: ['wss://events.example.com/ws'],
        shttp_servers: ['https://mcp.example.com/mcp'],
        stdio_servers: [{ name: 'fs', command: 'npx', args: '-y "@mcp/server fs" --root /tmp', env: 'A=1,B_2=two' }],
      },
    });
    expect((await resolve(id))?.mcp_config).toEqual({
      sse_servers: [{ url: 'wss://events.example.com/ws', api_key: null }],
      shttp_servers: [{ url: 'https://mcp.example.com/mcp', api_key: null, timeout: 60 }],
      stdio_servers: [{ name: 'fs', command: 'npx', args: ['-y', '@mcp/server fs', '--root', '/tmp'], env: { A: '1', B_2: 'two' } }],
    });
  });

  it('keeps users apart: another user sees no settings (NOT_FOUND) and cannot change them', async () => {
    const alice = freshUser('alice');
    await domain.as(alice).settings.save({ llm_model: 'openai/alice', llm_api_key: LLM_KEY });
    await expect(domain.as(freshUser('bob')).settings.get()).rejects.toMatchObject({ code: 'NOT_FOUND' });
    await domain.as(freshUser('bob')).settings.save({ llm_model: 'openai/bob' });
    expect(await domain.as(alice).settings.get()).toMatchObject({ llm_model: 'openai/alice', llm_api_key_set: true });
  });
});
