// Conversations within a team organisation (docs/organizations.md): a member who saved no LLM
// settings of their own starts one with X-Org-Id (as Agent Canvas and CloudClient send it), or
// in their current organisation (one who saved no settings at all: switched to it), and
// its agent runs on the organisation's model, through the LLM gateway with the organisation's
// key (never in the sandbox, never readable by the member); the organisation's owners and
// admins see everyone's conversations started in it, members only their own list; and the
// organisation's monthly budget stops a member's call before the provider sees it, until raised.
import crypto from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call } from '../helpers/app.js';
import { startConversationApp, waitForTask, type ConversationApp } from '../helpers/conversation-app.js';
import { eventually } from '../helpers/eventually.js';
import { startStubLlm, type StubLlm } from '../helpers/stub-llm.js';

let app: ConversationApp;
let stub: StubLlm;
const ORG_KEY = `sk-org-${crypto.randomBytes(8).toString('hex')}`;

beforeAll(async () => {
  stub = await startStubLlm();
  app = await startConversationApp('org-conversations', { ADMIN_USERS: 'lead' });
}, 120_000);

afterAll(async () => {
  await app?.close();
  await stub?.close();
});

/** A team organisation of `lead`'s whose LLM is the stub's, and `member` (their key) joined by its invitation to `email`. */
async function teamWith(name: string, lead: string, member: string, email: string): Promise<string> {
  const org = (await call(app, 'POST', '/api/organizations', { key: lead, body: { name } })).body.id as string;
  await call(app, 'PATCH', `/api/organizations/${org}/settings`, {
    key: lead,
    body: { agent_settings_diff: { llm: { model: 'openai/gpt-4o', base_url: stub.url, api_key: ORG_KEY } } },
  });
  const invited = await call(app, 'POST', `/api/organizations/${org}/members/invite`, { key: lead, body: { emails: [email] } });
  const token = new URL(invited.body.successful[0].invite_url).searchParams.get('token');
  expect((await call(app, 'POST', '/api/organizations/members/invite/accept', { key: member, body: { token } })).status).toBe(200);
  return org;
}

/** The conversation's start request as its (fake) agent server keeps it. */
async function startRequestOf(key: string, conversationId: string) {
  const [conversation] = (await call(app, 'GET', `/api/v1/app-conversations?ids=${conversationId}`, { key })).body;
  const agentUrl = conversation.conversation_url.replace(/\/api\/conversations\/.*$/, '');
  const [sent] = (await (
    await fetch(`${agentUrl}/api/conversations?ids=${conversationId}`, { headers: { 'x-session-api-key': conversation.session_api_key } })
  ).json()) as {
    request: { agent: { llm: { model: string; base_url: string; api_key: string } }; secrets: Record<string, { value: string }> };
  }[];
  return { conversation, request: sent!.request };
}

