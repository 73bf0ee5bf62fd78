// The LLM gateway (docs/llm-gateway.md) as an agent uses it: a conversation started on the fake
// agent server gets the gateway's URL and a token in its start request, never its owner's key;
// calls with that token reach the loopback stub provider with the real key, streamed or not, in
// the OpenAI and Anthropic styles, priced from the tables and counted once per call; the
// conversation's budget stops the next call before the provider sees it, and raising it lets
// the same conversation go on; provider errors pass through with the key taken out.
import crypto from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call } from '../helpers/app.js';
import { startConversationApp, type ConversationApp } from '../helpers/conversation-app.js';
import { eventually } from '../helpers/eventually.js';
import { startStubLlm, type StubLlm } from '../helpers/stub-llm.js';

let app: ConversationApp;
let stub: StubLlm;

beforeAll(async () => {
  stub = await startStubLlm();
  app = await startConversationApp('llm-gateway', { ADMIN_USERS: 'gw-admin' });
}, 120_000);

afterAll(async () => {
  await app?.close();
  await stub?.close();
});

interface Started {
  key: string;
  realKey: string;
  conversationId: string;
  /** The agent's LLM as its start request gave it. */
  llm: { model: string; base_url: string; api_key: string };
  request: Record<string, unknown>;
}

async function startWith(model: string, baseUrl: string, key?: string): Promise<Started> {
  key ??= await app.user('gw');
  const realKey = `sk-real-${crypto.randomBytes(12).toString('hex')}`;
  await call(app, 'POST', '/api/settings', { key, body: { llm_model: model, llm_api_key: realKey, llm_base_url: baseUrl } });
  const task = await app.startConversation(key);
  expect(task.status, task.detail ?? '').toBe('READY');
  const request = await startRequestOf(app, key, task.app_conversation_id);
  return { key, realKey, conversationId: task.app_conversation_id, llm: request.agent.llm, request };
}

/** A user whose LLM is a model the gateway cannot front (AWS Bedrock), and the result of a start. */
async function startUnfronted(on: ConversationApp, user: string, choice: boolean | null) {
  const key = await on.user(user);
  const realKey = `sk-bedrock-${crypto.randomBytes(12).toString('hex')}`;
  await call(on, 'POST', '/api/settings', { key, body: { llm_model: 'bedrock/anthropic.claude-3-5-sonnet', llm_api_key: realKey } });
  if (choice !== null) expect((await call(on, 'POST', '/api/v1/settings', { key, body: { llm_key_in_sandbox: choice } })).status).toBe(200);
  return { key, realKey, task: await on.startConversation(key) };
}

/** The agent's start request, as the fake agent server keeps it. */
async function startRequestOf(on: ConversationApp, key: string, conversationId: string): Promise<Record<string, any>> {
  const [conversation] = (await call(on, 'GET', `/api/v1/app-conversations?ids=${conversationId}`, { key })).body;
  const agentUrl = conversation.conversation_url.replace(/\/api\/conversations\/.*$/, '');
  const [sent] = (await (
    await fetch(`${agentUrl}/api/conversations?ids=${conversationId}`, { headers: { 'x-session-api-key': conversation.session_api_key } })
  ).json()) as { request: Record<string, any> }[];
  return sent!.request;
}

/** A call as the agent's LLM client makes it, at the service's own address (the test is outside the sandbox). */
function gatewayCall(started: Started, path: string, body: Record<string, unknown>, token = started.llm.api_key) {
  const anthropic = path.endsWith('/messages');
  return fetch(`${app.url}/llm${path}`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      ...(anthropic ? { 'x-api-key': token, 'anthropic-version': '2023-06-01' } : { authorization: `Bearer ${token}` }),
    },
    body: JSON.stringify(body),
  });
}

const chat = (model: string, extra: Record<string, unknown> = {}) => ({
  model,
  messages: [{ role: 'user', content: 'Hello' }],
  ...extra,
});

async function ledger(conversationId: string) {
  return app.rawCollection('llm_calls').find({ conversationId }).sort({ at: 1 }).toArray();
}

