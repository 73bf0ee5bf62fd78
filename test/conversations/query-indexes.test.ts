// A representative run through every area of the service (settings, secrets, providers,
// sandboxes, V1 conversations and start tasks, webhooks, budgets, the V0 conversation routes,
// browser sessions), with
// the driver recording every command the service sends: each query must be served by an
// index the models declare (helpers/query-indexes.ts). Every other test app is checked the
// same way when it stops, so routes added later are checked by their own tests too.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateKeyText } from '../../src/crypto.js';
import { call, startTestApp, testDatabaseUri, uniqueDbName, unservedQueries, type TestApp } from '../helpers/app.js';
import { eventually } from '../helpers/eventually.js';
import { startFakeGitProvider, type FakeGitProvider } from '../helpers/fake-git-provider.js';
import { declaredIndexes, queriesOf } from '../helpers/query-indexes.js';
import { FAKE_AGENT_SPEC, writeSpecsFile } from '../helpers/specs.js';

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'acp-queries-'));
const SERVICE_KEY = 's'.repeat(40);
let app: TestApp;
let provider: FakeGitProvider;
let key: string;

beforeAll(async () => {
  provider = await startFakeGitProvider();
  provider.validTokens.add('ghp_queries');
  app = await startTestApp('query-indexes', {
    DATA_DIR: path.join(tmp, 'data'),
    MONGODB_URI: testDatabaseUri(uniqueDbName('query-indexes')),
    ENCRYPTION_KEY: generateKeyText(),
    SANDBOX_SPECS_FILE: writeSpecsFile(tmp, [FAKE_AGENT_SPEC]),
    START_TASK_POLL_MS: '100',
    GITHUB_API_URL: provider.url,
    // Nothing answers there: the user's automation key and aliases are made all the same.
    AUTOMATION_URL: 'http://127.0.0.1:9',
    AUTOMATION_SERVICE_KEY: SERVICE_KEY,
  });
  key = await app.keyFor('query-user');
});
afterAll(async () => {
  await app.stop();
  await provider.close();
  fs.rmSync(tmp, { recursive: true, force: true });
});

const ok = async (method: string, url: string, body?: unknown, headers?: Record<string, string>) => {
  const res = await call(app, method, url, { key, ...(body === undefined ? {} : { body }), ...(headers ? { headers } : {}) });
  expect(res.status, `${method} ${url}: ${res.text}`).toBeLessThan(300);
  return res.body;
};

