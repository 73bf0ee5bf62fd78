// The service with the fake agent server for conversation-page tests: sandboxes whose agent
// server "runs" a new conversation and reports it by webhook (FAKE_WEBHOOKS) and has VS Code
// (FAKE_VSCODE), a slow-starting variant, and one that never becomes healthy.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { ServerOptions } from '../../src/server.js';
import { call, startTestApp, type TestApp } from './app.js';
import { eventually } from './eventually.js';
import { FAKE_AGENT_SPEC, NEVER_HEALTHY_SPEC, writeSpecsFile } from './specs.js';

export const PAGE_SPEC = { ...FAKE_AGENT_SPEC, id: 'fake-agent-page', initial_env: { FAKE_WEBHOOKS: '1', FAKE_VSCODE: '1' } };
export const SLOW_SPEC = { ...PAGE_SPEC, id: 'fake-agent-slow', initial_env: { ...PAGE_SPEC.initial_env, FAKE_STARTUP_DELAY_MS: '2500' } };

export interface ConversationApp extends TestApp {
  /** A new user with LLM settings; returns its API key. */
  user(label: string): Promise<string>;
  /** Starts a V1 conversation and waits for READY; returns the task. */
  startConversation(key: string, body?: Record<string, unknown>): Promise<StartedTask>;
  /** keepSandboxes: leave them to another replica sharing this one's data. */
  close(opts?: { keepSandboxes?: boolean }): Promise<void>;
}

export interface StartedTask {
  id: string;
  status: string;
  app_conversation_id: string;
  sandbox_id: string;
  detail: string | null;
}

/** opts.dbName: share a database with another app (a second replica); other options as startServer's. */
export async function startConversationApp(
  label: string,
  env: Record<string, string> = {},
  opts: ServerOptions & { dbName?: string } = {},
): Promise<ConversationApp> {
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), `acp-${label}-`));
  const app = await startTestApp(
    label,
    {
      SANDBOX_SPECS_FILE: writeSpecsFile(tmp, [PAGE_SPEC, SLOW_SPEC, NEVER_HEALTHY_SPEC]),
      SANDBOX_STARTUP_TIMEOUT_MS: '8000',
      SANDBOX_MAX_RUNNING_PER_USER: '20',
      START_TASK_POLL_MS: '100',
      ...env,
    },
    opts,
  );
  let users = 0;
  return Object.assign(app, {
    async user(name: string) {
      const key = await app.keyFor(`${name}-${++users}-${Math.random().toString(36).slice(2, 6)}`);
      await call(app, 'POST', '/api/settings', {
        key,
        body: { llm_model: 'openai/stub', llm_api_key: 'sk-page-test', llm_base_url: 'http://127.0.0.1:9/v1' },
      });
      return key;
    },
    async startConversation(key: string, body: Record<string, unknown> = {}) {
      const started = await call(app, 'POST', '/api/v1/app-conversations', { key, body });
      return waitForTask(app, key, started.body.id as string);
    },
    async close(opts: { keepSandboxes?: boolean } = {}) {
      await app.stop(opts);
      fs.rmSync(tmp, { recursive: true, force: true });
    },
  });
}

/** The start task once READY or ERROR (a real agent server's first start may take minutes: timeoutMs). */
export function waitForTask(app: TestApp, key: string, taskId: string, timeoutMs = 30_000): Promise<StartedTask> {
  return eventually(
    'the start task to finish',
    async () => {
      const task = (await call(app, 'GET', `/api/v1/app-conversations/start-tasks?ids=${taskId}`, { key })).body[0];
      return task?.status === 'READY' || task?.status === 'ERROR' ? (task as StartedTask) : null;
    },
    timeoutMs,
  );
}

/** The conversation as the web UI reads it (GET /api/conversations/{id}). */
export const v0 = async (app: TestApp, key: string, id: string) => (await call(app, 'GET', `/api/conversations/${id}`, { key })).body;