describe('the LLM gateway', () => {
  let gpt: Started;

  beforeAll(async () => {
    gpt = await startWith('openai/gpt-4o', stub.url);
  }, 60_000);

  it('gives the agent the gateway and a conversation token, never the key', () => {
    expect(gpt.llm.model).toBe('openai/gpt-4o');
    expect(gpt.llm.base_url).toMatch(/\/llm\/v1$/);
    expect(gpt.llm.api_key).toMatch(new RegExp(`^ohg_${gpt.conversationId}_`));
    expect(JSON.stringify(gpt.request)).not.toContain(gpt.realKey);
    expect(JSON.stringify(gpt.request)).not.toContain(stub.url);
  });

  it('forwards a chat call with the owner’s key and prices it from the table', async () => {
    const before = stub.requests.length;
    const res = await gatewayCall(gpt, '/v1/chat/completions', chat('gpt-4o'));
    expect(res.status).toBe(200);
    const answer = (await res.json()) as { choices: unknown[]; usage: { prompt_tokens: number } };
    expect(answer.choices.length).toBe(1);
    const seen = stub.requests[before]!;
    expect(seen.path).toBe('/v1/chat/completions');
    expect(seen.headers.authorization).toBe(`Bearer ${gpt.realKey}`);
    // gpt-4o at $2.5/M input, $1.25/M cached, $10/M output: 8 fresh, 3 cached and 7 output tokens.
    expect(Number(res.headers.get('x-litellm-response-cost'))).toBeCloseTo(9.375e-5, 12);
    // Written once the answer has gone.
    const calls = await eventually('the call in the ledger', async () => {
      const all = await ledger(gpt.conversationId);
      return all.length ? all : null;
    });
    expect(calls.at(-1)).toMatchObject({ outcome: 'ok', status: 200, promptTokens: 11, completionTokens: 7, cacheReadTokens: 3 });
  });

  it('passes a stream through as it arrives, asks for its usage and counts it', async () => {
    const res = await gatewayCall(gpt, '/v1/chat/completions', chat('gpt-4o', { stream: true }));
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toContain('text/event-stream');
    const text = await res.text();
    expect(text).toContain('data: [DONE]');
    const sent = stub.requests.at(-1)!.body as { stream_options?: { include_usage?: boolean } };
    expect(sent.stream_options?.include_usage).toBe(true);
    const calls = await eventually('the streamed call in the ledger', async () => {
      const all = await ledger(gpt.conversationId);
      return all.length >= 2 ? all : null;
    });
    expect(calls.at(-1)).toMatchObject({ outcome: 'ok', promptTokens: 11, completionTokens: 7 });
    expect(calls.at(-1)!.cost).toBeCloseTo(9.375e-5, 12);
  });

  it('shows the gateway’s count as the conversation’s cost', async () => {
    const conversation = await eventually('the cost of two calls', async () => {
      const [c] = (await call(app, 'GET', `/api/v1/app-conversations?ids=${gpt.conversationId}`, { key: gpt.key })).body;
      return c?.metrics?.accumulated_cost >= 2 * 9.375e-5 - 1e-12 ? c : null;
    });
    expect(conversation.metrics.accumulated_cost).toBeCloseTo(2 * 9.375e-5, 10);
  });

  it('runs a model it cannot front only by its owner’s choice, which puts the key in the sandbox', async () => {
    const refused = await startUnfronted(app, 'unfronted', null);
    expect(refused.task.status).toBe('ERROR');
    expect(refused.task.detail).toMatch(/fronts OpenAI-compatible and Anthropic models only.*llm_key_in_sandbox/);
    expect((await call(app, 'GET', '/api/v1/settings', { key: refused.key })).body.llm_key_in_sandbox).toBe(false);

    const chosen = await startUnfronted(app, 'unfronted-by-choice', true);
    expect(chosen.task.status, chosen.task.detail ?? '').toBe('READY');
    expect((await call(app, 'GET', '/api/v1/settings', { key: chosen.key })).body.llm_key_in_sandbox).toBe(true);
    const request = await startRequestOf(app, chosen.key, chosen.task.app_conversation_id);
    expect(request.agent.llm).toMatchObject({ model: 'bedrock/anthropic.claude-3-5-sonnet', api_key: chosen.realKey });
    // No route: its cost is the agent's reports, as with the gateway off.
    const routes = await app
      .rawCollection('llm_routes')
      .find({}, { projection: { _id: 1 } })
      .toArray();
    expect(routes.map((route) => String(route._id))).not.toContain(chosen.task.app_conversation_id);
  });

  it('refuses a wrong token, another model and a call of another style, before the provider', async () => {
    const before = stub.requests.length;
    const wrong = await gatewayCall(gpt, '/v1/chat/completions', chat('gpt-4o'), `${gpt.llm.api_key.slice(0, -4)}AAAA`);
    expect(wrong.status).toBe(401);
    const none = await gatewayCall(gpt, '/v1/chat/completions', chat('gpt-4o'), 'sk-anything');
    expect(none.status).toBe(401);
    const other = await gatewayCall(gpt, '/v1/chat/completions', chat('gpt-4-turbo'));
    expect(other.status).toBe(403);
    expect(((await other.json()) as { error: { type: string } }).error.type).toBe('model_not_allowed');
    const unknown = await fetch(`${app.url}/llm/v1/embeddings`, {
      method: 'POST',
      headers: { authorization: `Bearer ${gpt.llm.api_key}` },
    });
    expect(unknown.status).toBe(404);
    expect(stub.requests.length).toBe(before);
  });

  it('follows the models an administrator allows a user, at the next gateway call and the next start', async () => {
    const userId = `limited-${crypto.randomBytes(4).toString('hex')}`;
    const limited = await startWith('openai/gpt-4o', stub.url, await app.keyFor(userId));
    const admin = await app.keyFor('gw-admin');
    const policy = `/api/admin/users/${userId}/llm-policy`;
    expect((await call(app, 'PUT', policy, { key: limited.key, body: { allowed_models: ['*'] } })).status).toBe(403);
    expect((await call(app, 'GET', policy, { key: limited.key })).status).toBe(403);
    expect((await call(app, 'PUT', policy, { key: admin, body: { allowed_models: ['openai/gpt-4 o'] } })).status).toBe(422);

    const set = await call(app, 'PUT', policy, { key: admin, body: { allowed_models: ['anthropic/*', 'openai/gpt-4o-mini'] } });
    expect(set.status).toBe(200);
    expect(set.body).toMatchObject({ user_id: userId, allowed_models: ['anthropic/*', 'openai/gpt-4o-mini'], updated_by: 'gw-admin' });
    const before = stub.requests.length;
    const refused = await gatewayCall(limited, '/v1/chat/completions', chat('gpt-4o'));
    expect(refused.status).toBe(403);
    const error = ((await refused.json()) as { error: { type: string; message: string } }).error;
    expect(error).toMatchObject({ type: 'model_not_allowed', message: expect.stringContaining('an administrator allows you') });
    expect(stub.requests.length).toBe(before);
    const next = await app.startConversation(limited.key);
    expect(next.status).toBe('ERROR');
    expect(next.detail).toContain('openai/gpt-4o is not among the models an administrator allows you');
    // Other users are not concerned.
    expect((await gatewayCall(gpt, '/v1/chat/completions', chat('gpt-4o'))).status).toBe(200);

    const cleared = await call(app, 'PUT', policy, { key: admin, body: { allowed_models: null } });
    expect(cleared.body).toMatchObject({ allowed_models: null, updated_by: null });
    expect((await gatewayCall(limited, '/v1/chat/completions', chat('gpt-4o'))).status).toBe(200);
    const audit = await call(app, 'GET', `/api/audit/events/search?action=llmPolicies.set&user_id=gw-admin`, { key: admin });
    expect(audit.body.items.map((e: { outcome: string }) => e.outcome)).toEqual(['ok', 'ok', 'BAD_REQUEST']);
  });

  it('passes a provider’s error through, Retry-After included, with the key taken out', async () => {
    stub.failNext(1, {
      status: 429,
      retryAfter: 7,
      body: { error: { message: `Rate limited for key ${gpt.realKey} (…${gpt.realKey.slice(-4)})`, type: 'rate_limit' } },
    });
    const res = await gatewayCall(gpt, '/v1/chat/completions', chat('gpt-4o'));
    expect(res.status).toBe(429);
    expect(res.headers.get('retry-after')).toBe('7');
    const text = await res.text();
    expect(text).toContain('Rate limited');
    expect(text).not.toContain(gpt.realKey);
    expect(text).not.toContain(gpt.realKey.slice(-4));
  });

  it('stops the call past the conversation’s budget before the provider, and goes on once it is raised', async () => {
    const patch = (budget: number) =>
      call(app, 'PATCH', `/api/v1/app-conversations/${gpt.conversationId}`, { key: gpt.key, body: { max_budget_per_task: budget } });
    expect((await patch(0.0001)).status).toBe(200);
    // Two calls so far (9.375e-5 each) have passed $0.0001.
    const before = stub.requests.length;
    const refused = await gatewayCall(gpt, '/v1/chat/completions', chat('gpt-4o'));
    expect(refused.status).toBe(429);
    const body = (await refused.json()) as { error: { message: string; type: string } };
    expect(body.error.type).toBe('budget_exceeded');
    expect(body.error.message).toContain('budget_exceeded');
    expect(stub.requests.length).toBe(before);
    expect((await patch(1)).status).toBe(200);
    const again = await gatewayCall(gpt, '/v1/chat/completions', chat('gpt-4o'));
    expect(again.status).toBe(200);
    expect(stub.requests.length).toBe(before + 1);
  });

  it('speaks Anthropic’s Messages, streamed, with the key in x-api-key', async () => {
    const claude = await startWith('anthropic/claude-sonnet-4-5-20250929', stub.origin);
    expect(claude.llm.base_url).toMatch(/\/llm$/);
    const res = await gatewayCall(claude, '/v1/messages', {
      model: 'claude-sonnet-4-5-20250929',
      max_tokens: 100,
      stream: true,
      messages: [{ role: 'user', content: 'Hello' }],
    });
    expect(res.status).toBe(200);
    expect(await res.text()).toContain('message_stop');
    const seen = stub.requests.at(-1)!;
    expect(seen.path).toBe('/v1/messages');
    expect(seen.headers['x-api-key']).toBe(claude.realKey);
    expect(seen.headers.authorization).toBeUndefined();
    const [recorded] = await eventually('the Anthropic call in the ledger', async () => {
      const all = await ledger(claude.conversationId);
      return all.length ? all : null;
    });
    // Sonnet 4.5: 11 input at $3/M, 3 cache reads at $0.3/M, 2 cache writes at $3.75/M, 7 output at $15/M.
    expect(recorded!.cost).toBeCloseTo(0.0001464, 12);
  });

  it('counts calls made at once once each (written together after their answers)', async () => {
    const busy = await startWith('openai/gpt-4o', stub.url);
    const answers = await Promise.all(
      Array.from({ length: 20 }, (_, i) => gatewayCall(busy, '/v1/chat/completions', chat('gpt-4o', i % 2 ? { stream: true } : {}))),
    );
    for (const res of answers) {
      expect(res.status).toBe(200);
      await res.text();
    }
    const conversation = await eventually('the 20 calls in the conversation’s cost', async () => {
      const [c] = (await call(app, 'GET', `/api/v1/app-conversations?ids=${busy.conversationId}`, { key: busy.key })).body;
      return c?.metrics?.accumulated_cost >= 20 * 9.375e-5 - 1e-12 ? c : null;
    });
    expect(conversation.metrics.accumulated_cost).toBeCloseTo(20 * 9.375e-5, 12);
    expect(conversation.metrics.accumulated_token_usage).toMatchObject({ prompt_tokens: 20 * 11, completion_tokens: 20 * 7 });
    const calls = await ledger(busy.conversationId);
    expect(new Set(calls.map((c) => c._id)).size).toBe(20);
    const route = await app.rawCollection('llm_routes').findOne({ _id: busy.conversationId as never });
    expect(route).toMatchObject({ calls: 20, promptTokens: 20 * 11, completionTokens: 20 * 7 });
  });
});

