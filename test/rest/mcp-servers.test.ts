// MCP servers in the 2026 shape and their tests, over REST against a real MCP server on loopback
// (the official SDK's, streamable HTTP behind a bearer key and HTTP+SSE behind a header key):
// the map read back with masks whichever route saved it, a V0 save keeping the 2026 extras, the
// masked values sent back keeping the stored credentials, POST /api/v1/mcp/test (tools, a tool
// call, failures as 200 {ok:false}, stdio refused) and POST /api/v1/settings/mcp/{key}/test
// (only {ok}; 404 for a name the user does not have), and the SSRF guard's default refusal.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ProviderHostPolicy } from '../../src/git/providers/provider-hosts.js';
import { McpProbe } from '../../src/services/mcp/mcp-probe.js';
import { call, startTestApp, type TestApp } from '../helpers/app.js';
import { startMcpServer, type TestMcpServer } from '../helpers/mcp-server.js';

const BEARER = 'mcp-bearer-5c1f0e9a';
const API_KEY = 'mcp-header-key-77d2b4';
const MASK = '**********';

let app: TestApp;
let mcp: TestMcpServer;
beforeAll(async () => {
  mcp = await startMcpServer({ bearer: BEARER, apiKey: API_KEY });
  app = await startTestApp('mcp-servers', { MCP_TEST_HOSTS: '127.0.0.0/8' });
});
afterAll(async () => {
  await app?.stop();
  await mcp?.close();
});

const freshKey = (name: string) => app.keyFor(`${name}-${Math.random().toString(36).slice(2, 8)}`);

function servers() {
  return {
    search: { url: `${mcp.url}/mcp`, transport: 'streamable-http', auth: { strategy: 'bearer', value: BEARER }, timeout: 20 },
    docs: { url: `${mcp.url}/sse`, transport: 'sse', headers: { 'X-Api-Key': API_KEY }, description: 'The docs' },
    fs: { command: 'npx', args: ['-y', 'server-fs'], env: { ROOT: '/tmp' }, cwd: '/workspace', enabled: false },
  };
}
const shown = () => ({
  search: { url: `${mcp.url}/mcp`, transport: 'streamable-http', timeout: 20, auth: { strategy: 'bearer', value: MASK }, enabled: true },
  docs: { url: `${mcp.url}/sse`, transport: 'sse', description: 'The docs', headers: { 'X-Api-Key': MASK }, enabled: true },
  fs: { command: 'npx', args: ['-y', 'server-fs'], env: { ROOT: MASK }, cwd: '/workspace', enabled: false },
});

async function userWithServers(name: string) {
  const key = await freshKey(name);
  const saved = await call(app, 'POST', '/api/v1/settings', {
    key,
    body: { agent_settings_diff: { mcp_config: { mcpServers: servers() } } },
  });
  expect(saved.status).toBe(200);
  return key;
}

