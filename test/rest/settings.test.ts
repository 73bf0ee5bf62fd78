// The settings routes' wire bytes, V0 (/api/settings) and 2026 (/api/v1/settings, its LLM
// profiles, /api/agent-profiles): statuses, the reference's bodies, the 422 validation shapes
// (FastAPI-style loc), a profile name in the path. What is stored, merged, masked and refused
// is tested through the procedures in test/domain/ (settings, settings-v1, agent-profiles).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, startTestApp, type TestApp } from '../helpers/app.js';

let app: TestApp;
let key: string;
const LLM_KEY = 'sk-live-llm-key-7f3a9c';

beforeAll(async () => {
  app = await startTestApp('settings');
});
afterAll(() => app.stop());

async function freshUser(name: string) {
  key = await app.keyFor(`${name}-${Math.random().toString(36).slice(2, 8)}`);
  return key;
}

describe('GET/POST /api/settings', () => {
  it('answers 404 {"error":"Settings not found"} before the first save, 200 {"message"} to a save, then the settings', async () => {
    const k = await freshUser('new');
    const res = await call(app, 'GET', '/api/settings', { key: k });
    expect(res.status).toBe(404);
    expect(res.body).toEqual({ error: 'Settings not found' });
    const saved = await call(app, 'POST', '/api/settings', { key: k, body: { llm_model: 'openai/gpt-4o', llm_api_key: LLM_KEY } });
    expect(saved).toMatchObject({ status: 200, body: { message: 'Settings stored' } });
    const read = await call(app, 'GET', '/api/settings', { key: k });
    expect(read).toMatchObject({ status: 200, body: { llm_model: 'openai/gpt-4o', llm_api_key: null, llm_api_key_set: true } });
    expect(read.text).not.toContain(LLM_KEY);
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

describe('/api/v1/settings, its LLM profiles and /api/agent-profiles', () => {
  const bearer = async (name: string) => {
    const k = await freshUser(name);
    return (method: string, path: string, body?: unknown) =>
      call(app, method, path, { headers: { authorization: `Bearer ${k}` }, ...(body === undefined ? {} : { body }) });
  };

  it('answers 200 with the defaults before the first save (where V0 answers 404), and 200 {"message"} to a save', async () => {
    const as = await bearer('v1-fresh');
    expect(await as('GET', '/api/v1/settings')).toMatchObject({ status: 200, body: { llm_api_key_set: false } });
    expect((await as('GET', '/api/settings')).status).toBe(404);
    expect(await as('POST', '/api/v1/settings', { language: 'de' })).toMatchObject({ status: 200, body: { message: 'Settings stored' } });
  });

  it('answers legacy keys with 422 {"error", "keys"}, and bad values with 422 in the contract shape', async () => {
    const as = await bearer('v1-bad');
    expect(await as('POST', '/api/v1/settings', { conversation_settings: { max_iterations: 3 }, agent_settings: {} })).toMatchObject({
      status: 422,
      body: { error: 'Use *_diff nested settings payloads instead of legacy keys', keys: ['agent_settings', 'conversation_settings'] },
    });
    const twice = [
      { name: 'a', source: 'github:x/y' },
      { name: 'a', source: 'github:x/z' },
    ];
    expect(await as('POST', '/api/v1/settings', { registered_marketplaces: twice })).toMatchObject({
      status: 400,
      body: { error: 'Marketplace name(s) already in use or duplicated: a' },
    });
    const titled = await as('POST', '/api/v1/settings', { title_llm_profile: 'fast' });
    expect(titled.status).toBe(422);
    expect(titled.body.detail[0]).toMatchObject({ loc: ['body', 'title_llm_profile'], msg: expect.stringContaining('not supported here') });
    const bad = await as('POST', '/api/v1/settings', { conversation_settings_diff: { max_iterations: 'many' } });
    expect(bad.status).toBe(422);
    expect(bad.body.detail[0].loc).toEqual(['body', 'conversation_settings_diff', 'max_iterations']);
  });

  it('answers the profile routes as the reference: 201 on a save, 409 on a taken name, 404 {"detail"} or {"error"}, 422 for a bad name', async () => {
    const as = await bearer('v1-profiles');
    expect(await as('POST', '/api/v1/settings/profiles/now', {})).toMatchObject({ status: 404, body: { error: 'Settings not found' } });
    expect(await as('POST', '/api/v1/settings/profiles/opus', { llm: { model: 'm' } })).toMatchObject({
      status: 201,
      body: { name: 'opus', message: "Profile 'opus' saved" },
    });
    await as('POST', '/api/v1/settings/profiles/cheap', { llm: { model: 'm' } });
    expect((await as('POST', '/api/v1/settings/profiles/opus/rename', { new_name: 'cheap' })).status).toBe(409);
    expect(await as('GET', '/api/v1/settings/profiles/best')).toMatchObject({ status: 404, body: { detail: "Profile 'best' not found" } });
    expect((await as('POST', '/api/v1/settings/profiles/bad%20name', {})).status).toBe(422);
    expect(await as('POST', '/api/agent-profiles/reviewer', { agent_kind: 'openhands', llm_profile_ref: 'opus' })).toMatchObject({
      status: 201,
      body: { name: 'reviewer', message: "Agent profile 'reviewer' saved" },
    });
    expect((await as('GET', '/api/agent-profiles/nobody')).status).toBe(404);
  });
});
