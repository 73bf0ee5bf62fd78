// Shared steps of the sandbox lifecycle tests: users with LLM settings, start tasks, sandbox
// reads, agent-server webhooks, and reading a counter or histogram from /metrics.
import path from 'node:path';
import { call, type TestApp } from './app.js';
import { eventually } from './eventually.js';
import { FIXTURES_DIR } from './specs.js';

/**
 * The fake agent server behind a shell guard: with a `fail-next` file in the sandbox
 * directory the next launch exits at once (and removes the file); with `fail-always`, every
 * launch does. Lets a test make resumes fail on purpose.
 */
export const FLAKY_AGENT_SPEC = {
  id: 'flaky-agent',
  command: [
    'sh',
    '-c',
    'if [ -e {sandbox_dir}/fail-always ]; then exit 3; fi; if [ -e {sandbox_dir}/fail-next ]; then rm {sandbox_dir}/fail-next; exit 3; fi; exec "$0" "$@"',
    process.execPath,
    path.join(FIXTURES_DIR, 'fake-agent-server.mjs'),
    '--port',
    '{port}',
  ],
  working_dir: '{sandbox_dir}/workspace/project',
  read_only_paths: [FIXTURES_DIR],
};

let counter = 0;
export async function userWithSettings(app: TestApp, name = 'user') {
  const userId = `${name}-${++counter}-${Math.random().toString(36).slice(2, 6)}`;
  const key = await app.keyFor(userId);
  await call(app, 'POST', '/api/settings', { key, body: { llm_model: 'openai/stub', llm_api_key: 'sk-stub-key' } });
  return { userId, key };
}

export const task = async (app: { url: string }, key: string, id: string) =>
  (await call(app, 'GET', `/api/v1/app-conversations/start-tasks?ids=${id}`, { key })).body[0];

export const waitForTask = (app: { url: string }, key: string, id: string) =>
  eventually(
    'start task READY/ERROR',
    async () => {
      const t = await task(app, key, id);
      return t && ['READY', 'ERROR'].includes(t.status) ? t : null;
    },
    60_000,
  );

export async function startConversation(app: { url: string }, key: string, body: Record<string, unknown> = {}) {
  const res = await call(app, 'POST', '/api/v1/app-conversations', { key, body });
  if (res.status !== 200) throw new Error(`start answered ${res.status}: ${res.text}`);
  return waitForTask(app, key, res.body.id);
}

export const sandbox = async (app: { url: string }, key: string, id: string) =>
  (await call(app, 'GET', `/api/v1/sandboxes?id=${id}`, { key })).body[0];

export const waitForSandbox = (app: { url: string }, key: string, id: string, status: string, timeoutMs = 60_000) =>
  eventually(
    `sandbox ${status}`,
    async () => {
      const info = await sandbox(app, key, id);
      return info?.status === status ? info : null;
    },
    timeoutMs,
  );

export const conversation = async (app: { url: string }, key: string, id: string) =>
  (await call(app, 'GET', `/api/v1/app-conversations?ids=${id}`, { key })).body[0];

/** The agent server's webhook: a conversation's execution status changed. */
export async function reportExecutionStatus(
  app: { url: string },
  sandboxId: string,
  sandboxKey: string,
  conversationId: string,
  status: string,
) {
  const res = await call(app, 'POST', `/api/v1/webhooks/${sandboxId}/events/${conversationId}`, {
    body: [{ kind: 'ConversationStateUpdateEvent', key: 'execution_status', value: status }],
    headers: { 'x-session-api-key': sandboxKey },
  });
  if (res.status !== 200) throw new Error(`webhook answered ${res.status}: ${res.text}`);
}

/** Sum of a metric's samples whose labels include `labels` (0 when absent). */
export async function metric(app: { url: string }, name: string, labels: Record<string, string> = {}): Promise<number> {
  const text = await (await fetch(`${app.url}/metrics`)).text();
  let sum = 0;
  for (const line of text.split('\n')) {
    const match = /^([a-z_]+)(?:\{([^}]*)\})? ([0-9.e+-]+)$/.exec(line);
    if (!match || match[1] !== name) continue;
    const found = Object.fromEntries([...(match[2] ?? '').matchAll(/(\w+)="([^"]*)"/g)].map((m) => [m[1], m[2]]));
    if (Object.entries(labels).every(([k, v]) => found[k] === v)) sum += Number(match[3]);
  }
  return sum;
}

/**
 * Waits until each app has finished `count` more passes of a lifecycle job (the passes metric):
 * how tests let the policies run a few times before checking that nothing (more) happened,
 * instead of sleeping.
 */
export async function lifecyclePasses(apps: { url: string }[], job: string, count: number): Promise<void> {
  const passes = (app: { url: string }) => metric(app, 'sandbox_lifecycle_passes_total', { job });
  const targets = await Promise.all(apps.map(async (app) => (await passes(app)) + count));
  await eventually(
    `${count} more ${job} passes`,
    async () => (await Promise.all(apps.map(passes))).every((n, i) => n >= targets[i]!),
    30_000,
  );
}
