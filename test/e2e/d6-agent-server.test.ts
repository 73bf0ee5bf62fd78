// The agent server of the 2025 clients, for real: conversations the d6 web UI starts (the V0
// route; a cookie start while WEB_UI_DIR is served) get a sandbox of the built-in 1.0.0a6 spec,
// every other start the default (1.58) one. On the real agent server 1.0.0a6 (installed by
// scripts/setup-agent-server.sh with its pinned dependencies) a V0 conversation, driven by a
// loopback LLM that runs `echo hello` and finishes, yields exactly the event shapes and routes
// the d6 UI reads: ExecuteBashAction/ExecuteBashObservation (its "Ran …" and Terminal tab), the
// FinishAction message, and GET /api/git/changes/{path} (its Changes tab).
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SANDBOX_LOG } from '../../src/sandbox/process/process-launch.js';
import { call, startTestApp, type TestApp } from '../helpers/app.js';
import { eventually } from '../helpers/eventually.js';
import { writeFixtureUi } from '../helpers/fixture-ui.js';
import { signIn } from '../helpers/session.js';
import { startToolCallLlm, type ToolCallLlm } from '../helpers/tool-call-llm.js';

const SPEC_2026 = 'local/openhands-agent-server:1.58.0';
const SPEC_2025 = 'local/openhands-agent-server:1.0.0a6';

let app: TestApp;
let llm: ToolCallLlm;
let uiDir: string;

beforeAll(async () => {
  llm = await startToolCallLlm({ command: 'echo hello | tee hello.txt', expectOutput: 'hello' });
  uiDir = writeFixtureUi();
  // The first use installs agent server 1.0.0a6 into the cache (minutes on a busy machine).
  app = await startTestApp('d6-agent-server', {
    WEB_UI_DIR: uiDir,
    // Isolated, a sandbox sees its workspace at /workspace as well, the path the d6 UI asks about.
    SANDBOX_ISOLATION: 'bubblewrap',
    SANDBOX_STARTUP_TIMEOUT_MS: '180000',
    START_TASK_POLL_MS: '200',
  });
});
afterAll(async () => {
  await app?.stop();
  await llm?.close();
  fs.rmSync(uiDir, { recursive: true, force: true });
});

const specOfTask = async (taskId: string) =>
  ((await app.rawCollection('start_tasks').findOne({ _id: taskId as never })) as { sandboxSpecId: string | null } | null)?.sandboxSpecId;

describe('the sandbox spec follows the client generation that starts a conversation', () => {
  it('lists both built-in specs; the V0 route and a cookie start with the d6 UI served get 1.0.0a6, a key start the default', async () => {
    const key = await app.keyFor('chooser');
    const specs = (await call(app, 'GET', '/api/v1/sandbox-specs/search?limit=10', { key })).body.items.map((s: any) => s.id);
    expect(specs).toEqual([SPEC_2026, SPEC_2025]);

    // No settings: each start ends in ERROR before any sandbox, but its choice is recorded first.
    const byKey = await call(app, 'POST', '/api/v1/app-conversations', { key, body: {} });
    expect(byKey.status).toBe(200);
    expect(await specOfTask(byKey.body.id)).toBeNull();
    const { cookie } = await signIn(app, key);
    const byCookie = await call(app, 'POST', '/api/v1/app-conversations', { headers: { cookie, origin: app.url }, body: {} });
    expect(byCookie.status).toBe(200);
    expect(await specOfTask(byCookie.body.id)).toBe(SPEC_2025);
  });
});

