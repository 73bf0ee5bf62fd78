// The 2026 start request and conversation fields over real HTTP with Bearer keys, against the
// fake agent server in process sandboxes: each 2026 start field is honoured (what reaches the
// agent server is read back from it) or refused with 422 naming it; the conversation carries
// the 2026 fields; DELETE answers as the reference and takes the sandbox with it; and another
// user's key, a sandbox's key and a paused sandbox's key reach nothing. The search's orders and
// filters, PATCH, and other users' conversations absent are tested through the procedures in
// test/domain/conversation-search.test.ts.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call } from '../helpers/app.js';
import { startConversationApp, waitForTask, type ConversationApp } from '../helpers/conversation-app.js';

let app: ConversationApp;
let alice: string;
let bob: string;
const hello = { content: [{ type: 'text', text: 'Hello' }] };

/** A REST call as today's clients make it: Authorization: Bearer. */
const as = (key: string, method: string, path: string, body?: unknown, headers: Record<string, string> = {}) =>
  call(app, method, path, { headers: { authorization: `Bearer ${key}`, ...headers }, ...(body === undefined ? {} : { body }) });

/** What the agent server in the conversation's sandbox was asked to start (its own record of the request). */
async function agentRequest(key: string, conversationId: string, sandboxId: string) {
  const [sandbox] = (await as(key, 'GET', `/api/v1/sandboxes?id=${sandboxId}`)).body;
  const agent = sandbox.exposed_urls.find((u: { name: string }) => u.name === 'AGENT_SERVER').url;
  const res = await fetch(`${agent}/api/conversations/${conversationId}`, { headers: { 'x-session-api-key': sandbox.session_api_key } });
  return { request: ((await res.json()) as { request: any }).request, sandbox };
}

async function start(key: string, body: Record<string, unknown>) {
  const started = await as(key, 'POST', '/api/v1/app-conversations', body);
  expect(started.status, started.text).toBe(200);
  const task = await waitForTask(app, key, started.body.id);
  expect(task.status, task.detail ?? '').toBe('READY');
  return task;
}

beforeAll(async () => {
  app = await startConversationApp('convs-v1');
  alice = await app.user('alice');
  bob = await app.user('bob');
}, 60_000);
afterAll(async () => {
  await app?.close();
});

