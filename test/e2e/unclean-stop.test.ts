// A sandbox stopped uncleanly — every process of it killed at once, as when its machine is lost or
// the kernel kills it — and used again at once: the next message resumes it and its conversation
// runs straight away. Agent server 1.58 leases each conversation for 45 s and lets a new process
// take a lease over only from a dead owner on the same host; in a fresh sandbox the new process has
// the old one's host name and pid, so the lease looked alive and held the conversation. The
// service runs one agent server per workspace, so leases are off (src/sandbox/runtime.ts
// SINGLE_INSTANCE_ENV). Real agent server, loopback LLM.
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, startTestApp, type TestApp } from '../helpers/app.js';
import { waitForTask } from '../helpers/conversation-app.js';
import { eventually } from '../helpers/eventually.js';
import { startToolCallLlm, type ToolCallLlm } from '../helpers/tool-call-llm.js';

let app: TestApp;
let llm: ToolCallLlm;
let key: string;

beforeAll(async () => {
  llm = await startToolCallLlm({ command: 'echo unclean-stop', finalMessage: 'Finished.', expectOutput: 'unclean-stop' });
  app = await startTestApp('unclean-stop', { SANDBOX_STARTUP_TIMEOUT_MS: '180000', START_TASK_POLL_MS: '200' });
  key = await app.keyFor('unclean-user');
  await call(app, 'POST', '/api/settings', { key, body: { llm_model: 'openai/stub', llm_base_url: llm.url, llm_api_key: 'sk-unclean' } });
}, 300_000);
afterAll(async () => {
  await app?.stop();
  await llm?.close();
});

const conversationOf = async (id: string) => (await call(app, 'GET', `/api/v1/app-conversations?ids=${id}`, { key })).body[0];

describe('a sandbox killed outright and used again at once', () => {
  it('runs its conversation on the next message, without waiting out a lease', { timeout: 600_000 }, async () => {
    const started = await call(app, 'POST', '/api/v1/app-conversations', {
      key,
      body: { initial_message: { content: [{ type: 'text', text: 'Run it.' }] } },
    });
    const task = await waitForTask(app, key, started.body.id as string, 300_000);
    expect(task.status, task.detail ?? '').toBe('READY');
    const id = task.app_conversation_id as string;
    await eventually('the first run to finish', async () => (await conversationOf(id))?.execution_status === 'finished', 240_000);

    // Every process of the sandbox killed (its process group), nothing told.
    const state = JSON.parse(
      fs.readFileSync(path.join(app.server.deps.config.dataDir, 'sandboxes', '.state', task.sandbox_id, 'runtime.json'), 'utf8'),
    ) as { pid: number };
    process.kill(-state.pid, 'SIGKILL');
    await eventually('the sandbox seen stopped', async () => (await conversationOf(id))?.sandbox_status !== 'RUNNING', 60_000);

    const before = llm.calls();
    const sent = await call(app, 'POST', `/api/v1/app-conversations/${id}/send-message`, {
      key,
      body: { content: [{ type: 'text', text: 'Once more.' }] },
    });
    expect(sent.status, sent.text).toBe(200);
    // Resumed and running: the agent asks its LLM well within the 45 s a lease would have held it.
    const asked = Date.now();
    await eventually('the agent to call its LLM again', async () => llm.calls() > before, 60_000);
    expect(Date.now() - asked).toBeLessThan(30_000);
    await eventually('the second run to finish', async () => (await conversationOf(id))?.execution_status === 'finished', 120_000);
  });
});
