// The 2026 routes on one running V1 conversation over real HTTP with Bearer keys, against the
// fake agent server (which runs commands and git for real): messages sent and queued (delivered
// once the start is READY, in order, at most 10), the LLM and ACP-model switches, a file's text,
// the files under a directory, skills, hooks, git changes and diffs, the trajectory export; a
// paused sandbox resumed by the routes that need it and left alone by skills and hooks; and
// another user's key answered 404 on every one of them.
import fs from 'node:fs';
import path from 'node:path';
import zlib from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CONTRACT_ROUTES } from '../contract-routes.js';
import { call } from '../helpers/app.js';
import { SLOW_SPEC, startConversationApp, waitForTask, type ConversationApp } from '../helpers/conversation-app.js';
import { eventually } from '../helpers/eventually.js';

let app: ConversationApp;
let alice: string;
let bob: string;
let id: string;
let sandboxId: string;
let workspace: string;
const text = (t: string) => ({ content: [{ type: 'text', text: t }] });

const as = (key: string, method: string, urlPath: string, body?: unknown) =>
  call(app, method, urlPath, { headers: { authorization: `Bearer ${key}` }, ...(body === undefined ? {} : { body }) });
const v1 = (suffix: string, conversationId = id) => `/api/v1/app-conversations/${conversationId}${suffix}`;

/** The user messages the agent server of a sandbox has received for a conversation, in order. */
async function agentMessages(key: string, conversationId: string, sandbox: string): Promise<string[]> {
  const [info] = (await as(key, 'GET', `/api/v1/sandboxes?id=${sandbox}`)).body;
  const agent = info.exposed_urls.find((u: { name: string }) => u.name === 'AGENT_SERVER').url;
  const res = await fetch(`${agent}/api/conversations/${conversationId}/events/search?limit=100`, {
    headers: { 'x-session-api-key': info.session_api_key },
  });
  const events = ((await res.json()) as { items: any[] }).items;
  return events.filter((e) => e.source === 'user').map((e) => e.llm_message.content[0].text);
}

/** The entries of a zip (names and inflated text), read from its local headers. */
function unzip(zip: Buffer): Record<string, string> {
  const files: Record<string, string> = {};
  for (let at = 0; zip.readUInt32LE(at) === 0x04034b50;) {
    const size = zip.readUInt32LE(at + 18);
    const nameLength = zip.readUInt16LE(at + 26);
    const start = at + 30 + nameLength + zip.readUInt16LE(at + 28);
    files[zip.subarray(at + 30, at + 30 + nameLength).toString()] = zlib.inflateRawSync(zip.subarray(start, start + size)).toString();
    at = start + size;
  }
  return files;
}

beforeAll(async () => {
  app = await startConversationApp('convs-v1-ws');
  alice = await app.user('alice');
  bob = await app.user('bob');
  const started = await as(alice, 'POST', '/api/v1/app-conversations', { initial_message: text('Build the widget') });
  const task = await waitForTask(app, alice, started.body.id);
  expect(task.status, task.detail ?? '').toBe('READY');
  id = task.app_conversation_id;
  sandboxId = task.sandbox_id;
  workspace = app.server.deps.runtime.workingDir(sandboxId, app.server.deps.services.sandboxSpecs.default);
}, 60_000);
afterAll(async () => {
  await app?.close();
});

