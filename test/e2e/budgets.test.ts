// Budgets with the REAL OpenHands agent server (docs/budgets.md): a stub LLM on 127.0.0.1 that
// prices every answer at $0.10 the way a LiteLLM proxy does (the agent SDK takes it as the
// call's cost) and answers with think-tool calls, so an agent works, and spends, until it is
// paused. A conversation is paused at its budget with its reason, refused a message, goes on
// when the budget is raised, is restarted over mid-run with its cost still right; two replicas
// given the agent server's own reports again count nothing twice; a monthly cap stops two
// conversations together and lets them go on when raised.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateKeyText } from '../../src/crypto.js';
import { freePort } from '../../src/processes.js';
import { call, startTestApp, testDatabaseUri, uniqueDbName, type TestApp } from '../helpers/app.js';
import { waitForTask } from '../helpers/conversation-app.js';
import { eventually } from '../helpers/eventually.js';
import { STUB_USAGE, startStubLlm, type StubLlm } from '../helpers/stub-llm.js';

const PRICE = 0.1;
const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'acp-budgets-'));
let env: Record<string, string>;
let app: TestApp;
const stubs: StubLlm[] = [];
/** Started before the service, so that its sandboxes may reach them (SANDBOX_HOST_PORTS). */
const spare: StubLlm[] = [];

beforeAll(async () => {
  // A fixed port: the agent server keeps posting its webhooks to it across the restart below.
  env = {
    PORT: String(await freePort()),
    DATA_DIR: dataDir,
    MONGODB_URI: testDatabaseUri(uniqueDbName('budgets-e2e')),
    ENCRYPTION_KEY: generateKeyText(),
    SANDBOX_STARTUP_TIMEOUT_MS: '180000',
    START_TASK_POLL_MS: '200',
    // The waits below poll every 100 ms for minutes on a slow machine: past the default 600 a minute.
    RATE_LIMIT_PER_USER: '100000',
  };
  // The LLMs first: the service lets sandboxes reach the loopback ports running at its start.
  for (let i = 0; i < 2; i++) spare.push(await startStubLlm({ costPerCall: PRICE, keepThinking: true }));
  app = await startTestApp('budgets-e2e', env);
});

afterAll(async () => {
  await app?.stop();
  for (const stub of [...stubs, ...spare]) {
    stub.release();
    await stub.close();
  }
  fs.rmSync(dataDir, { recursive: true, force: true });
});

async function userWithStub(name: string, budgets: Record<string, number>) {
  const llm = spare.shift()!;
  stubs.push(llm);
  const key = await app.keyFor(name);
  const settings = { llm_model: 'openai/stub', llm_base_url: llm.url, llm_api_key: 'sk-budget', ...budgets };
  expect((await call(app, 'POST', '/api/settings', { key, body: settings })).status).toBe(200);
  return { key, llm };
}

/** Starts a conversation that thinks until stopped; null (said loudly) where no Python >= 3.12 exists. */
async function thinkingConversation(key: string, extra: Record<string, unknown> = {}) {
  const body = { initial_message: { content: [{ type: 'text', text: 'Think until you are stopped' }], run: true }, ...extra };
  const started = await call(app, 'POST', '/api/v1/app-conversations', { key, body });
  expect(started.status).toBe(200);
  const task = await waitForTask(app, key, started.body.id, 5 * 60_000);
  if (task.status === 'ERROR' && /Python >= 3\.12/.test(task.detail ?? '')) {
    console.warn(`\n${'!'.repeat(78)}\n!! BUDGETS ON THE REAL AGENT SERVER NOT EXERCISED: ${task.detail}\n${'!'.repeat(78)}\n`);
    return null;
  }
  expect(task, task.detail ?? undefined).toMatchObject({ status: 'READY' });
  return { id: task.app_conversation_id as string, sandboxId: task.sandbox_id as string };
}

async function conversation(key: string, id: string) {
  const res = await call(app, 'GET', `/api/v1/app-conversations?ids=${id}`, { key });
  expect(res.status, res.text).toBe(200);
  return res.body[0];
}

/** The conversation's combined cost as its agent server itself says (GET /api/conversations/{id}). */
async function agentCost(key: string, id: string): Promise<{ cost: number; status: string }> {
  const c = await conversation(key, id);
  const agentUrl = (c.conversation_url as string).replace(/\/api\/conversations\/.*$/, '');
  const info = (await (
    await fetch(`${agentUrl}/api/conversations/${id}`, { headers: { 'x-session-api-key': c.session_api_key } })
  ).json()) as {
    execution_status: string;
    stats: { usage_to_metrics: Record<string, { accumulated_cost: number }> };
  };
  const cost = Object.values(info.stats.usage_to_metrics).reduce((sum, m) => sum + m.accumulated_cost, 0);
  return { cost, status: info.execution_status };
}

