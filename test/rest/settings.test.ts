import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, startTestApp, type TestApp } from '../helpers/app.js';

let app: TestApp;
let key: string;
const LLM_KEY = 'sk-live-llm-key-7f3a9c';
const SEARCH_KEY = 'tvly-search-key-51b2';

beforeAll(async () => {
  app = await startTestApp('settings');
});
afterAll(() => app.stop());

async function freshUser(name: string) {
  key = await app.keyFor(`${name}-${Math.random().toString(36).slice(2, 8)}`);
  return key;
}

describe('GET/POST /api/settings', () => {
  it('answers 404 {"error":"Settings not found"} before the first save', async () => {
    const k = await freshUser('new');
    const res = await call(app, 'GET', '/api/settings', { key: k });
    expect(res.status).toBe(404);
    expect(res.body).toEqual({ error: 'Settings not found' });
  });

  it('stores every field and returns the full settings shape with secrets masked', async () => {
    const k = await freshUser('full');
    const saved = await call(app, 'POST', '/api/settings', {
      key: k,
      body: {
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
      },
    });
    expect(saved).toMatchObject({ status: 200, body: { message: 'Settings stored' } });

    const res = await call(app, 'GET', '/api/settings', { key: k });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
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
    expect(res.text).not.toContain(LLM_KEY);
    expect(res.text).not.toContain(SEARCH_KEY);
  });
});

describe('settings validation (422 with FastAPI-style loc)', () => {
  const post = async (body: unknown) => call(app, 'POST', '/api/settings', { key: await freshUser('v'), body });

  it.each([
    [
      'a bad stdio server name',
      { mcp_config: { stdio_servers: [{ name: 'bad name', command: 'x' }] } },
      ['body', 'mcp_config', 'stdio_servers', 0, 'name'],
      'string_pattern_mismatch',
    ],
    [
      'a missing stdio command',
      { mcp_config: { stdio_servers: [{ name: 'ok' }] } },
      ['body', 'mcp_config', 'stdio_servers', 0, 'command'],
      'missing',
    ],
    [
      'a command with spaces',
      { mcp_config: { stdio_servers: [{ name: 'ok', command: 'npx -y x' }] } },
      ['body', 'mcp_config', 'stdio_servers', 0, 'command'],
      'string_pattern_mismatch',
    ],
    [
      'an env key that is not a variable name',
      { mcp_config: { stdio_servers: [{ name: 'ok', command: 'x', env: { '1BAD': 'v' } }] } },
      ['body', 'mcp_config', 'stdio_servers', 0, 'env', '1BAD'],
      'value_error',
    ],
    [
      'an ftp URL',
      { mcp_config: { sse_servers: [{ url: 'ftp://example.com' }] } },
      ['body', 'mcp_config', 'sse_servers', 0, 'url'],
      'value_error',
    ],
    [
      'a URL without host',
      { mcp_config: { shttp_servers: ['https://'] } },
      ['body', 'mcp_config', 'shttp_servers', 0, 'url'],
      'value_error',
    ],
    [
      'a timeout above 3600',
      { mcp_config: { shttp_servers: [{ url: 'https://a.b', timeout: 3601 }] } },
      ['body', 'mcp_config', 'shttp_servers', 0, 'timeout'],
      'less_than_equal',
    ],
    [
      'a timeout of 0',
      { mcp_config: { shttp_servers: [{ url: 'https://a.b', timeout: 0 }] } },
      ['body', 'mcp_config', 'shttp_servers', 0, 'timeout'],
      'greater_than_equal',
    ],
    [
      'an unknown MCP key',
      { mcp_config: { sse_servers: [], grpc_servers: [] } },
      ['body', 'mcp_config', 'grpc_servers'],
      'extra_forbidden',
    ],
    [
      'an unknown server key',
      { mcp_config: { sse_servers: [{ url: 'https://a.b', token: 'x' }] } },
      ['body', 'mcp_config', 'sse_servers', 0, 'token'],
      'extra_forbidden',
    ],
    ['condenser_max_size below 20', { condenser_max_size: 10 }, ['body', 'condenser_max_size'], 'value_error'],
    ['a string for a boolean', { confirmation_mode: 'false' }, ['body', 'confirmation_mode'], 'bool_type'],
    ['a float for an integer', { max_iterations: 1.5 }, ['body', 'max_iterations'], 'int_type'],
    ['null for a non-nullable field', { enable_default_condenser: null }, ['body', 'enable_default_condenser'], 'bool_type'],
    ['a number for a string', { llm_model: 42 }, ['body', 'llm_model'], 'string_type'],
  ])('rejects %s', async (_label, body, loc, type) => {
    const res = await post(body);
    expect(res.status).toBe(422);
    expect(res.body.detail).toContainEqual(expect.objectContaining({ loc, type, msg: expect.any(String) }));
  });

  it('reports the reference message for condenser_max_size', async () => {
    const res = await post({ condenser_max_size: 19 });
    expect(res.body).toEqual({
      detail: [{ type: 'value_error', loc: ['body', 'condenser_max_size'], msg: 'Value error, condenser_max_size must be at least 20' }],
    });
  });

  it('writes nothing when any field is invalid', async () => {
    const k = await freshUser('atomic');
    const res = await call(app, 'POST', '/api/settings', { key: k, body: { llm_model: 'kept-out', max_iterations: 'many' } });
    expect(res.status).toBe(422);
    expect((await call(app, 'GET', '/api/settings', { key: k })).status).toBe(404);
  });

  it('never echoes an invalid secret value in the error', async () => {
    const res = await post({ llm_api_key: { nested: LLM_KEY } });
    expect(res.status).toBe(422);
    expect(res.text).not.toContain(LLM_KEY);
  });
});

describe('POST /api/reset-settings', () => {
  it('answers 410 as the reference does', async () => {
    const res = await call(app, 'POST', '/api/reset-settings', { key: await freshUser('reset') });
    expect(res).toMatchObject({ status: 410, body: { error: 'Reset settings functionality has been removed.' } });
  });
});