describe('remote MCP servers through the gateway', () => {
  let mcp: http.Server;
  let mcpUrl: string;
  const seen: { method: string; path: string; authorization: string | undefined; apiKey?: string | string[]; body: string }[] = [];

  beforeAll(async () => {
    // A streamable-HTTP server at /mcp and a legacy SSE one at /sse (its messages at /messages).
    mcp = http.createServer((req, res) => {
      let body = '';
      req.on('data', (c: Buffer) => (body += c));
      req.on('end', () => {
        seen.push({
          method: req.method!,
          path: req.url!,
          authorization: req.headers.authorization,
          apiKey: req.headers['x-api-key'],
          body,
        });
        if (req.url === '/sse') {
          res.writeHead(200, { 'content-type': 'text/event-stream' });
          res.write('event: endpoint\ndata: /messages?session_id=s1\n\n');
          setTimeout(() => res.end(), 200);
          return;
        }
        if (req.url!.startsWith('/messages')) return void res.writeHead(202).end();
        res
          .writeHead(200, { 'content-type': 'application/json', 'mcp-session-id': 'm1' })
          .end(JSON.stringify({ jsonrpc: '2.0', id: 0, result: {} }));
      });
    });
    await new Promise<void>((resolve) => mcp.listen(0, '127.0.0.1', resolve));
    mcpUrl = `http://127.0.0.1:${(mcp.address() as AddressInfo).port}`;
  });

  afterAll(async () => new Promise<void>((resolve) => mcp.close(() => resolve())));

  it('gives the agent the gateway for servers with keys, and swaps the key in on the way out', async () => {
    const key = await app.user('mcp');
    const mcpKey = `mcp-real-${crypto.randomBytes(8).toString('hex')}`;
    await call(app, 'POST', '/api/settings', {
      key,
      body: {
        llm_model: 'openai/gpt-4o',
        llm_api_key: 'sk-mcp-user',
        llm_base_url: stub.url,
        mcp_config: {
          sse_servers: [{ url: `${mcpUrl}/sse`, api_key: mcpKey }],
          shttp_servers: [{ url: `${mcpUrl}/mcp`, api_key: mcpKey }, { url: `${mcpUrl}/open` }],
        },
      },
    });
    const task = await app.startConversation(key);
    expect(task.status, task.detail ?? '').toBe('READY');
    const request = await startRequestOf(app, key, task.app_conversation_id);
    const servers = request.agent.mcp_config;
    const token = request.agent.llm.api_key as string;
    expect(JSON.stringify(request)).not.toContain(mcpKey);
    expect(servers.shttp_0).toMatchObject({
      url: expect.stringMatching(/\/llm\/mcp\/shttp_0$/),
      headers: { Authorization: `Bearer ${token}` },
    });
    expect(servers.sse_0).toMatchObject({ url: expect.stringMatching(/\/llm\/mcp\/sse_0$/), transport: 'sse' });
    // A server without a key is left as configured.
    expect(servers.shttp_1).toMatchObject({ url: `${mcpUrl}/open` });

    const auth = { authorization: `Bearer ${token}` };
    const posted = await fetch(`${app.url}/llm/mcp/shttp_0`, {
      method: 'POST',
      headers: { ...auth, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 0, method: 'initialize' }),
    });
    expect(posted.status).toBe(200);
    expect(posted.headers.get('mcp-session-id')).toBe('m1');
    expect(seen.at(-1)).toMatchObject({ method: 'POST', path: '/mcp', authorization: `Bearer ${mcpKey}` });
    expect(JSON.parse(seen.at(-1)!.body)).toMatchObject({ method: 'initialize' });

    const events = await (await fetch(`${app.url}/llm/mcp/sse_0`, { headers: auth })).text();
    const endpoint = /data: (\S+)/.exec(events)![1]!;
    expect(endpoint).toBe(`/llm/mcp/sse_0/messages?to=${encodeURIComponent(`${mcpUrl}/messages?session_id=s1`)}`);
    const message = await fetch(`${app.url}${endpoint}`, {
      method: 'POST',
      headers: { ...auth, 'content-type': 'application/json' },
      body: '{}',
    });
    expect(message.status).toBe(202);
    expect(seen.at(-1)).toMatchObject({ method: 'POST', path: '/messages?session_id=s1', authorization: `Bearer ${mcpKey}` });

    // Not to another origin, not without the token.
    const elsewhere = `/llm/mcp/sse_0/messages?to=${encodeURIComponent('http://127.0.0.1:9/steal')}`;
    expect((await fetch(`${app.url}${elsewhere}`, { method: 'POST', headers: auth, body: '{}' })).status).toBe(403);
    expect((await fetch(`${app.url}/llm/mcp/shttp_0`, { method: 'POST', body: '{}' })).status).toBe(401);
    expect((await fetch(`${app.url}/llm/mcp/shttp_9`, { method: 'POST', headers: auth, body: '{}' })).status).toBe(404);
  });

  it('takes the header credentials of a server saved in the 2026 shape too, by its name; a disabled server is left out', async () => {
    const key = await app.user('mcp-2026');
    const headerKey = `mcp-header-${crypto.randomBytes(8).toString('hex')}`;
    await call(app, 'POST', '/api/settings', {
      key,
      body: { llm_model: 'openai/gpt-4o', llm_api_key: 'sk-mcp-user', llm_base_url: stub.url },
    });
    const servers = { docs: { url: `${mcpUrl}/mcp`, headers: { 'X-Api-Key': headerKey } }, off: { url: `${mcpUrl}/off`, enabled: false } };
    await call(app, 'POST', '/api/v1/settings', { key, body: { agent_settings_diff: { mcp_config: { mcpServers: servers } } } });
    const task = await app.startConversation(key);
    expect(task.status, task.detail ?? '').toBe('READY');
    const request = await startRequestOf(app, key, task.app_conversation_id);
    const token = request.agent.llm.api_key as string;
    expect(JSON.stringify(request)).not.toContain(headerKey);
    expect(request.agent.mcp_config).toEqual({
      docs: {
        url: expect.stringMatching(/\/llm\/mcp\/docs$/),
        transport: 'streamable-http',
        headers: { Authorization: `Bearer ${token}` },
      },
    });
    const posted = await fetch(`${app.url}/llm/mcp/docs`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 0, method: 'initialize' }),
    });
    expect(posted.status).toBe(200);
    expect(seen.at(-1)).toMatchObject({ path: '/mcp', apiKey: headerKey, authorization: undefined });
  });
});

