// The OpenHands Cloud API docs' curl examples (cloud-api.mdx, quoted in the project's notes on
// today's clients), run as written with the system curl: only the host and the placeholders
// (YOUR_API_KEY, TASK_ID, CONVERSATION_ID) are replaced. Each checks the fields the docs
// document and their Python/TypeScript tabs read. The repository they name is served by a
// fake self-hosted GitHub, the agent by the fake agent server.
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call } from '../helpers/app.js';
import { startConversationApp, type ConversationApp } from '../helpers/conversation-app.js';
import { eventually } from '../helpers/eventually.js';
import { startFakeGitHost, type FakeGitHost } from '../helpers/fake-git-host.js';

const run = promisify(execFile);

const START = `curl -X POST "https://app.all-hands.dev/api/v1/app-conversations" \\
  -H "Authorization: Bearer YOUR_API_KEY" \\
  -H "Content-Type: application/json" \\
  -d '{
    "initial_message": {
      "content": [{"type": "text", "text": "Check whether there is any incorrect information in the README.md file and send a PR to fix it if so."}]
    },
    "selected_repository": "yourusername/your-repo"
  }'`;

const OBSERVABILITY_BODY = `{
  "initial_message": {
    "content": [
      {
        "type": "text",
        "text": "Evaluate this repository against the WB rubric."
      }
    ]
  },
  "selected_repository": "yourusername/your-repo",
  "observability_span_name": "wb_rubric_eval",
  "observability_tags": ["wb-rubric", "evaluation"],
  "observability_metadata": {
    "evaluation": "wb",
    "attempt": 1,
    "replay": false
  }
}`;

const STREAM = `curl -X POST "https://app.all-hands.dev/api/v1/app-conversations/stream-start" \\
  -H "Authorization: Bearer YOUR_API_KEY" \\
  -H "Content-Type: application/json" \\
  -d '{
    "initial_message": {
      "content": [{"type": "text", "text": "Your task description here"}]
    },
    "selected_repository": "yourusername/your-repo"
  }'`;

const POLL = `curl -X GET "https://app.all-hands.dev/api/v1/app-conversations/start-tasks?ids=TASK_ID" \\
  -H "Authorization: Bearer YOUR_API_KEY"`;

const GET = `curl -X GET "https://app.all-hands.dev/api/v1/app-conversations?ids=CONVERSATION_ID" \\
  -H "Authorization: Bearer YOUR_API_KEY"`;

const LIST = `curl -X GET "https://app.all-hands.dev/api/v1/app-conversations/search?limit=20" \\
  -H "Authorization: Bearer YOUR_API_KEY"`;

const LEGACY = `curl -X POST "https://app.all-hands.dev/api/conversations" \\
  -H "Authorization: Bearer YOUR_API_KEY" \\
  -H "Content-Type: application/json" \\
  -d '{
    "initial_user_msg": "Check whether there is any incorrect information in the README.md file and send a PR to fix it if so.",
    "repository": "yourusername/your-repo"
  }'`;

let app: ConversationApp;
let git: FakeGitHost;
let key: string;

/** Runs a documented curl command as written, against this service; its JSON answer. */
async function curl(command: string, values: Record<string, string> = {}): Promise<any> {
  let text = command.replaceAll('https://app.all-hands.dev', app.url).replaceAll('YOUR_API_KEY', key);
  for (const [name, value] of Object.entries(values)) text = text.replaceAll(name, value);
  const { stdout } = await run('bash', ['-c', `${text} --silent --show-error --fail-with-body`]);
  return JSON.parse(stdout);
}

const pollUntilReady = (taskId: string) =>
  eventually('the start task to be READY', async () => {
    const tasks = await curl(POLL, { TASK_ID: taskId });
    expect(tasks[0].status).not.toBe('ERROR');
    return tasks[0].status === 'READY' ? tasks[0] : null;
  });