/**
 * Waits until the conversations are stopped for `reason`, paused, and show what their agent
 * servers report, and until those reports count every call the stub priced: a call under way
 * when the pause lands is answered (and priced) before its cost reaches the agent's report.
 */
async function stoppedFor(key: string, ids: string[], reason: string, llm: StubLlm) {
  return eventually(
    `conversations ${ids.join(', ')} to be stopped (${reason}) with the agent servers' cost of every answered call`,
    async () => {
      const shown = await Promise.all(ids.map((id) => conversation(key, id)));
      if (shown.some((c) => c.execution_status_reason !== reason || c.execution_status !== 'paused')) return null;
      const agents = await Promise.all(ids.map((id) => agentCost(key, id)));
      if (agents.some((a, i) => a.status !== 'paused' || shown[i].metrics?.accumulated_cost !== a.cost)) return null;
      const total = agents.reduce((sum, a) => sum + a.cost, 0);
      return Math.abs(total - llm.answered * PRICE) < 1e-9 ? shown : null;
    },
    3 * 60_000,
  );
}

describe('a budget per conversation on the real agent server', () => {
  let key: string;
  let llm: StubLlm;
  let id: string | undefined;

  beforeAll(async () => {
    ({ key, llm } = await userWithStub('budget-user', { max_budget_per_task: 0.35 }));
  });

  it(
    'pauses the agent at the budget with its reason, refuses a message, and goes on once the budget is raised, across a restart',
    {
      timeout: 10 * 60_000,
    },
    async () => {
      const started = await thinkingConversation(key);
      if (!started) return;
      id = started.id;

      const [stopped] = await stoppedFor(key, [id], 'budget_reached', llm);
      // Paused after the call that reached $0.35 (at most the steps under way then on top), and
      // every call the stub priced is counted once (stoppedFor waits for the last one's report).
      expect(stopped.metrics.accumulated_cost).toBeGreaterThanOrEqual(0.35);
      expect(stopped.metrics.accumulated_cost).toBeCloseTo(llm.answered * PRICE, 9);
      expect(stopped.metrics).toMatchObject({
        max_budget_per_task: 0.35,
        accumulated_token_usage: { prompt_tokens: STUB_USAGE.input * llm.answered },
      });
      expect(stopped.sandbox_status).toBe('RUNNING'); // the agent is paused, not its sandbox
      const v0 = (await call(app, 'GET', `/api/conversations/${id}`, { key })).body;
      expect(v0).toMatchObject({
        status: 'RUNNING',
        execution_status_reason: 'budget_reached',
        metrics: { accumulated_cost: stopped.metrics.accumulated_cost },
      });
      const refused = await call(app, 'POST', `/api/v1/app-conversations/${id}/send-message`, {
        key,
        body: { content: [{ type: 'text', text: 'Go on' }] },
      });
      expect(refused.status).toBe(409);
      expect(refused.body.detail).toMatch(new RegExp(`^Conversation ${id} reached its budget \\(\\$[\\d.]+ of \\$0\\.35\\)`));

      // Raised: the agent runs again. Its LLM holds the first answer, so the service is restarted
      // while the agent is mid-run; it goes on reporting to the restarted service.
      llm.hold();
      const before = llm.requests.length;
      // Six answers above what it cost when it stopped (on a loaded machine the pause lands some steps late).
      const raisedTo = Math.round((stopped.metrics.accumulated_cost + 6 * PRICE) * 100) / 100;
      const raised = await call(app, 'PATCH', `/api/v1/app-conversations/${id}`, { key, body: { max_budget_per_task: raisedTo } });
      expect(raised).toMatchObject({ status: 200, body: { max_budget_per_task: raisedTo, execution_status_reason: null } });
      await eventually('the agent to ask its LLM again', async () => llm.requests.length > before);
      await app.stop({ keepSandboxes: true });
      app = await startTestApp('budgets-e2e', env);
      llm.release();

      const [again] = await stoppedFor(key, [id], 'budget_reached', llm);
      expect(again.metrics.accumulated_cost).toBeGreaterThanOrEqual(raisedTo);
      expect(again.metrics.accumulated_cost).toBeCloseTo(llm.answered * PRICE, 9);
      const budget = (await call(app, 'GET', '/api/v1/budget', { key })).body;
      expect(budget).toMatchObject({ max_budget_per_task: 0.35, max_budget_per_month: null, stopped_conversation_ids: [id] });
      expect(budget.month_cost).toBeCloseTo(again.metrics.accumulated_cost, 9);
    },
  );

  it("counts nothing twice when two replicas are given the agent server's own reports again", { timeout: 3 * 60_000 }, async () => {
    if (!id) return;
    const replica = await startTestApp('budgets-e2e-replica', { ...env, PORT: '0' }); // one database, one data directory
    try {
      const c = await conversation(key, id);
      const agentUrl = (c.conversation_url as string).replace(/\/api\/conversations\/.*$/, '');
      const agentHeaders = { 'x-session-api-key': c.session_api_key };
      const info = await (await fetch(`${agentUrl}/api/conversations/${id}`, { headers: agentHeaders })).json();
      const reports: unknown[] = [];
      for (let page: string | null = null; ;) {
        const url = `${agentUrl}/api/conversations/${id}/events/search?kind=ConversationStateUpdateEvent&limit=100${page ? `&page_id=${page}` : ''}`;
        const found = (await (await fetch(url, { headers: agentHeaders })).json()) as { items: unknown[]; next_page_id: string | null };
        reports.push(...found.items);
        if (!(page = found.next_page_id)) break;
      }
      expect(reports.length).toBeGreaterThan(5);
      // Every report to both replicas at once, in batches that overlap, and the conversation info twice each.
      const batches = reports.map((_, i) => reports.slice(Math.max(0, i - 3), i + 1));
      const deliveries = [app, replica].flatMap((target) => [
        ...batches.map((batch) => call(target, 'POST', `/api/v1/webhooks/events/${id}`, { headers: agentHeaders, body: batch })),
        call(target, 'POST', '/api/v1/webhooks/conversations', { headers: agentHeaders, body: info }),
        call(target, 'POST', '/api/v1/webhooks/conversations', { headers: agentHeaders, body: info }),
      ]);
      expect((await Promise.all(deliveries)).map((d) => d.status)).toEqual(deliveries.map(() => 200));

      const { cost } = await agentCost(key, id);
      for (const target of [app, replica]) {
        expect((await call(target, 'GET', `/api/v1/app-conversations?ids=${id}`, { key })).body[0].metrics.accumulated_cost).toBe(cost);
        expect((await call(target, 'GET', '/api/v1/budget', { key })).body.month_cost).toBeCloseTo(cost, 9);
      }
    } finally {
      await replica.stop({ keepSandboxes: true });
    }
  });
});