describe('messages', () => {
  it('relays send-message to the agent server, which reports it like any event', async () => {
    expect(await as(alice, 'POST', v1('/send-message'), { role: 'user', ...text('And make it blue'), run: true })).toMatchObject({
      status: 200,
      body: { success: true, sandbox_status: 'RUNNING', message: null },
    });
    expect(await agentMessages(alice, id, sandboxId)).toEqual(['Build the widget', 'And make it blue']);
    await eventually('the message to be stored from its webhook', async () => {
      const count = await as(alice, 'GET', `/api/v1/conversation/${id}/events/count?kind__eq=MessageEvent`);
      return count.body >= 3;
    });
    expect((await as(alice, 'POST', v1('/send-message'), { role: 'assistant', ...text('x') })).status).toBe(422);
    expect((await as(alice, 'POST', v1('/send-message'), { content: [] })).status).toBe(422);
  });

  it('resumes a paused sandbox to deliver a message, and says so', async () => {
    expect((await as(alice, 'POST', `/api/v1/sandboxes/${sandboxId}/pause`, {})).status).toBe(200);
    const sent = await as(alice, 'POST', v1('/send-message'), text('Still there?'));
    expect(sent.body).toEqual({ success: true, sandbox_status: 'RUNNING', message: 'The sandbox was PAUSED and has been resumed' });
    expect((await agentMessages(alice, id, sandboxId)).at(-1)).toBe('Still there?');
  });

  it('queues messages while a conversation starts (by task id, also "task-<id>") and delivers them in order at READY', async () => {
    const slow = await as(alice, 'POST', '/api/v1/sandboxes', { sandbox_spec_id: SLOW_SPEC.id });
    const started = await as(alice, 'POST', '/api/v1/app-conversations', { sandbox_id: slow.body.id, initial_message: text('first') });
    const taskId = started.body.id as string;
    const queue = (target: string, t: string) => as(alice, 'POST', `/api/v1/conversations/${target}/pending-messages`, text(t));
    const first = await queue(taskId, 'queued one');
    expect(first).toMatchObject({ status: 201, body: { queued: true, position: 1 } });
    expect(first.body.id).toMatch(/^[0-9a-f-]{36}$/);
    expect((await queue(`task-${taskId}`, 'queued two')).body).toMatchObject({ queued: true, position: 2 });
    for (let i = 3; i <= 10; i++) expect((await queue(taskId, `filler ${i}`)).status).toBe(201);
    const full = await queue(taskId, 'one too many');
    expect(full).toMatchObject({ status: 429, body: { detail: 'Too many pending messages: at most 10 wait per conversation' } });
    expect(full.headers.get('retry-after')).toBe('5');
    const task = await waitForTask(app, alice, taskId);
    expect(task.status, task.detail ?? '').toBe('READY');
    const fillers = Array.from({ length: 8 }, (_, i) => `filler ${i + 3}`);
    await eventually(
      'the queued messages to reach the agent',
      async () => (await agentMessages(alice, task.app_conversation_id, slow.body.id)).length === 11,
    );
    expect(await agentMessages(alice, task.app_conversation_id, slow.body.id)).toEqual(['first', 'queued one', 'queued two', ...fillers]);
    // A ready conversation gets the message at once.
    expect((await queue(task.app_conversation_id, 'now')).body).toMatchObject({ queued: false, position: 0 });
    expect((await agentMessages(alice, task.app_conversation_id, slow.body.id)).at(-1)).toBe('now');
    expect(await app.rawCollection('pending_messages').countDocuments({})).toBe(0);
  });

  it("answers 404 for an unknown id or another user's task", async () => {
    const unknown = await as(alice, 'POST', '/api/v1/conversations/task-0123456789abcdef0123456789abcdef/pending-messages', text('x'));
    expect(unknown).toMatchObject({ status: 404, body: { detail: 'Conversation task-0123456789abcdef0123456789abcdef not found' } });
    expect((await as(bob, 'POST', `/api/v1/conversations/${id}/pending-messages`, text('x'))).status).toBe(404);
  });
});

describe('switching the LLM', () => {
  it('answers 404 for a profile the user does not have (no LLM profiles are wired yet)', async () => {
    expect(await as(alice, 'POST', v1('/switch_profile'), { profile_name: 'fast' })).toMatchObject({
      status: 404,
      body: { detail: "Profile 'fast' not found" },
    });
  });

  it("relays switch_acp_model and answers the agent server's refusal (this agent is no ACP agent) as 400 with its reason", async () => {
    expect(await as(alice, 'POST', v1('/switch_acp_model'), { model: 'claude-sonnet' })).toMatchObject({
      status: 400,
      body: { detail: 'The agent server refused the model switch: switch_acp_model is only supported for ACP conversations.' },
    });
  });
});