beforeAll(async () => {
  git = await startFakeGitHost();
  git.validTokens.add('ghp_docs');
  await git.createRepo('yourusername', 'your-repo', { 'README.md': '# Your repo\n' });
  app = await startConversationApp('cloud-docs', { GIT_PROVIDER_HOSTS: '127.0.0.1' });
  key = await app.user('docs');
  const stored = await call(app, 'POST', '/api/add-git-providers', {
    key,
    body: { provider_tokens: { github: { token: 'ghp_docs', host: git.url } } },
  });
  expect(stored.status).toBe(200);
}, 60_000);
afterAll(async () => {
  await app?.close();
  await git?.close();
});

describe('the Cloud API docs, run as written with Bearer', () => {
  let taskId: string;
  let conversationId: string;

  it('starts a conversation: a WORKING start task with the documented fields', async () => {
    const task = await curl(START);
    expect(task).toMatchObject({ status: 'WORKING', id: expect.stringMatching(/^[0-9a-f]{32}$/) });
    expect(Object.keys(task)).toEqual(expect.arrayContaining(['id', 'status', 'app_conversation_id', 'sandbox_id', 'created_at']));
    expect(Number.isNaN(Date.parse(task.created_at))).toBe(false);
    taskId = task.id;
  });

  it('polls the start task (read as an array) until READY, with app_conversation_id and sandbox_id', async () => {
    const ready = await pollUntilReady(taskId);
    expect(ready).toMatchObject({ id: taskId, status: 'READY', app_conversation_id: expect.any(String), sandbox_id: expect.any(String) });
    conversationId = ready.app_conversation_id;
  });

  it('gets the conversation: sandbox_status, execution_status, selected_repository, title', async () => {
    const [conversation] = await curl(GET, { CONVERSATION_ID: conversationId });
    expect(conversation).toMatchObject({ id: conversationId, sandbox_status: 'RUNNING', selected_repository: 'yourusername/your-repo' });
    expect(Object.keys(conversation)).toEqual(expect.arrayContaining(['execution_status', 'title']));
    await eventually(
      'the agent to finish',
      async () => (await curl(GET, { CONVERSATION_ID: conversationId }))[0].execution_status === 'finished',
    );
  });

  it('lists conversations: {items, next_page_id: null} with the same item shape', async () => {
    const page = await curl(LIST);
    expect(page.next_page_id).toBeNull();
    expect(page.items.map((c: { id: string }) => c.id)).toContain(conversationId);
    expect(page.items[0]).toMatchObject({ sandbox_status: expect.any(String), selected_repository: 'yourusername/your-repo' });
  });

  it('honours the optional observability fields of the documented body', async () => {
    const command = START.replace(/-d '[\s\S]*'$/, `-d '${OBSERVABILITY_BODY}'`);
    const ready = await pollUntilReady((await curl(command)).id);
    const [conversation] = await curl(GET, { CONVERSATION_ID: ready.app_conversation_id });
    const agent = await fetch(`${conversation.conversation_url}`, { headers: { 'x-session-api-key': conversation.session_api_key } });
    const { request } = (await agent.json()) as { request: Record<string, unknown> };
    expect(request).toMatchObject({
      observability_span_name: 'wb_rubric_eval',
      observability_tags: ['wb-rubric', 'evaluation'],
      observability_metadata: { evaluation: 'wb', attempt: 1, replay: false },
    });
  });

  it('streams the start: a JSON array of status updates, the last READY with app_conversation_id and sandbox_id', async () => {
    const updates = await curl(STREAM);
    const statuses = updates.map((u: { status: string }) => u.status);
    expect(statuses[0]).toBe('WORKING');
    expect(statuses).toEqual(expect.arrayContaining(['WAITING_FOR_SANDBOX', 'PREPARING_REPOSITORY']));
    for (const update of updates) expect(Object.keys(update)).toEqual(expect.arrayContaining(['id', 'status', 'created_at']));
    expect(updates.at(-1)).toMatchObject({ status: 'READY', app_conversation_id: expect.any(String), sandbox_id: expect.any(String) });
  });

  it('still takes the legacy V0 start: {"status": "ok", "conversation_id"}', async () => {
    const answer = await curl(LEGACY);
    expect(answer).toMatchObject({ status: 'ok', conversation_id: expect.stringMatching(/^[0-9a-f]{32}$/) });
  });
});
