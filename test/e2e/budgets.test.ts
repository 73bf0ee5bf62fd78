// Budgets with the REAL OpenHands agent server and the LLM gateway (docs/budgets.md,
// docs/llm-gateway.md): the agent calls its LLM through the service, which forwards to a stub
// provider on 127.0.0.1 answering with think-tool calls (so an agent works, and spends, until
// it is stopped) and prices each call from an operator price table written here: every call
// costs PRICE exactly. The costs are the gateway's ledger (llm_calls), never the agent's own.
// The call that would start past a budget never reaches the provider (it counts the calls it
// gets): the conversation is stopped with its reason, its lifecycle webhook reaches a receiver,
// a message is refused, and raising the budget lets the same conversation go on, across a
// restart of the service with a call in flight; two replicas on one database count each call
// through either gateway once, and ignore the agent server's own reports given to them again; a
// monthly cap stops two conversations together and lets them go on when raised.
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateKeyText, SecretBox } from '../../src/crypto.js';
import { freePort } from '../../src/processes.js';
import { call, startTestApp, testDatabaseUri, uniqueDbName, type TestApp } from '../helpers/app.js';
import { waitForTask } from '../helpers/conversation-app.js';
import { eventually } from '../helpers/eventually.js';
import { STUB_USAGE, startStubLlm, type StubLlm } from '../helpers/stub-llm.js';
import { startWebhookReceiver, type WebhookReceiver } from '../helpers/webhook-receiver.js';

/** What one call of the stub's model costs at the gateway: its output tokens at PRICE / output each, nothing for its input. */
const PRICE = 0.1;
const MODEL = 'openai/stub';
/** Float sums (0.1 + 0.2 …) are compared within this. */
const EPS = 1e-9;

const root = fs.mkdtempSync(path.join(os.tmpdir(), 'acp-budgets-'));
const pricesFile = path.join(root, 'operator-prices.json');
fs.writeFileSync(
  pricesFile,
  JSON.stringify({ [MODEL]: { input_cost_per_token: 0, output_cost_per_token: PRICE / STUB_USAGE.output, litellm_provider: 'openai' } }),
);
let env: Record<string, string>;
let app: TestApp;
let receiver: WebhookReceiver;
/** The receiver's endpoints' secrets (one endpoint per user). */
const secrets: string[] = [];
const stubs: StubLlm[] = [];

beforeAll(async () => {
  // A fixed port: the agent server keeps calling its LLM (the gateway) and posting its webhooks there across the restart below.
  env = {
    PORT: String(await freePort()),
    DATA_DIR: path.join(root, 'data'),
    MONGODB_URI: testDatabaseUri(uniqueDbName('budgets-e2e')),
    ENCRYPTION_KEY: generateKeyText(),
    SANDBOX_STARTUP_TIMEOUT_MS: '180000',
    START_TASK_POLL_MS: '200',
    // The waits below poll every 100 ms for minutes on a slow machine: past the default 600 a minute.
    RATE_LIMIT_PER_USER: '100000',
    LLM_RATE_LIMIT_PER_USER: 'off',
    LLM_OPERATOR_PRICES: pricesFile,
    // The lifecycle webhooks' receiver is on loopback (only an operator may allow that), polled often.
    WEBHOOK_HOSTS: '127.0.0.1',
    WEBHOOK_POLL_MS: '100',
  };
  receiver = await startWebhookReceiver();
  app = await startTestApp('budgets-e2e', env);
});

afterAll(async () => {
  for (const stub of stubs) stub.release();
  await app?.stop();
  for (const stub of stubs) await stub.close();
  await receiver?.close();
  fs.rmSync(root, { recursive: true, force: true });
});