describe('every query of a representative run is served by a declared index', () => {
  it('runs settings, secrets, providers, sandboxes, conversations, start tasks, webhooks and the V0 routes', async () => {
    await ok('POST', '/api/settings', { llm_model: 'openai/stub', llm_api_key: 'sk-stub', llm_base_url: 'http://127.0.0.1:9/v1' });
    await ok('GET', '/api/settings');
    await ok('POST', '/api/secrets', { name: 'TOKEN', value: 'v' });
    await ok('GET', '/api/secrets');
    await ok('PUT', '/api/secrets/TOKEN', { name: 'TOKEN2', description: 'renamed' });
    await ok('DELETE', '/api/secrets/TOKEN2');
    await ok('POST', '/api/add-git-providers', { provider_tokens: { github: { token: 'ghp_queries' } } });
    await ok('POST', '/api/unset-provider-tokens');
    // The audit log: this user is no administrator (ADMIN_USERS, then their role: user_roles).
    expect((await call(app, 'GET', '/api/audit/events/search?action=secrets.create', { key })).status).toBe(403);
    const admin = await app.keyFor('default');
    expect((await call(app, 'GET', '/api/audit/events/search?user_id=query-user&action=secrets.create', { key: admin })).status).toBe(200);
    expect((await call(app, 'GET', '/api/audit/events/export', { key: admin })).status).toBe(200);
    // Sign out everywhere: every browser session of the user, by user.
    await ok('POST', '/api/auth/sessions/end-all', {});
    // The models this user may run (every start and gateway call reads them).
    const policy = { allowed_models: ['openai/*'] };
    expect((await call(app, 'PUT', '/api/admin/users/query-user/llm-policy', { key: admin, body: policy })).status).toBe(200);
    expect((await call(app, 'GET', '/api/admin/users/query-user/llm-policy', { key: admin })).status).toBe(200);
    // Organisations: created by the administrator, a member invited and joined, roles, the LLM defaults, removal.
    const asAdmin = (method: string, url: string, body?: unknown) =>
      call(app, method, url, { key: admin, ...(body === undefined ? {} : { body }) });
    const org = (await asAdmin('POST', '/api/organizations', { name: 'Indexed' })).body.id;
    await ok('POST', '/api/v1/settings', { email: 'query-user@example.com' });
    const invited = await asAdmin('POST', `/api/organizations/${org}/members/invite`, { emails: ['query-user@example.com'] });
    await asAdmin('GET', `/api/organizations/${org}/members/invite`);
    await ok('POST', '/api/organizations/members/invite/accept', {
      token: new URL(invited.body.successful[0].invite_url).searchParams.get('token'),
    });
    await ok('GET', '/api/organizations');
    await ok('POST', `/api/organizations/${org}/switch`);
    await ok('GET', `/api/organizations/${org}/members?email=query`);
    await ok('GET', `/api/organizations/${org}/members/count`);
    await asAdmin('PATCH', `/api/organizations/${org}/members/query-user`, { role: 'admin' });
    await asAdmin('PATCH', `/api/organizations/${org}/settings`, { llm_api_key: 'sk-org' });
    await ok('GET', `/api/organizations/${org}/settings`);
    await asAdmin('POST', `/api/organizations/${org}/secrets`, { name: 'ORG_TOKEN', value: 'v' });
    await asAdmin('PUT', `/api/organizations/${org}/secrets/ORG_TOKEN`, { value: 'w' });
    await ok('GET', `/api/organizations/${org}/secrets`);
    await asAdmin('PATCH', `/api/organizations/${org}/budgets`, { monthly_limit: 10 });
    await asAdmin('GET', `/api/organizations/${org}/budgets`);
    await ok('GET', `/api/organizations/${org}/conversations`);
    const second = await asAdmin('POST', `/api/organizations/${org}/members/invite`, { emails: ['later@example.com'] });
    await asAdmin('DELETE', `/api/organizations/${org}/members/invite/${second.body.successful[0].id}`);
    await asAdmin('DELETE', `/api/organizations/${org}/secrets/ORG_TOKEN`);
    await asAdmin('DELETE', `/api/organizations/${org}/members/query-user`);
    expect((await asAdmin('DELETE', `/api/organizations/${org}`)).status).toBe(200);

    const sandbox = await ok('POST', '/api/v1/sandboxes');
    await eventually('the sandbox to run', async () => (await ok('GET', `/api/v1/sandboxes?id=${sandbox.id}`))[0]?.status === 'RUNNING');
    await ok('GET', '/api/v1/sandboxes/search?limit=5');
    await ok('POST', `/api/v1/sandboxes/${sandbox.id}/pause`);
    await ok('POST', `/api/v1/sandboxes/${sandbox.id}/resume`);
    await ok('DELETE', `/api/v1/sandboxes/${sandbox.id}`);

    // A grouped start (it looks for a running sandbox of the user's) and the day's count of starts.
    await ok('POST', '/api/v1/settings', { sandbox_grouping_strategy: 'ADD_TO_ANY' });
    const task = await ok('POST', '/api/v1/app-conversations', {});
    await ok('GET', '/api/quota/status');
    // Automations: the forwarded call (its key made), users/me as the automation service asks it, the key route.
    expect((await call(app, 'GET', '/api/automation/v1', { key })).status).toBe(502);
    const trpc = await fetch(`${app.url}/trpc/automations.forwardingKey`, { headers: { 'x-session-api-key': key } });
    const automationKey = ((await trpc.json()) as { result: { data: { json: { key: string } } } }).result.data.json.key;
    const alias = (await call(app, 'GET', '/api/v1/users/me', { headers: { authorization: `Bearer ${automationKey}` } })).body.id;
    await ok('POST', `/api/service/users/${alias}/orgs/${alias}/api-keys`, { name: 'automation' }, { 'x-service-api-key': SERVICE_KEY });
    const ready = await eventually('the start task to be READY', async () => {
      const [t] = await ok('GET', `/api/v1/app-conversations/start-tasks?ids=${task.id}`);
      return t?.status === 'READY' ? t : null;
    });
    const conversationId = ready.app_conversation_id as string;
    await ok('GET', '/api/v1/app-conversations/search?limit=5');
    await ok('GET', '/api/v1/app-conversations/count');
    await ok('GET', `/api/v1/app-conversations?ids=${conversationId}`);
    await ok('GET', '/api/v1/app-conversations/start-tasks/search?limit=5');
    await ok('GET', '/api/v1/app-conversations/start-tasks/count');
    // The 2026 routes: every search order and filter, an update, a message sent and one queued, the events and the export.
    for (const order of ['CREATED_AT', 'UPDATED_AT_DESC', 'TITLE']) await ok('GET', `/api/v1/app-conversations/search?sort_order=${order}`);
    await ok(
      'GET',
      `/api/v1/app-conversations/search?sandbox_id__eq=${ready.sandbox_id}&title__contains=x&updated_at__gte=2020-01-01T00:00:00Z`,
    );
    await ok('PATCH', `/api/v1/app-conversations/${conversationId}`, { public: true });
    // An LLM call through the gateway with the conversation's token (its route read, the call
    // written to the ledger; no provider listens at the default base URL: it is unreachable).
    const [listed] = await ok('GET', `/api/v1/app-conversations?ids=${conversationId}`);
    const agentUrl = String(listed.conversation_url).replace(/\/api\/conversations\/.*$/, '');
    const sent = (await (
      await fetch(`${agentUrl}/api/conversations?ids=${conversationId}`, { headers: { 'x-session-api-key': listed.session_api_key } })
    ).json()) as { request: { agent: { llm: { api_key: string } } } }[];
    const llmCall = await fetch(`${app.url}/llm/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${sent[0]!.request.agent.llm.api_key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'stub', messages: [{ role: 'user', content: 'Hi' }] }),
    });
    expect(llmCall.status).toBe(502);
    const message = { content: [{ type: 'text', text: 'More' }] };
    await ok('POST', `/api/v1/app-conversations/${conversationId}/send-message`, message);
    await ok('POST', `/api/v1/conversations/${conversationId}/pending-messages`, message);
    await ok('GET', `/api/v1/conversation/${conversationId}/events/search?kind__eq=MessageEvent`);
    await ok('GET', `/api/v1/conversation/${conversationId}/events?id=x`);
    await ok('GET', `/api/v1/app-conversations/${conversationId}/download`);

    const sandboxKey = (await ok('GET', `/api/v1/sandboxes?id=${ready.sandbox_id}`))[0].session_api_key as string;
    const asSandbox = { 'x-session-api-key': sandboxKey };
    const webhook = `/api/v1/webhooks/${ready.sandbox_id}`;
    expect(
      (await call(app, 'POST', `${webhook}/conversations`, { body: { id: conversationId, title: 'Hooked' }, headers: asSandbox })).status,
    ).toBe(200);
    const events = [{ kind: 'ConversationStateUpdateEvent', key: 'execution_status', value: 'running' }];
    expect((await call(app, 'POST', `${webhook}/events/${conversationId}`, { body: events, headers: asSandbox })).status).toBe(200);
    // Budgets (docs/budgets.md): a cost reported, the limits set, the month read, a budget raised.
    await ok('POST', '/api/settings', { max_budget_per_task: 50, max_budget_per_month: 100 });
    const stats = { usage_to_metrics: { agent: { model_name: 'openai/stub', accumulated_cost: 0.5, accumulated_token_usage: null } } };
    const report = { id: conversationId, execution_status: 'running', stats };
    expect((await call(app, 'POST', `${webhook}/conversations`, { body: report, headers: asSandbox })).status).toBe(200);
    await ok('GET', '/api/v1/budget');
    await ok('PATCH', `/api/v1/app-conversations/${conversationId}`, { max_budget_per_task: 60 });

    const v0 = await ok('POST', '/api/conversations', { initial_user_msg: 'Hello' });
    await ok('GET', '/api/conversations?limit=5');
    await ok('GET', `/api/conversations/${v0.conversation_id}`);
    await eventually(
      'the V0 conversation to start',
      async () => (await ok('GET', `/api/conversations/${v0.conversation_id}`))?.status !== 'STARTING',
    );
    await ok('PATCH', `/api/conversations/${v0.conversation_id}`, { title: 'Renamed' });
    await ok('DELETE', `/api/conversations/${v0.conversation_id}`);
    await ok('DELETE', `/api/v1/app-conversations/${conversationId}`);

    // The device flow, as the CLI and Canvas run it: authorize, approve as the signed-in user, collect the key.
    const device = await call(app, 'POST', '/oauth/device/authorize', { body: {} });
    expect(device.status).toBe(200);
    const approved = await call(app, 'POST', '/oauth/device/verify-authenticated', {
      key,
      rawBody: new URLSearchParams({ user_code: device.body.user_code, action: 'approve' }).toString(),
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
    });
    expect(approved.status, approved.text).toBeLessThan(300);
    const token = await fetch(`${app.url}/oauth/device/token`, {
      method: 'POST',
      body: new URLSearchParams({ device_code: device.body.device_code }),
    });
    expect(token.status).toBe(200);

    // A browser session: sign in, use the cookie, sign out.
    const signedIn = await call(app, 'POST', '/api/auth/session', { body: { api_key: key } });
    expect(signedIn.status).toBe(200);
    // (A browser sends its page's origin; state changes by cookie need one of ours.)
    const cookie = { cookie: signedIn.headers.get('set-cookie')!.split(';')[0]!, origin: app.url };
    expect((await call(app, 'GET', '/api/settings', { headers: cookie })).status).toBe(200);
    expect((await call(app, 'DELETE', '/api/auth/session', { headers: cookie })).status).toBe(200);

    const indexes = declaredIndexes(app.server.deps.db.models);
    // Every collection was used (a query, or for the decision claims an insert), not only set up at start.
    const setUp = new Set(['createIndexes', 'create', 'listIndexes']);
    const used = new Set(app.commands.filter((c) => !setUp.has(c.commandName)).map((c) => String(c.command[c.commandName])));
    for (const collection of indexes.keys()) expect(used, `nothing sent to ${collection}`).toContain(collection);
    expect(app.commands.flatMap((c) => queriesOf(c)).length).toBeGreaterThan(100);
    expect(unservedQueries(app.commands, indexes)).toEqual([]);
  });
});