describe('the LLM gateway’s refusals by configuration', () => {
  let strict: ConversationApp;

  beforeAll(async () => {
    // No operator "*" price, and no loopback upstream: none listed, no host port allowed to sandboxes.
    // Nor a key in any sandbox, whatever its owner chooses.
    strict = await startConversationApp('llm-gateway-strict', {
      LLM_OPERATOR_PRICES: '',
      LLM_UPSTREAM_HOSTS: '*',
      SANDBOX_HOST_PORTS: '',
      LLM_KEY_IN_SANDBOX: 'never',
    });
  }, 120_000);

  afterAll(async () => strict?.close());

  async function startOn(model: string) {
    const key = await strict.user('strict');
    await call(strict, 'POST', '/api/settings', { key, body: { llm_model: model, llm_api_key: 'sk-strict', llm_base_url: stub.url } });
    const task = await strict.startConversation(key);
    return (await startRequestOf(strict, key, task.app_conversation_id)).agent.llm.api_key as string;
  }

  const post = (token: string, model: string) =>
    fetch(`${strict.url}/llm/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
      body: JSON.stringify(chat(model)),
    });

  it('refuses a model no table prices (never free by accident)', async () => {
    const before = stub.requests.length;
    const res = await post(await startOn('openai/stub'), 'stub');
    expect(res.status).toBe(400);
    expect(((await res.json()) as { error: { type: string } }).error.type).toBe('model_not_priced');
    expect(stub.requests.length).toBe(before);
  });

  it('refuses a base URL on loopback that the operator did not list', async () => {
    const before = stub.requests.length;
    const res = await post(await startOn('openai/gpt-4o'), 'gpt-4o');
    expect(res.status).toBe(403);
    expect(((await res.json()) as { error: { type: string } }).error.type).toBe('upstream_not_allowed');
    expect(stub.requests.length).toBe(before);
  });

  it('refuses a model it cannot front whatever its owner chose, when the operator allows no key in a sandbox', async () => {
    const { task } = await startUnfronted(strict, 'never-direct', true);
    expect(task.status).toBe('ERROR');
    expect(task.detail).toMatch(/fronts OpenAI-compatible and Anthropic models only/);
    expect(task.detail).not.toMatch(/llm_key_in_sandbox/);
  });
});