describe('mcp_config in the 2026 shape', () => {
  it('reads back as the map by name, credentials masked, and as the V0 lists on V0 routes; nothing stored in clear', async () => {
    const key = await userWithServers('shape');
    const v1 = await call(app, 'GET', '/api/v1/settings', { key });
    expect(v1.body.agent_settings.mcp_config).toEqual(shown());
    const v0 = await call(app, 'GET', '/api/settings', { key });
    expect(v0.body.mcp_config).toEqual({
      sse_servers: [{ url: `${mcp.url}/sse`, api_key: null }],
      shttp_servers: [{ url: `${mcp.url}/mcp`, api_key: MASK, timeout: 20 }],
      stdio_servers: [{ name: 'fs', command: 'npx', args: ['-y', 'server-fs'], env: { ROOT: MASK } }],
    });
    expect(v1.body.mcp_config).toEqual(v0.body.mcp_config);
    const raw = JSON.stringify(await app.rawCollection('settings').find({}).toArray());
    for (const secret of [BEARER, API_KEY]) {
      expect(v1.text).not.toContain(secret);
      expect(raw).not.toContain(secret);
    }
  });

  it('keeps names, headers and the other fields through a V0 save of the V0 lists (the d6 UI saving its page)', async () => {
    const key = await userWithServers('v0-save');
    const v0 = (await call(app, 'GET', '/api/settings', { key })).body;
    expect((await call(app, 'POST', '/api/settings', { key, body: { mcp_config: v0.mcp_config } })).status).toBe(200);
    expect((await call(app, 'GET', '/api/v1/settings', { key })).body.agent_settings.mcp_config).toEqual(shown());
    // The credentials kept too: the stored servers still answer.
    for (const name of ['search', 'docs']) {
      expect((await call(app, 'POST', `/api/v1/settings/mcp/${name}/test`, { key, body: {} })).body).toEqual({ ok: true });
    }
  });

  it('keeps the stored credentials when the masks are sent back, and drops a server left out; V0 lists still accepted', async () => {
    const key = await userWithServers('masks');
    const map = (await call(app, 'GET', '/api/v1/settings', { key })).body.agent_settings.mcp_config;
    delete map.fs;
    await call(app, 'POST', '/api/v1/settings', { key, body: { agent_settings_diff: { mcp_config: map } } });
    const read = (await call(app, 'GET', '/api/v1/settings', { key })).body.agent_settings.mcp_config;
    expect(Object.keys(read)).toEqual(['docs', 'search']);
    for (const name of ['search', 'docs']) {
      expect((await call(app, 'POST', `/api/v1/settings/mcp/${name}/test`, { key, body: {} })).body).toEqual({ ok: true });
    }
    const v0Lists = { shttp_servers: [{ url: 'https://mcp.example/mcp', api_key: 'k-123456' }] };
    await call(app, 'POST', '/api/v1/settings', { key, body: { agent_settings_diff: { mcp_config: v0Lists } } });
    expect((await call(app, 'GET', '/api/v1/settings', { key })).body.agent_settings.mcp_config).toEqual({
      shttp_0: { url: 'https://mcp.example/mcp', transport: 'http', timeout: 60, auth: { strategy: 'bearer', value: MASK }, enabled: true },
    });
  });

  it.each([
    ['a remote server without url', { a: { transport: 'sse' } }, "remote MCP servers require 'url'"],
    [
      'basic auth',
      { a: { url: 'https://x.example/mcp', auth: { strategy: 'basic', username: 'u' } } },
      "auth strategy 'basic' is not supported",
    ],
    [
      'auth beside an Authorization header',
      { a: { url: 'https://x.example/mcp', auth: { strategy: 'bearer', value: 'k' }, headers: { Authorization: 'x' } } },
      "'auth' cannot be combined",
    ],
    ['an unknown field', { a: { url: 'https://x.example/mcp', colour: 'red' } }, 'colour'],
    ['a bad name', { 'no spaces': { url: 'https://x.example/mcp' } }, 'Server names'],
  ])('refuses %s with 422, storing nothing', async (_label, map, message) => {
    const key = await freshKey('refused');
    const res = await call(app, 'POST', '/api/v1/settings', { key, body: { agent_settings_diff: { mcp_config: map } } });
    expect(res.status).toBe(422);
    expect(JSON.stringify(res.body.detail)).toContain(message);
    expect((await call(app, 'GET', '/api/settings', { key })).status).toBe(404);
  });
});

describe('POST /api/v1/mcp/test', () => {
  const test = async (key: string, body: unknown) => call(app, 'POST', '/api/v1/mcp/test', { key, body });

  it('connects over streamable HTTP and SSE with the credentials sent, lists the tools and runs one tool call', async () => {
    const key = await freshKey('probe');
    const http = await test(key, { server: { type: 'http', url: `${mcp.url}/mcp`, auth: { strategy: 'bearer', value: BEARER } } });
    expect(http).toMatchObject({ status: 200, body: { ok: true, tools: ['echo', 'whoami'] } });
    const sse = await test(key, {
      server: { transport: 'sse', url: `${mcp.url}/sse`, headers: { 'X-Api-Key': API_KEY } },
      tool_call: { name: 'echo', arguments: { text: 'hi' } },
    });
    expect(sse.body).toEqual({ ok: true, tools: ['echo', 'whoami'], tool_result: { is_error: false, text: 'echo: hi' } });
    // The session was closed (DELETE) after the streamable HTTP test.
    expect(mcp.seen.some((r) => r.method === 'DELETE' && r.path === '/mcp')).toBe(true);
  });

  it("fills masked values from the user's stored server of that name, and masks a credential echoed back", async () => {
    const key = await userWithServers('masked-probe');
    const res = await test(key, {
      name: 'search',
      server: { type: 'http', url: `${mcp.url}/mcp`, auth: { strategy: 'bearer', value: MASK } },
      tool_call: { name: 'whoami' },
    });
    expect(res.body).toEqual({ ok: true, tools: ['echo', 'whoami'], tool_result: { is_error: false, text: `called with ${MASK}` } });
    expect(res.text).not.toContain(BEARER);
    // Another user naming the same server gets nothing of it: the mask is not a credential.
    const other = await test(await freshKey('other'), {
      name: 'search',
      server: { type: 'http', url: `${mcp.url}/mcp`, auth: { strategy: 'bearer', value: MASK } },
    });
    expect(other.body).toEqual({ ok: false, error: 'The server answered HTTP 401', error_kind: 'connection' });
  });

  it('answers a failing server with 200 {ok:false}: refused key, closed port, no answer in time', async () => {
    const key = await freshKey('failures');
    const wrong = await test(key, { server: { type: 'http', url: `${mcp.url}/mcp`, auth: { strategy: 'bearer', value: 'nope' } } });
    expect(wrong).toMatchObject({ status: 200, body: { ok: false, error: 'The server answered HTTP 401', error_kind: 'connection' } });
    const closed = await test(key, { server: { type: 'http', url: 'http://127.0.0.1:9/mcp' } });
    expect(closed.body).toEqual({ ok: false, error: 'Connection refused', error_kind: 'connection' });
    const slow = await test(key, { server: { type: 'http', url: `${mcp.url}/hang` }, timeout: 0.5 });
    expect(slow.body).toEqual({ ok: false, error: 'No answer within 0.5 s', error_kind: 'timeout' });
  });

  it('refuses stdio (it runs in the sandbox) and a bad body with 422', async () => {
    const key = await freshKey('refusals');
    const stdio = await test(key, { server: { type: 'stdio', command: 'npx' } });
    expect(stdio).toMatchObject({
      status: 422,
      body: { detail: 'stdio MCP servers run inside the sandbox and cannot be tested from the settings page.' },
    });
    expect((await test(key, { server: { type: 'http', url: `${mcp.url}/mcp` }, timeout: 121 })).status).toBe(422);
    expect((await test(key, { server: { type: 'http', url: `${mcp.url}/mcp`, authentication: {} } })).status).toBe(422);
    expect((await test(key, {})).status).toBe(422);
  });
});