describe('the 2026 start request', () => {
  let chosen: string;
  let conversationId: string;
  let sandboxId: string;

  it('honours conversation_id, system_message_suffix, plugins, observability, secrets, public and the trigger', async () => {
    await as(alice, 'POST', '/api/secrets', { name: 'STORED', value: 'stored-value' });
    await as(alice, 'POST', '/api/secrets', { name: 'BOTH', value: 'stored-loses' });
    chosen = randomUUID();
    const task = await start(alice, {
      conversation_id: chosen,
      initial_message: hello,
      system_message_suffix: 'Answer in haiku.',
      plugins: [{ source: 'github:acme/plugin', ref: 'v1', repo_path: 'plugins/one', parameters: { depth: 3, mode: 'fast' } }],
      observability_span_name: 'wb_rubric_eval',
      observability_tags: ['wb-rubric', 'evaluation'],
      observability_metadata: { evaluation: 'wb', attempt: 1, replay: false },
      secrets: { BOTH: 'request-wins', ONLY_HERE: 'given' },
      public: true,
      trigger: 'automation',
    });
    conversationId = task.app_conversation_id;
    sandboxId = task.sandbox_id;
    expect(conversationId).toBe(chosen.replace(/-/g, ''));
    const { request } = await agentRequest(alice, conversationId, sandboxId);
    expect(request.conversation_id).toBe(conversationId);
    expect(request.agent.agent_context).toEqual({ system_message_suffix: 'Answer in haiku.', load_user_skills: true });
    expect(request.plugins).toEqual([{ source: 'github:acme/plugin', ref: 'v1', repo_path: 'plugins/one' }]);
    const texts = request.initial_message.content.map((c: { text: string }) => c.text);
    expect(texts[0]).toBe('Hello');
    expect(texts[1]).toContain('- depth: 3\n- mode: fast');
    expect(request).toMatchObject({
      observability_span_name: 'wb_rubric_eval',
      observability_tags: ['wb-rubric', 'evaluation'],
      observability_metadata: { evaluation: 'wb', attempt: 1, replay: false },
    });
    const secretValue = (name: string) => request.secrets[name]?.value;
    expect([secretValue('STORED'), secretValue('BOTH'), secretValue('ONLY_HERE')]).toEqual(['stored-value', 'request-wins', 'given']);
  });

  it('keeps the request secrets encrypted: the task shows their names only, the database no value', async () => {
    const tasks = (await as(alice, 'GET', `/api/v1/app-conversations/start-tasks/search?conversation_id__eq=${conversationId}`)).body;
    expect(tasks.items[0].request.secrets).toEqual({ BOTH: '**********', ONLY_HERE: '**********' });
    const stored = JSON.stringify(await app.rawCollection('start_tasks').find({}).toArray());
    expect(stored).not.toContain('request-wins');
    expect(stored).not.toContain('given"');
  });

  it('returns the 2026 conversation fields, by the chosen id dashed or not', async () => {
    const [dashed, plain] = (await as(alice, 'GET', `/api/v1/app-conversations?ids=${chosen}&ids=${conversationId}`)).body;
    expect(dashed).toEqual(plain);
    expect(plain).toMatchObject({
      id: conversationId,
      agent_kind: 'openhands',
      public: true,
      tags: {},
      acp_server: null,
      launched_agent_profile: null,
      trigger: 'automation',
      sandbox_status: 'RUNNING',
    });
  });

  it('refuses a taken conversation_id with 409, a malformed one with 422', async () => {
    expect(await as(bob, 'POST', '/api/v1/app-conversations', { conversation_id: chosen })).toMatchObject({
      status: 409,
      body: { detail: `Conversation id ${conversationId} is taken: choose another or leave it out` },
    });
    const malformed = await as(alice, 'POST', '/api/v1/app-conversations', { conversation_id: 'not-a-uuid' });
    expect(malformed.status).toBe(422);
    expect(malformed.body.detail[0].loc).toEqual(['body', 'conversation_id']);
  });

  it('refuses what it cannot honour with 422 naming the field: an unknown agent profile, a suggested task beside a message', async () => {
    expect(await as(alice, 'POST', '/api/v1/app-conversations', { agent_profile_id: 'no-such-profile' })).toMatchObject({
      status: 422,
      body: { detail: [{ type: 'value_error', loc: ['body', 'agent_profile_id'], msg: 'Agent profile not found: no-such-profile' }] },
    });
    const task = { git_provider: 'github', task_type: 'OPEN_ISSUE', repo: 'acme/widgets', issue_number: 7, title: 'Broken' };
    expect(await as(alice, 'POST', '/api/v1/app-conversations', { suggested_task: task, initial_message: hello })).toMatchObject({
      status: 422,
      body: { detail: [{ loc: ['body', 'suggested_task'] }] },
    });
    const bad = await as(alice, 'POST', '/api/v1/app-conversations', { observability_metadata: { mixed: [1, 1.5] }, plugins: [{}] });
    expect(bad.status).toBe(422);
    expect(bad.body.detail.map((d: { loc: unknown[] }) => d.loc.slice(0, 2))).toEqual(
      expect.arrayContaining([
        ['body', 'observability_metadata'],
        ['body', 'plugins'],
      ]),
    );
  });

  it('starts a planning agent for agent_type "plan": planning tools, planning prompt, its boundaries', async () => {
    const task = await start(alice, { agent_type: 'plan', initial_message: hello });
    const { request } = await agentRequest(alice, task.app_conversation_id, task.sandbox_id);
    expect(request.agent.tools.map((t: { name: string }) => t.name)).toEqual(['glob', 'grep', 'planning_file_editor']);
    expect(request.agent.tools[2].params.plan_path).toMatch(/\/\.agents_tmp\/PLAN\.md$/);
    expect(request.agent.system_prompt_filename).toBe('system_prompt_planning.j2');
    expect(request.agent.agent_context.system_message_suffix).toMatch(/^You are a planning agent/);
    expect(Object.keys(request.tool_module_qualnames)).toEqual(['glob', 'grep', 'planning_file_editor']);
  });

  it('builds the first message from a suggested task (trigger suggested_task, its repository)', async () => {
    // The repository cannot be read without a git token: the task fails, but the request as recorded shows what was built.
    const suggested = { git_provider: 'github', task_type: 'OPEN_ISSUE', repo: 'acme/widgets', issue_number: 7, title: 'Broken' };
    const started = await as(alice, 'POST', '/api/v1/app-conversations', { suggested_task: suggested });
    expect(started.body.request).toMatchObject({
      trigger: 'suggested_task',
      selected_repository: 'acme/widgets',
      git_provider: 'github',
      initial_message: { content: [{ type: 'text', text: 'Resolve issue #7 of acme/widgets: "Broken".' }] },
    });
    expect((await waitForTask(app, alice, started.body.id)).status).toBe('ERROR');
  });
});

