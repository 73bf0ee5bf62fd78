// An agent server that fails a conversation start while echoing the whole request (the LLM key
// and the user's secrets included) — as a 422 with pydantic's `input`, a 500 with the
// exception text, or plain text. The key and the secret must appear nowhere: not in the task's
// detail (REST, tRPC, the database), not in any response, not in any log line of the service.
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, startTestApp, type TestApp } from '../helpers/app.js';
import { eventually } from '../helpers/eventually.js';
import { FAKE_AGENT_SPEC, writeSpecsFile } from '../helpers/specs.js';

const MODES = ['validation', 'exception', 'text'] as const;
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'acp-leak-'));
const logLines: string[] = [];
const responses: string[] = [];
let app: TestApp;

beforeAll(async () => {
  const specs = MODES.map((mode) => ({ ...FAKE_AGENT_SPEC, id: `echo-${mode}`, initial_env: { FAKE_AGENT_ECHO_ERRORS: mode } }));
  app = await startTestApp(
    'agent-leak',
    { SANDBOX_SPECS_FILE: writeSpecsFile(tmp, specs), START_TASK_POLL_MS: '100', LOG_LEVEL: 'trace' },
    { logLines },
  );
});

afterAll(async () => {
  await app.stop();
  fs.rmSync(tmp, { recursive: true, force: true });
});

/** call(), keeping every response text for the final check. */
async function recorded(...args: Parameters<typeof call>) {
  const res = await call(...args);
  responses.push(res.text);
  return res;
}

describe('agent-server errors that echo credentials', () => {
  const secrets: string[] = [];

  it.each(MODES)('keeps the echoed key and secrets out of the task detail (%s)', async (mode) => {
    const llmKey = `sk-leakcheck-${crypto.randomBytes(12).toString('hex')}`;
    const secretValue = `secret-leakcheck-${crypto.randomBytes(8).toString('hex')}`;
    secrets.push(llmKey, secretValue);
    const key = await app.keyFor(`leak-${mode}`);
    await recorded(app, 'POST', '/api/settings', { key, body: { llm_model: 'openai/stub', llm_api_key: llmKey } });
    await recorded(app, 'POST', '/api/secrets', { key, body: { name: 'DEPLOY_TOKEN', value: secretValue } });
    const sandbox = await recorded(app, 'POST', `/api/v1/sandboxes?sandbox_spec_id=echo-${mode}`, { key });
    expect(sandbox.status).toBe(200);

    const task = await recorded(app, 'POST', '/api/v1/app-conversations', { key, body: { sandbox_id: sandbox.body.id } });
    const failed = await eventually(
      'the start to fail',
      async () => {
        const [t] = (await recorded(app, 'GET', `/api/v1/app-conversations/start-tasks?ids=${task.body.id}`, { key })).body;
        return t.status === 'ERROR' ? t : null;
      },
      30_000,
    );
    expect(failed.detail).toMatch(/^Agent server answered (422|500) to POST \/api\/conversations/);
    if (mode !== 'text') expect(failed.detail).toContain('[redacted]');
    await recorded(app, 'GET', '/api/v1/app-conversations/start-tasks/search', { key });
    await recorded(
      app,
      'GET',
      `/trpc/appConversations.batchGetStartTasks?input=${encodeURIComponent(JSON.stringify({ json: { ids: [task.body.id] } }))}`,
      {
        key,
      },
    );
    const stored = await app.rawCollection('start_tasks').findOne({ _id: task.body.id } as never);
    expect(JSON.stringify(stored)).not.toContain(llmKey);
    expect(JSON.stringify(stored)).not.toContain(secretValue);
    await recorded(app, 'DELETE', `/api/v1/sandboxes/${sandbox.body.id}`, { key });
  });

  it('shows them in no response and no log line', () => {
    expect(secrets).toHaveLength(6);
    expect(logLines.length).toBeGreaterThan(20);
    expect(logLines.join('\n')).toContain('start task failed'); // the failures were logged…
    for (const secret of secrets) {
      expect(responses.filter((text) => text.includes(secret))).toEqual([]);
      expect(logLines.filter((line) => line.includes(secret))).toEqual([]); // …without what was echoed
    }
  });
});