/** A chat call as the agent's LLM client makes it, with the conversation's gateway token. */
const gatewayChat = (token: string) =>
  fetch(`${app.url}/llm/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
    body: JSON.stringify({ model: 'gpt-4o', messages: [{ role: 'user', content: 'Hello' }] }),
  });

describe('a conversation in a team organisation', () => {
  it("runs on the organisation's LLM through the gateway; its admins list it, members cannot", async () => {
    const lead = await app.keyFor('lead');
    const dev = await app.keyFor('dev');
    await call(app, 'POST', '/api/v1/settings', { key: dev, body: { email: 'dev@example.com' } });
    const org = await teamWith('Builders', lead, dev, 'dev@example.com');

    // The organisation's secrets: set by its owner, their names listed to members, the values to nobody.
    const orgSecret = (key: string, body: Record<string, string>) => call(app, 'POST', `/api/organizations/${org}/secrets`, { key, body });
    expect(await orgSecret(lead, { name: 'DEPLOY_TOKEN', value: 'org-deploy-1f3a', description: 'deploys' })).toMatchObject({
      status: 201,
      body: { name: 'DEPLOY_TOKEN', description: 'deploys' },
    });
    expect((await orgSecret(lead, { name: 'SHARED', value: 'org-shared-value' })).status).toBe(201);
    expect(await orgSecret(lead, { name: 'SHARED', value: 'again' })).toMatchObject({ status: 409 });
    expect(await orgSecret(dev, { name: 'MINE', value: 'x' })).toMatchObject({ status: 403 });
    const names = await call(app, 'GET', `/api/organizations/${org}/secrets`, { key: dev });
    expect(names.body).toEqual({
      secrets: [
        { name: 'DEPLOY_TOKEN', description: 'deploys' },
        { name: 'SHARED', description: '' },
      ],
    });
    expect(names.text).not.toContain('org-deploy-1f3a');
    await call(app, 'POST', '/api/v1/secrets', { key: dev, body: { name: 'SHARED', value: 'dev-own-value' } });

    // In their personal organisation the member has no LLM of their own: that start fails.
    const personal = await call(app, 'POST', '/api/v1/app-conversations', { key: dev, body: {} });
    expect((await waitForTask(app, dev, personal.body.id)).detail).toMatch(/No LLM model configured/);

    const started = await call(app, 'POST', '/api/v1/app-conversations', { key: dev, headers: { 'x-org-id': org }, body: {} });
    expect(started.status).toBe(200);
    const task = await waitForTask(app, dev, started.body.id);
    expect(task.status, task.detail ?? '').toBe('READY');
    const { conversation, request: sent } = await startRequestOf(dev, task.app_conversation_id);
    expect(conversation.llm_model).toBe('openai/gpt-4o');

    // The agent got the gateway and a token; the gateway forwards with the organisation's key.
    const llm = sent.agent.llm;
    // The organisation's secrets reach its conversations; the member's own of the same name wins.
    expect(sent.secrets.DEPLOY_TOKEN?.value).toBe('org-deploy-1f3a');
    expect(sent.secrets.SHARED?.value).toBe('dev-own-value');
    expect(llm.base_url).toMatch(/\/llm\/v1$/);
    expect(JSON.stringify(sent)).not.toContain(ORG_KEY);
    const res = await gatewayChat(llm.api_key);
    expect(res.status).toBe(200);
    expect(stub.requests.at(-1)!.headers.authorization).toBe(`Bearer ${ORG_KEY}`);

    // The organisation's view: its owner sees the member's conversation; the member may not look.
    const listed = await call(app, 'GET', `/api/organizations/${org}/conversations`, { key: lead });
    expect(listed.body).toMatchObject({ items: [{ id: task.app_conversation_id, user_id: 'dev', llm_model: 'openai/gpt-4o' }] });
    expect(await call(app, 'GET', `/api/organizations/${org}/conversations`, { key: dev })).toMatchObject({
      status: 403,
      body: { detail: 'Requires view_org_conversations permission' },
    });
    // The personal view lists what was started outside organisations only.
    const own = await call(app, 'GET', `/api/organizations/dev/conversations`, { key: dev });
    expect(own.body.items.map((c: { id: string }) => c.id)).not.toContain(task.app_conversation_id);
    // A member who never saved settings at all (as one signing in through OIDC: their id is their email).
    const ops = await app.keyFor('ops@example.com');
    const second = await call(app, 'POST', `/api/organizations/${org}/members/invite`, {
      key: lead,
      body: { emails: ['ops@example.com'] },
    });
    const opsToken = new URL(second.body.successful[0].invite_url).searchParams.get('token');
    expect((await call(app, 'POST', '/api/organizations/members/invite/accept', { key: ops, body: { token: opsToken } })).status).toBe(200);
    await call(app, 'POST', `/api/organizations/${org}/switch`, { key: ops });
    const opsTask = await waitForTask(app, ops, (await call(app, 'POST', '/api/v1/app-conversations', { key: ops, body: {} })).body.id);
    expect(opsTask.status, opsTask.detail ?? '').toBe('READY');
    expect((await call(app, 'GET', `/api/organizations/${org}/conversations`, { key: lead })).body.items).toHaveLength(2);

    // An organisation the user is not in: refused, nothing started.
    const foreign = await call(app, 'POST', '/api/v1/app-conversations', { key: dev, headers: { 'x-org-id': 'lead' }, body: {} });
    expect(foreign).toMatchObject({ status: 403, body: { detail: 'User is not a member of the requested organization' } });
  });

  it("stops a member's call past the organisation's monthly budget before the provider, and goes on once raised", async () => {
    const lead = await app.keyFor('lead');
    const member = await app.keyFor('budget-member@example.com');
    const org = await teamWith('Frugal', lead, member, 'budget-member@example.com');
    const budget = (body?: unknown) =>
      call(app, body === undefined ? 'GET' : 'PATCH', `/api/organizations/${org}/budgets`, { key: lead, ...(body ? { body } : {}) });
    // gpt-4o's stub call costs $9.375e-5: the second one passes $0.00015.
    expect(await budget({ monthly_limit: 0.00015 })).toMatchObject({ status: 200, body: { enabled: true, monthly_limit: 0.00015 } });
    expect(await call(app, 'GET', `/api/organizations/${org}/budgets`, { key: member })).toMatchObject({ status: 403 });

    const task = await waitForTask(
      app,
      member,
      (await call(app, 'POST', '/api/v1/app-conversations', { key: member, headers: { 'x-org-id': org }, body: {} })).body.id,
    );
    expect(task.status, task.detail ?? '').toBe('READY');
    const { request: sent } = await startRequestOf(member, task.app_conversation_id);
    const llmCall = () => gatewayChat(sent.agent.llm.api_key);
    for (let n = 1; n <= 2; n++) {
      expect((await llmCall()).status).toBe(200);
      await eventually('the call counted in the organisation', async () => (await budget()).body.current_spend >= n * 9e-5);
    }
    const before = stub.requests.length;
    const refused = await llmCall();
    expect(refused.status).toBe(429);
    expect(((await refused.json()) as { error: { message: string } }).error.message).toContain("organization's budget");
    expect(stub.requests.length).toBe(before);
    const stopped = await eventually('the conversation stopped', async () => {
      const record = await app.rawCollection('app_conversations').findOne({ _id: task.app_conversation_id as never });
      return record?.budget_stop ?? null;
    });
    expect(stopped).toMatchObject({ reason: 'monthly_budget_reached', of: 'organization', limit: 0.00015 });
    expect((await budget()).body.current_spend_percentage).toBeGreaterThanOrEqual(100);

    expect((await budget({ monthly_limit: 1 })).status).toBe(200);
    await eventually('the stop lifted', async () => {
      const record = await app.rawCollection('app_conversations').findOne({ _id: task.app_conversation_id as never });
      return record?.budget_stop === null;
    });
    expect((await llmCall()).status).toBe(200);
    expect(stub.requests.length).toBe(before + 1);
    // Removing it: no cap at all; enabling without a limit is refused.
    expect((await budget({ enabled: false })).body).toMatchObject({ enabled: false, monthly_limit: null });
    expect(await budget({ enabled: true })).toMatchObject({
      status: 400,
      body: { detail: 'monthly_limit is required when budgets are enabled' },
    });
  });

  it('ends what a removed member held there: keys bound to it, the gateway routes and sandboxes of their conversations in it', async () => {
    const lead = await app.keyFor('lead');
    const leaving = await app.keyFor('leaving@example.com');
    const org = await teamWith('Departures', lead, leaving, 'leaving@example.com');
    const bound = (await call(app, 'POST', '/api/keys', { key: leaving, body: { name: 'team-ci', org_id: org } })).body.key as string;
    const other = (await call(app, 'POST', '/api/keys', { key: leaving, body: { name: 'mine' } })).body.key as string;
    const task = await waitForTask(app, leaving, (await call(app, 'POST', '/api/v1/app-conversations', { key: bound, body: {} })).body.id);
    expect(task.status, task.detail ?? '').toBe('READY');
    const { request: sent } = await startRequestOf(leaving, task.app_conversation_id);
    const llmCall = () => gatewayChat(sent.agent.llm.api_key);
    expect((await llmCall()).status).toBe(200);

    expect((await call(app, 'DELETE', `/api/organizations/${org}/members/leaving@example.com`, { key: lead })).status).toBe(200);
    const before = stub.requests.length;
    expect((await llmCall()).status).toBe(401);
    expect(stub.requests.length).toBe(before);
    expect((await call(app, 'GET', '/api/keys/current', { headers: { authorization: `Bearer ${bound}` } })).status).toBe(401);
    expect((await call(app, 'GET', '/api/keys/current', { headers: { authorization: `Bearer ${other}` } })).status).toBe(200);
    const [sandbox] = (await call(app, 'GET', `/api/v1/sandboxes?id=${task.sandbox_id}`, { key: leaving })).body;
    expect(sandbox.status).toBe('PAUSED');
    // The conversation stays theirs to read.
    expect((await call(app, 'GET', `/api/v1/app-conversations?ids=${task.app_conversation_id}`, { key: leaving })).body[0]).toMatchObject({
      id: task.app_conversation_id,
    });
  });
});