describe('a d6 UI conversation on the real agent server 1.0.0a6', () => {
  it('runs the command and finishes with the events and routes the d6 UI reads', { timeout: 12 * 60_000 }, async () => {
    const key = await app.keyFor('d6-user');
    await call(app, 'POST', '/api/settings', { key, body: { llm_model: 'openai/stub', llm_base_url: llm.url, llm_api_key: 'sk-d6' } });
    const created = await call(app, 'POST', '/api/conversations', { key, body: { initial_user_msg: 'Run echo hello, then finish.' } });
    expect(created).toMatchObject({ status: 200, body: { status: 'ok', conversation_status: 'STARTING' } });
    const id = created.body.conversation_id as string;

    // As the UI polls it: STARTING, then RUNNING with the agent server's conversation URL and key.
    const running = await eventually(
      'the conversation to run',
      async () => {
        const info = (await call(app, 'GET', `/api/conversations/${id}`, { key })).body;
        if (info?.status === 'ERROR') {
          const task = await app.rawCollection('start_tasks').findOne({ conversationId: id });
          // The agent server's own log says why (its answers to the service are sanitised).
          const log = path.join(app.server.deps.config.dataDir, 'sandboxes', String(task?.sandbox_id), SANDBOX_LOG);
          const tail = fs.existsSync(log) ? fs.readFileSync(log, 'utf8').split('\n').slice(-60).join('\n') : '';
          throw new Error(`start failed: ${task?.detail}\n${tail}`);
        }
        return info?.status === 'RUNNING' && info.url ? info : null;
      },
      10 * 60_000,
    );
    expect(running).toMatchObject({ conversation_version: 'V1', runtime_status: 'STATUS$READY' });
    const agentBase = (running.url as string).replace(/\/api\/conversations\/.*$/, '');
    const headers = { 'x-session-api-key': running.session_api_key as string };
    const [conversation] = (await call(app, 'GET', `/api/v1/app-conversations?ids=${id}`, { key })).body;
    const [sandbox] = (await call(app, 'GET', `/api/v1/sandboxes?id=${conversation.sandbox_id}`, { key })).body;
    expect(sandbox.sandbox_spec_id).toBe(SPEC_2025);
    const info = (await (await fetch(`${agentBase}/server_info`)).json()) as { version: string };
    expect(info.version).toBe('1.0.0a6');

    // The agent's events, read from the agent server as the UI's socket replays them.
    const events = await eventually(
      'the agent to finish',
      async () => {
        const page = (await (await fetch(`${running.url}/events/search?limit=100`, { headers })).json()) as { items: any[] };
        return page.items.some((e) => e.action?.kind === 'FinishAction') ? page.items : null;
      },
      5 * 60_000,
    );
    // The UI's chat ("Ran …" with the output) and its Terminal tab read observation.output, a
    // string (1.0.0 moved it into observation.content: the chat then said "Running …" forever).
    // The loopback LLM runs the command again when a6's terminal reported it empty (see its helper).
    const output = events.find((e) => e.observation?.kind === 'ExecuteBashObservation' && /hello/.test(e.observation.output));
    expect(output).toMatchObject({ source: 'environment', observation: { command: llm.command } });
    const ran = events.find((e) => e.id === output.action_id);
    expect(ran).toMatchObject({ source: 'agent', tool_name: 'bash', action: { kind: 'ExecuteBashAction', command: llm.command } }); // 1.0.0a6's name of the terminal tool
    expect(ran.tool_call_id).toEqual(expect.any(String));
    const finish = events.find((e) => e.action?.kind === 'FinishAction');
    expect(finish.action.message).toBe(llm.finalMessage);

    // The same events reach the service's store through the webhooks (what a resumed page reloads).
    await eventually(
      'the stored events',
      async () => {
        const stored = (await call(app, 'GET', `/api/v1/events/search?conversation_id__eq=${id}&limit=100`, { key })).body.items as any[];
        return (
          stored.some((e) => e.action?.kind === 'FinishAction') && stored.some((e) => e.observation?.kind === 'ExecuteBashObservation')
        );
      },
      120_000,
    );

    // The Changes tab's route, as the UI builds it: /workspace/project, the path URI-encoded.
    const changes = await fetch(`${agentBase}/api/git/changes/${encodeURIComponent('/workspace/project')}`, { headers });
    expect(changes.status).toBe(200);
    expect(await changes.json()).toContainEqual({ status: 'ADDED', path: 'hello.txt' });
  });
});