describe('POST /api/v1/settings/mcp/{settings_key}/test', () => {
  it('answers only {ok}, 404 for a name the user does not have, 422 for stdio and a bad body', async () => {
    const key = await userWithServers('stored');
    const url = (name: string) => `/api/v1/settings/mcp/${name}/test`;
    expect(await call(app, 'POST', url('search'), { key, body: { timeout: 5 } })).toMatchObject({ status: 200, body: { ok: true } });
    expect((await call(app, 'POST', url('nope'), { key, body: {} })).body).toEqual({ detail: 'MCP server was not found' });
    expect((await call(app, 'POST', url('search'), { key: await freshKey('stranger'), body: {} })).status).toBe(404);
    expect((await call(app, 'POST', url('fs'), { key, body: {} })).status).toBe(422);
    expect((await call(app, 'POST', url('search'), { key, body: { timeout: 31 } })).status).toBe(422);
    expect((await call(app, 'POST', url('search'), { key, body: { verbose: true } })).status).toBe(422);
    expect((await call(app, 'POST', url('-bad'), { key, body: {} })).status).toBe(422);
  });

  it('answers {ok:false} when the stored server refuses, without its words', async () => {
    const key = await freshKey('stored-wrong');
    const map = { search: { url: `${mcp.url}/mcp`, auth: { strategy: 'bearer', value: 'wrong-key-1234' } } };
    await call(app, 'POST', '/api/v1/settings', { key, body: { agent_settings_diff: { mcp_config: map } } });
    expect((await call(app, 'POST', '/api/v1/settings/mcp/search/test', { key, body: {} })).body).toEqual({ ok: false });
  });
});

describe('what a server says back', () => {
  it('is masked wherever it repeats a credential of the test, tool names included', async () => {
    const leaky = await startMcpServer({ bearer: BEARER, apiKey: API_KEY }, { leakKeyInToolName: true });
    try {
      const probe = new McpProbe(new ProviderHostPolicy(['127.0.0.0/8'], []));
      const result = await probe.probe(
        { transport: 'http', url: `${leaky.url}/mcp`, headers: { Authorization: `Bearer ${BEARER}` } },
        5000,
      );
      expect(result).toEqual({ ok: true, tools: [`key-${MASK}`, 'echo', 'whoami'] });
    } finally {
      await leaky.close();
    }
  });
});

describe('the probe outside MCP_TEST_HOSTS', () => {
  it('refuses loopback and private addresses by default, before connecting', async () => {
    const probe = new McpProbe(new ProviderHostPolicy([], []));
    const before = mcp.seen.length;
    const result = await probe.probe({ transport: 'http', url: `${mcp.url}/mcp`, headers: {} }, 2000);
    expect(result).toEqual({ ok: false, error: 'The URL is not allowed here (MCP_TEST_HOSTS)', error_kind: 'connection' });
    expect(mcp.seen.length).toBe(before);
  });
});