describe('DELETE, and the credentials the conversation routes refuse', () => {
  let id: string;
  let sandboxId: string;

  beforeAll(async () => {
    const task = await start(bob, { initial_message: hello });
    id = task.app_conversation_id;
    sandboxId = task.sandbox_id;
    // The title as the user sets it (the agent's webhooks may name it too: set last).
    await as(bob, 'PATCH', `/api/v1/app-conversations/${id}`, { title: 'beta' });
  }, 90_000);

  it("refuses a sandbox's session key as a user's key, running or paused (401), and scopes a Bearer key to its user", async () => {
    const [sandbox] = (await as(bob, 'GET', `/api/v1/sandboxes?id=${sandboxId}`)).body;
    const withSandboxKey = { headers: { 'x-session-api-key': sandbox.session_api_key } };
    expect((await call(app, 'PATCH', `/api/v1/app-conversations/${id}`, { ...withSandboxKey, body: { title: 'x' } })).status).toBe(401);
    expect((await call(app, 'DELETE', `/api/v1/app-conversations/${id}`, withSandboxKey)).status).toBe(401);
    // Alice's Bearer key beside Bob's sandbox key is Alice: Bob's conversation stays out of reach.
    expect(await as(alice, 'DELETE', `/api/v1/app-conversations/${id}`, undefined, withSandboxKey.headers)).toMatchObject({
      status: 404,
      body: { detail: 'Conversation not found' },
    });
    expect(await as(alice, 'PATCH', `/api/v1/app-conversations/${id}`, { title: 'mine now' })).toMatchObject({
      status: 404,
      body: { detail: `Conversation ${id} not found` },
    });
    expect((await as(bob, 'POST', `/api/v1/sandboxes/${sandbox.id}/pause`, {})).status).toBe(200);
    expect((await call(app, 'GET', '/api/v1/app-conversations/search', withSandboxKey)).status).toBe(401);
    expect((await as(bob, 'GET', `/api/v1/app-conversations?ids=${id}`)).body[0].title).toBe('beta');
  });

  it('DELETE answers {"success": true}, removes the conversation and its sandbox, then 404s', async () => {
    expect(await as(bob, 'DELETE', `/api/v1/app-conversations/${id}`)).toMatchObject({ status: 200, body: { success: true } });
    expect((await as(bob, 'GET', `/api/v1/app-conversations?ids=${id}`)).body).toEqual([null]);
    expect((await as(bob, 'GET', `/api/v1/sandboxes?id=${sandboxId}`)).body).toEqual([null]);
    expect(await as(bob, 'DELETE', `/api/v1/app-conversations/${id}`)).toMatchObject({
      status: 404,
      body: { detail: 'Conversation not found' },
    });
  });
});