/** A user whose LLM is a stub of its own (its key forwarded only by the gateway), with a webhook endpoint for budget stops. */
async function userWithStub(name: string, budgets: Record<string, number>) {
  const llm = await startStubLlm({ keepThinking: true, apiKey: 'sk-budget' });
  stubs.push(llm);
  const key = await app.keyFor(name);
  const settings = { llm_model: MODEL, llm_base_url: llm.url, llm_api_key: 'sk-budget', ...budgets };
  expect((await call(app, 'POST', '/api/settings', { key, body: settings })).status).toBe(200);
  const endpoint = await call(app, 'POST', '/api/v1/webhook-endpoints', {
    key,
    body: { url: `${receiver.url}/${name}`, event_types: ['conversation.budget_reached'] },
  });
  expect(endpoint.status, endpoint.text).toBe(201);
  secrets.push(endpoint.body.secret);
  receiver.setSecrets(...secrets);
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

async function conversation(key: string, id: string, on: TestApp = app) {
  const res = await call(on, 'GET', `/api/v1/app-conversations?ids=${id}`, { key });
  expect(res.status, res.text).toBe(200);
  return res.body[0];
}

/** The conversation as its agent server itself shows it (GET /api/conversations/{id}). */
async function agentSide(key: string, id: string) {
  const c = await conversation(key, id);
  const agentUrl = (c.conversation_url as string).replace(/\/api\/conversations\/.*$/, '');
  const headers = { 'x-session-api-key': c.session_api_key as string };
  const info = (await (await fetch(`${agentUrl}/api/conversations/${id}`, { headers })).json()) as {
    execution_status: string;
    stats: { usage_to_metrics: Record<string, { accumulated_cost: number }> };
  };
  return { agentUrl, headers, info };
}

/** The gateway's ledger of these conversations: each call that reached the provider, written once. */
async function ledger(ids: string[]) {
  const calls = await app
    .rawCollection('llm_calls')
    .find({ conversationId: { $in: ids } })
    .toArray();
  return { calls, cost: calls.reduce((sum, c) => sum + (c.cost as number), 0) };
}

/** The gateway token the conversation's agent holds (sealed in its route; the test has the service's key). */
async function tokenOf(id: string): Promise<string> {
  const route = await app.rawCollection('llm_routes').findOne({ _id: id as never });
  return SecretBox.fromStrings(env.ENCRYPTION_KEY!).decrypt(route!.token as string, `llm-route:${id}:token`);
}

/** A chat call as the agent's LLM client makes it, through a service's gateway with the conversation's token. */
function gatewayChat(on: TestApp, token: string, text: string) {
  return fetch(`${on.url}/llm/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
    body: JSON.stringify({ model: 'stub', messages: [{ role: 'user', content: text }] }),
  });
}

/**
 * Waits until the conversations are stopped for `reason` and their agents no longer run, and
 * until the gateway's ledger holds every call the stub answered (a call under way when the stop
 * lands is answered, and written, just after); then checks that the costs shown are the ledger's,
 * every call priced PRICE.
 */
async function stoppedFor(key: string, ids: string[], reason: string, llm: StubLlm) {
  let last: unknown = null; // what was seen last, for a failure's message
  const { shown, written } = await eventually(
    `conversations ${ids.join(', ')} to be stopped (${reason}) with every answered call in the ledger`,
    async () => {
      const shown = await Promise.all(ids.map((id) => conversation(key, id)));
      const agents = await Promise.all(ids.map((id) => agentSide(key, id)));
      const written = await ledger(ids);
      // A conversation whose first call is not yet counted shows no metrics: not stopped yet, read again.
      const total = shown.reduce((sum, c) => sum + (c.metrics?.accumulated_cost ?? 0), 0);
      last = {
        shown: shown.map((c) => [c.execution_status, c.execution_status_reason, c.metrics?.accumulated_cost]),
        agents: agents.map((a) => a.info.execution_status),
        ledger: [written.calls.length, written.cost],
        stub: [received(llm), llm.answered],
      };
      if (shown.some((c) => c.execution_status_reason !== reason || c.execution_status === 'running')) return null;
      if (agents.some((a) => a.info.execution_status === 'running')) return null;
      if (written.calls.length !== llm.answered || received(llm) !== llm.answered) return null;
      return Math.abs(total - written.cost) < EPS ? { shown, written } : null;
    },
    3 * 60_000,
  ).catch((error: Error) => {
    throw new Error(`${error.message}; last seen: ${JSON.stringify(last)}`);
  });
  expect(written.calls.map((c) => [c.model, c.outcome, c.cost])).toEqual(written.calls.map(() => [MODEL, 'ok', PRICE]));
  expect(written.cost).toBeCloseTo(llm.answered * PRICE, 9);
  for (const c of shown) {
    const own = written.calls.filter((w) => w.conversationId === c.id);
    expect(c.metrics.accumulated_cost).toBeCloseTo(own.length * PRICE, 9);
    expect(c.metrics.accumulated_token_usage).toMatchObject({
      prompt_tokens: own.length * STUB_USAGE.input,
      completion_tokens: own.length * STUB_USAGE.output,
    });
  }
  return { shown, total: written.cost };
}

/** Every call the stub was sent, in any API style. */
const received = (llm: StubLlm) => llm.calls.chat + llm.calls.messages + llm.calls.responses;

/** The budget_reached webhooks the receiver has for a conversation (verified, de-duplicated). */
const budgetHooks = (id: string) => receiver.uniqueEvents().filter((e) => e.type === 'conversation.budget_reached' && e.data.id === id);

/** Resolves once nothing listens on the port any more (a stopping service has closed its listener). */
async function portClosed(port: number) {
  await eventually(`port ${port} to close`, async () => {
    const open = await new Promise<boolean>((resolve) => {
      const socket = net.connect(port, '127.0.0.1');
      socket.once('connect', () => resolve(!!socket.destroy()));
      socket.once('error', () => resolve(false));
    });
    return !open;
  });
}

describe('a budget per conversation on the real agent server, through the LLM gateway', () => {
  let key: string;
  let llm: StubLlm;
  let id: string | undefined;

  beforeAll(async () => {
    ({ key, llm } = await userWithStub('budget-user', { max_budget_per_task: 0.35 }));
  });

  it(
    'lets no call past the budget reach the provider, stops the agent with its reason and webhook, refuses a message, and goes on once raised, across a restart',
    { timeout: 10 * 60_000 },
    async () => {
      const started = await thinkingConversation(key);
      if (!started) return;
      id = started.id;

      const { shown, total } = await stoppedFor(key, [id], 'budget_reached', llm);
      const [stopped] = shown;
      // The fourth call ($0.40) passed $0.35; the fifth would have started past it and never reached the provider.
      expect(llm.answered).toBe(4);
      expect(total).toBeCloseTo(0.4, 9);
      expect(stopped.metrics).toMatchObject({ max_budget_per_task: 0.35 });
      expect(stopped.sandbox_status).toBe('RUNNING'); // the agent is stopped, not its sandbox
      // Paused by the stop, or (its next call already under way) ended by the gateway's refusal,
      // which the agent shows as its error.
      expect(['paused', 'error']).toContain(stopped.execution_status);
      if (stopped.execution_status === 'error') {
        const { agentUrl, headers } = await agentSide(key, id);
        const url = `${agentUrl}/api/conversations/${id}/events/search?kind=ConversationErrorEvent&limit=100`;
        const errors = ((await (await fetch(url, { headers })).json()) as { items: { detail: string }[] }).items;
        expect(errors.at(-1)?.detail).toContain('budget_exceeded');
      }
      const v0 = (await call(app, 'GET', `/api/conversations/${id}`, { key })).body;
      expect(v0).toMatchObject({ status: 'RUNNING', execution_status_reason: 'budget_reached', metrics: { accumulated_cost: total } });
      await eventually('the budget_reached webhook', async () => budgetHooks(id!).length === 1);
      expect(budgetHooks(id)[0]!.data).toMatchObject({ id, execution_status_reason: 'budget_reached' });
      expect(receiver.receipts.every((r) => r.verified)).toBe(true);

      // The agent's token is refused by the gateway before the provider: 429 budget_exceeded (the SDK does not retry it).
      const token = await tokenOf(id);
      const refusedCall = await gatewayChat(app, token, 'one more');
      expect(refusedCall.status).toBe(429);
      expect(((await refusedCall.json()) as { error: { type: string } }).error.type).toBe('budget_exceeded');
      const refused = await call(app, 'POST', `/api/v1/app-conversations/${id}/send-message`, {
        key,
        body: { content: [{ type: 'text', text: 'Go on' }] },
      });
      expect(refused.status).toBe(409);
      expect(refused.body.detail).toMatch(new RegExp(`^Conversation ${id} reached its budget \\(\\$0\\.4 of \\$0\\.35\\)`));
      expect(received(llm)).toBe(4); // nothing more reached the provider

      // Raised: the agent runs again. Its LLM holds the first call, and the service is restarted
      // with that call in flight through its gateway: the stopping service finishes and writes it,
      // the restarted one takes the agent's next calls (the same port).
      llm.hold();
      const raised = await call(app, 'PATCH', `/api/v1/app-conversations/${id}`, { key, body: { max_budget_per_task: 0.75 } });
      expect(raised).toMatchObject({ status: 200, body: { max_budget_per_task: 0.75, execution_status_reason: null } });
      await eventually('the agent to call its LLM again', async () => received(llm) > 4).catch(async (error: Error) => {
        const { info } = await agentSide(key, id!);
        throw new Error(
          `${error.message}; the agent: ${info.execution_status}, the conversation: ${JSON.stringify(await conversation(key, id!))}`,
        );
      });
      const stopping = app.stop({ keepSandboxes: true });
      await portClosed(Number(env.PORT));
      app = await startTestApp('budgets-e2e', env);
      llm.release();
      await stopping;

      const again = await stoppedFor(key, [id], 'budget_reached', llm);
      // $0.80 passed $0.75 at the eighth call; none after it reached the provider.
      expect(llm.answered).toBe(8);
      expect(again.total).toBeCloseTo(0.8, 9);
      await eventually('the second budget_reached webhook', async () => budgetHooks(id!).length === 2);
      const budget = (await call(app, 'GET', '/api/v1/budget', { key })).body;
      expect(budget).toMatchObject({ max_budget_per_task: 0.35, max_budget_per_month: null, stopped_conversation_ids: [id] });
      expect(budget.month_cost).toBeCloseTo(0.8, 9);
    },
  );

  it(
    "counts each call through either of two replicas' gateways once, and ignores the agent server's own reports",
    { timeout: 5 * 60_000 },
    async () => {
      if (!id) return;
      const replica = await startTestApp('budgets-e2e-replica', { ...env, PORT: '0' }); // one database, one data directory
      try {
        // The agent server's own reports, given again to both replicas at once in overlapping
        // batches, with its conversation info twice each and a copy of it claiming ten times the
        // cost: the gateway's ledger is the conversation's cost, and nothing of these counts.
        const { agentUrl, headers: agentHeaders, info } = await agentSide(key, id);
        const reports: unknown[] = [];
        for (let page: string | null = null; ;) {
          const url = `${agentUrl}/api/conversations/${id}/events/search?kind=ConversationStateUpdateEvent&limit=100${page ? `&page_id=${page}` : ''}`;
          const found = (await (await fetch(url, { headers: agentHeaders })).json()) as { items: unknown[]; next_page_id: string | null };
          reports.push(...found.items);
          if (!(page = found.next_page_id)) break;
        }
        expect(reports.length).toBeGreaterThan(5);
        const inflated = structuredClone(info);
        for (const m of Object.values(inflated.stats.usage_to_metrics)) m.accumulated_cost *= 10;
        const batches = reports.map((_, i) => reports.slice(Math.max(0, i - 3), i + 1));
        const deliveries = [app, replica].flatMap((target) => [
          ...batches.map((batch) => call(target, 'POST', `/api/v1/webhooks/events/${id}`, { headers: agentHeaders, body: batch })),
          ...[info, info, inflated].map((body) => call(target, 'POST', '/api/v1/webhooks/conversations', { headers: agentHeaders, body })),
        ]);
        expect((await Promise.all(deliveries)).map((d) => d.status)).toEqual(deliveries.map(() => 200));
        for (const target of [app, replica]) {
          expect((await conversation(key, id, target)).metrics.accumulated_cost).toBeCloseTo(0.8, 9);
          expect((await call(target, 'GET', '/api/v1/budget', { key })).body.month_cost).toBeCloseTo(0.8, 9);
        }

        // Raised by eight calls ($0.80): three calls through each replica's gateway with the agent's
        // token and the agent's own next call (through the first), all seven under way at once at
        // the provider; then the agent's eighth call passes $1.55 and the ninth never reaches it.
        llm.hold();
        const before = received(llm);
        const raised = await call(replica, 'PATCH', `/api/v1/app-conversations/${id}`, { key, body: { max_budget_per_task: 1.55 } });
        expect(raised.status).toBe(200);
        const token = await tokenOf(id);
        const direct = Promise.all(
          [app, replica, app, replica, app, replica].map(async (target, i) => {
            const res = await gatewayChat(target, token, `direct call ${i}`);
            return { status: res.status, cost: res.headers.get('x-litellm-response-cost'), body: await res.text() };
          }),
        );
        await eventually('seven calls under way at the provider', async () => received(llm) === before + 7);
        llm.release();
        for (const d of await direct) expect(d, d.body).toMatchObject({ status: 200, cost: String(PRICE) });

        const { total } = await stoppedFor(key, [id], 'budget_reached', llm);
        expect(llm.answered).toBe(16);
        expect(total).toBeCloseTo(1.6, 9);
        expect(llm.requests.filter((r) => JSON.stringify(r.body).includes('direct call'))).toHaveLength(6);
        for (const target of [app, replica]) {
          expect((await conversation(key, id, target)).metrics.accumulated_cost).toBeCloseTo(total, 9);
          expect((await call(target, 'GET', '/api/v1/budget', { key })).body.month_cost).toBeCloseTo(total, 9);
        }
      } finally {
        await replica.stop({ keepSandboxes: true });
      }
    },
  );
});

describe('a monthly cap on the real agent server, through the LLM gateway', () => {
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
      // Each agent waits on its first call: released once both are held, so both spend before the cap
      // (released earlier, a loaded machine let the first reach the cap before the second had called).
      await eventually('both agents to call their LLM', async () => received(llm) >= 2);
      llm.release();

      const ids = [first.id, second!.id];
      const bothStopped = async (cap: number) => {
        const { shown, total } = await stoppedFor(key, ids, 'monthly_budget_reached', llm);
        const budget = (await call(app, 'GET', '/api/v1/budget', { key })).body;
        expect(budget).toMatchObject({ max_budget_per_month: cap, max_budget_per_month_source: 'settings', monthly_budget_reached: true });
        expect(budget.stopped_conversation_ids.sort()).toEqual([...ids].sort());
        expect(budget.month_cost).toBeCloseTo(total, 9);
        // Reached, and passed by at most the two calls (one per conversation) that started under it.
        expect(total).toBeGreaterThanOrEqual(cap - EPS);
        expect(total - 2 * PRICE).toBeLessThan(cap - EPS);
        return shown;
      };
      const stopped = await bothStopped(0.55);
      expect(stopped.every((c) => c.metrics.accumulated_cost > 0)).toBe(true); // both ran
      for (const id of ids) await eventually(`the budget_reached webhook of ${id}`, async () => budgetHooks(id).length === 1);
      const refused = await call(app, 'POST', `/api/v1/app-conversations/${ids[0]}/send-message`, {
        key,
        body: { content: [{ type: 'text', text: 'Go on' }] },
      });
      expect(refused).toMatchObject({ status: 409, body: { detail: expect.stringMatching(/^This month's budget is reached/) } });
      const before = received(llm);
      const refusedCall = await gatewayChat(app, await tokenOf(ids[1]!), 'one more');
      expect(refusedCall.status).toBe(429);
      expect(received(llm)).toBe(before);

      // Raised in the settings (the 2026 shape): both agents run again, until the new cap.
      expect((await call(app, 'POST', '/api/v1/settings', { key, body: { max_budget_per_month: 1.15 } })).status).toBe(200);
      await bothStopped(1.15);
      for (const id of ids) await eventually(`the second budget_reached webhook of ${id}`, async () => budgetHooks(id).length === 2);
    },
  );
});