describe('a monthly cap on the real agent server', () => {
  it(
    'stops two conversations together once their month reaches it, and lets both go on when it is raised',
    { timeout: 10 * 60_000 },
    async () => {
      const { key, llm } = await userWithStub('monthly-user', { max_budget_per_month: 0.55 });
      llm.hold(); // both start before either spends
      const first = await thinkingConversation(key);
      if (!first) return;
      const second = await thinkingConversation(key, { sandbox_id: first.sandboxId });
      expect(second!.sandboxId).toBe(first.sandboxId);
      llm.release();

      const ids = [first.id, second!.id];
      const month = async () => (await call(app, 'GET', '/api/v1/budget', { key })).body;
      const bothStopped = async (cap: number) => {
        const stopped = await stoppedFor(key, ids, 'monthly_budget_reached', llm);
        const total = stopped.reduce((sum, c) => sum + c.metrics.accumulated_cost, 0);
        const budget = await month();
        expect(budget).toMatchObject({ max_budget_per_month: cap, max_budget_per_month_source: 'settings', monthly_budget_reached: true });
        expect(budget.stopped_conversation_ids.sort()).toEqual([...ids].sort());
        expect(budget.month_cost).toBeCloseTo(total, 9);
        expect(total).toBeCloseTo(llm.answered * PRICE, 9);
        expect(total).toBeGreaterThanOrEqual(cap);
        return stopped;
      };
      const stopped = await bothStopped(0.55);
      expect(stopped.every((c) => c.metrics.accumulated_cost > 0)).toBe(true); // both ran
      const refused = await call(app, 'POST', `/api/v1/app-conversations/${ids[0]}/send-message`, {
        key,
        body: { content: [{ type: 'text', text: 'Go on' }] },
      });
      expect(refused).toMatchObject({ status: 409, body: { detail: expect.stringMatching(/^This month's budget is reached/) } });

      // Raised in the settings (the 2026 shape): both agents run again, until the new cap.
      expect((await call(app, 'POST', '/api/v1/settings', { key, body: { max_budget_per_month: 1.15 } })).status).toBe(200);
      await bothStopped(1.15);
    },
  );
});