describe('the workspace', () => {
  beforeAll(() => {
    fs.mkdirSync(path.join(workspace, 'src', 'deep'), { recursive: true });
    fs.mkdirSync(path.join(workspace, 'node_modules', 'dep'), { recursive: true });
    fs.writeFileSync(path.join(workspace, 'README.md'), '# Widget\n\nÜnïcode ok.\n');
    fs.writeFileSync(path.join(workspace, 'src', 'deep', 'main.ts'), 'export {};\n');
    fs.writeFileSync(path.join(workspace, 'node_modules', 'dep', 'index.js'), '');
    fs.mkdirSync(path.join(workspace, '.openhands', 'microagents'), { recursive: true });
    fs.writeFileSync(path.join(workspace, '.openhands', 'microagents', 'repo.md'), 'Use pnpm.\n');
    const hook = { matcher: 'terminal', hooks: [{ type: 'command', command: 'echo checked', timeout: 5, async_: false }] };
    fs.writeFileSync(path.join(workspace, '.openhands', 'hooks.json'), JSON.stringify({ pre_tool_use: [hook], stop: [] }));
  });

  it("reads a file's text (text/plain), /workspace/project naming the sandbox's working directory", async () => {
    const res = await fetch(`${app.url}${v1('/file')}?file_path=/workspace/project/README.md`, {
      headers: { authorization: `Bearer ${alice}` },
    });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/plain; charset=utf-8');
    expect(await res.text()).toBe('# Widget\n\nÜnïcode ok.\n');
    expect((await as(alice, 'GET', `${v1('/file')}?file_path=${workspace}/src/deep/main.ts`)).text).toBe('export {};\n');
    expect(await as(alice, 'GET', `${v1('/file')}?file_path=/workspace/project/missing.md`)).toMatchObject({
      status: 404,
      body: { detail: 'No such file: /workspace/project/missing.md' },
    });
    expect((await as(alice, 'GET', `${v1('/file')}?file_path=/workspace/project/src`)).status).toBe(404);
  });

  it('lists the files under a directory relative to it, without vendored ones', async () => {
    const files = (await as(alice, 'GET', `${v1('/files')}?path=%2Fworkspace%2Fproject`)).body;
    expect(files).toEqual(expect.arrayContaining(['README.md', 'src/deep/main.ts', '.openhands/hooks.json']));
    expect(files.filter((f: string) => f.startsWith('node_modules/') || f.startsWith('.git/'))).toEqual([]);
    expect((await as(alice, 'GET', `${v1('/files')}?path=/workspace/project/src`)).body).toEqual(['deep/main.ts']);
    expect((await as(alice, 'GET', `${v1('/files')}?path=/workspace/project/nowhere`)).body).toEqual([]);
  });

  it("lists the project's skills and hooks", async () => {
    expect((await as(alice, 'GET', v1('/skills'))).body).toEqual({
      skills: [{ name: 'repo', type: 'repo', content: 'Use pnpm.\n', triggers: [] }],
    });
    expect((await as(alice, 'GET', v1('/hooks'))).body).toEqual({
      hooks: [
        {
          event_type: 'pre_tool_use',
          matchers: [{ matcher: 'terminal', hooks: [{ type: 'command', command: 'echo checked', timeout: 5, async: false }] }],
        },
      ],
    });
  });

  it("gives git changes and diffs in the agent server's shapes", async () => {
    const changes = (await as(alice, 'GET', `${v1('/git/changes')}?path=/workspace/project`)).body;
    expect(changes).toEqual(expect.arrayContaining([{ status: 'ADDED', path: 'README.md' }]));
    const diff = await as(alice, 'GET', `${v1('/git/diff')}?path=/workspace/project/README.md&ref=HEAD`);
    expect(diff.body).toEqual({ modified: '# Widget\n\nÜnïcode ok.', original: '' });
    expect((await as(alice, 'GET', `${v1('/git/diff')}?path=/elsewhere/none.txt`)).status).toBe(404);
    expect((await as(alice, 'GET', v1('/git/changes'))).status).toBe(422); // path is required, as in the reference
  });

  it('exports the trajectory as a zip of meta.json and the stored events', async () => {
    const res = await fetch(`${app.url}${v1('/download')}`, { headers: { authorization: `Bearer ${alice}` } });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('application/zip');
    expect(res.headers.get('content-disposition')).toBe(`attachment; filename="conversation_${id}.zip"`);
    const files = unzip(Buffer.from(await res.arrayBuffer()));
    const names = Object.keys(files);
    expect(names[0]).toBe('meta.json');
    expect(JSON.parse(files['meta.json']!)).toMatchObject({ id, sandbox_id: sandboxId });
    const stored = (await as(alice, 'GET', `/api/v1/conversation/${id}/events/search?limit=100`)).body.items;
    expect(names.slice(1)).toEqual(stored.map((e: { id: string }, i: number) => `event_${String(i).padStart(6, '0')}_${e.id}.json`));
    expect(JSON.parse(files[names[1]!]!)).toEqual(stored[0]);
  });

  it('answers skills and hooks empty for a paused sandbox without resuming it; the file route resumes it', async () => {
    expect((await as(alice, 'POST', `/api/v1/sandboxes/${sandboxId}/pause`, {})).status).toBe(200);
    expect((await as(alice, 'GET', v1('/skills'))).body).toEqual({ skills: [] });
    expect((await as(alice, 'GET', v1('/hooks'))).body).toEqual({ hooks: [] });
    expect((await as(alice, 'GET', `/api/v1/sandboxes?id=${sandboxId}`)).body[0].status).toBe('PAUSED');
    expect((await as(alice, 'GET', `${v1('/file')}?file_path=README.md`)).status).toBe(200);
    expect((await as(alice, 'GET', `/api/v1/sandboxes?id=${sandboxId}`)).body[0].status).toBe('RUNNING');
  });
});

describe('isolation', () => {
  const routes = CONTRACT_ROUTES.filter((r) => /\/api\/v1\/(app-conversations|conversations)\/\{conversation_id\}/.test(r));

  it('covers every per-conversation route of the 2026 surface', () => {
    expect(routes.length).toBe(16);
  });

  it.each(routes)("%s answers 404 to another user's key and touches nothing", async (route) => {
    const [method, template] = route.split(' ') as [string, string];
    const body =
      method === 'GET' || method === 'DELETE' ? undefined : { ...text('x'), profile_name: 'p', model: 'm', title: 't', accept: true };
    const query = method === 'GET' ? '?path=/workspace/project&file_path=README.md' : '';
    const res = await as(bob, method, template.replace('{conversation_id}', id) + query, body);
    expect(res.status, res.text).toBe(404);
  });

  it('left the conversation as it was', async () => {
    expect((await as(alice, 'GET', `/api/v1/app-conversations?ids=${id}`)).body[0]).toMatchObject({ id, title: expect.anything() });
  });
});
