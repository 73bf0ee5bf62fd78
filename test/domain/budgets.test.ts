// Budgets through the procedures and the webhook service (no HTTP, no agent server): the cost a
// report carries kept as a high-water mark, the limits (none, 0, per conversation, settings,
// monthly cap, the operator's default), the stop and its reason, raising and going on, months,
// and two replicas on one database receiving the same and overlapping reports. The real agent
// server's reports are exercised in test/e2e/budgets.test.ts.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestDomain, type TestDomain } from '../helpers/domain.js';

const SANDBOX = 'sb-budgets'; // no such sandbox: nothing runs, so a stop pauses nothing
let now = Date.parse('2026-03-31T23:59:00Z');
let domain: TestDomain;
let replica: TestDomain;

beforeAll(async () => {
  domain = await startTestDomain('budgets', {}, { clock: () => now });
  replica = await startTestDomain('budgets-replica', { MONGODB_URI: domain.deps.config.mongo.uri! }, { clock: () => now });
});
afterAll(async () => {
  await replica?.stop();
  await domain?.stop();
});

let counter = 0;
const fresh = (name: string) => `${name}-${++counter}`;
const hex = () => (++counter).toString(16).padStart(32, '0');

/** The agent server's stats: cumulative Metrics per LLM (usage id). */
const stats = (agent: number, condenser = 0, tokens = Math.round(agent * 1000)) => ({
  usage_to_metrics: {
    agent: {
      model_name: 'openai/stub',
      accumulated_cost: agent,
      max_budget_per_task: null,
      accumulated_token_usage: { model: 'openai/stub', prompt_tokens: tokens, completion_tokens: 6, context_window: 0, per_turn_token: 16 },
    },
    ...(condenser ? { condenser: { model_name: 'openai/stub', accumulated_cost: condenser, accumulated_token_usage: null } } : {}),
  },
});

/** Conversation info as an agent server posts it (the first one creates the record for the sandbox's owner). */
const info = (d: TestDomain, user: string, id: string, cost: number, status = 'running') =>
  d.deps.services.agentCallbacks.conversation(SANDBOX, user, { id, execution_status: status, stats: stats(cost) });

/** A batch of events carrying a "stats" state update. */
const statsEvent = (d: TestDomain, user: string, id: string, cost: number) =>
  d.deps.services.agentCallbacks.events(SANDBOX, user, id, [
    { kind: 'ConversationStateUpdateEvent', id: `ev-${++counter}`, key: 'stats', value: stats(cost) } as never,
  ]);

const get = async (user: string, id: string) => (await domain.as(user).appConversations.batchGet({ ids: [id] }))[0]!;

describe('a conversation reported by its agent server', () => {
  it('shows the combined cost of its LLMs and keeps the highest report, whatever the order', async () => {
    const user = fresh('cost');
    const id = hex();
    await info(domain, user, id, 0.4);
    await domain.deps.services.agentCallbacks.conversation(SANDBOX, user, { id, stats: stats(0.5, 0.25) });
    await statsEvent(domain, user, id, 0.3); // late and lower: ignored
    const conversation = await get(user, id);
    expect(conversation.metrics).toMatchObject({
      model_name: 'openai/stub',
      accumulated_cost: 0.75,
      max_budget_per_task: null,
      accumulated_token_usage: { prompt_tokens: 500, completion_tokens: 6 },
    });
    expect(conversation).toMatchObject({ execution_status_reason: null, max_budget_per_task: null });
    const v0 = await domain.as(user).conversations.get({ conversation_id: id });
    expect(v0).toMatchObject({ metrics: { accumulated_cost: 0.75 }, execution_status_reason: null });
  });

  it('is never stopped without a budget, however much it costs', async () => {
    const user = fresh('unlimited');
    const id = hex();
    for (const cost of [1, 10, 1000]) await info(domain, user, id, cost);
    expect(await get(user, id)).toMatchObject({ metrics: { accumulated_cost: 1000 }, execution_status_reason: null });
    expect(await domain.as(user).budgets.get()).toMatchObject({
      max_budget_per_month: null,
      month_cost: 1000,
      stopped_conversation_ids: [],
    });
  });
});

describe('a budget per conversation', () => {
  it("stops it with its reason at the settings' budget, refuses to run it, and lets it go on once raised", async () => {
    const user = fresh('settings-budget');
    await domain.as(user).settings.save({ max_budget_per_task: 1 });
    const id = hex();
    await info(domain, user, id, 0.6);
    expect(await get(user, id)).toMatchObject({ metrics: { max_budget_per_task: 1 }, execution_status_reason: null });
    await statsEvent(domain, user, id, 1.1);
    expect(await get(user, id)).toMatchObject({
      metrics: { accumulated_cost: 1.1, max_budget_per_task: 1 },
      execution_status_reason: 'budget_reached',
    });
    const refused = domain.as(user).appConversationActions.sendMessage({ conversation_id: id, content: [{ type: 'text', text: 'go on' }] });
    await expect(refused).rejects.toMatchObject({
      code: 'CONFLICT',
      message: expect.stringMatching(/reached its budget \(\$1\.1 of \$1\)/),
    });
    expect((await domain.as(user).budgets.get()).stopped_conversation_ids).toEqual([id]);

    // Raised in the settings: the stop is lifted (the conversation follows the settings).
    await domain.as(user).settings.save({ max_budget_per_task: 2 });
    expect(await get(user, id)).toMatchObject({ metrics: { max_budget_per_task: 2 }, execution_status_reason: null });
    await info(domain, user, id, 2.05);
    expect((await get(user, id)).execution_status_reason).toBe('budget_reached');

    // Its own budget, over the settings', by PATCH.
    const patched = await domain.as(user).appConversationActions.update({ conversation_id: id, max_budget_per_task: 5 });
    expect(patched).toMatchObject({ max_budget_per_task: 5, metrics: { max_budget_per_task: 5 }, execution_status_reason: null });
    // Lowered below what it has cost: stopped at once.
    expect(await domain.as(user).appConversationActions.update({ conversation_id: id, max_budget_per_task: 2 })).toMatchObject({
      execution_status_reason: 'budget_reached',
    });
    // null: back to the settings' budget.
    await domain.as(user).settings.save({ max_budget_per_task: 10 });
    expect(await domain.as(user).appConversationActions.update({ conversation_id: id, max_budget_per_task: null })).toMatchObject({
      max_budget_per_task: null,
      metrics: { max_budget_per_task: 10 },
      execution_status_reason: null,
    });
  });

  it('takes a start request of its own budget over the settings', async () => {
    const user = fresh('start-budget');
    await domain.as(user).settings.save({ max_budget_per_task: 3 });
    const task = await domain.as(user).appConversations.start({ max_budget_per_task: 0.5 });
    const id = (await domain.deps.services.appConversations.conversationIdOfTask(user, task.id))!;
    expect(await get(user, id)).toMatchObject({ max_budget_per_task: 0.5, metrics: { max_budget_per_task: 0.5, accumulated_cost: 0 } });
    expect(task.request).toMatchObject({ max_budget_per_task: 0.5 });
  });

  it('with a budget of 0 allows nothing: stopped at its first report', async () => {
    const user = fresh('zero');
    const id = hex();
    await domain.as(user).settings.save({ max_budget_per_task: 0 });
    await info(domain, user, id, 0);
    expect(await get(user, id)).toMatchObject({
      metrics: { accumulated_cost: 0, max_budget_per_task: 0 },
      execution_status_reason: 'budget_reached',
    });
  });

  it('refuses budgets that are no amount of dollars, storing nothing', async () => {
    const user = fresh('invalid');
    await domain.as(user).settings.save({ max_budget_per_task: 2 });
    for (const bad of [-1, '5', 1e12, true]) {
      await expect(domain.as(user).settings.save({ max_budget_per_task: bad as never })).rejects.toMatchObject({ code: 'BAD_REQUEST' });
      await expect(domain.as(user).settings.save({ max_budget_per_month: bad as never })).rejects.toMatchObject({ code: 'BAD_REQUEST' });
      await expect(domain.as(user).appConversations.start({ max_budget_per_task: bad as never })).rejects.toMatchObject({
        code: 'BAD_REQUEST',
      });
    }
    expect(await domain.as(user).settings.get()).toMatchObject({ max_budget_per_task: 2, max_budget_per_month: null });
  });
});

describe('the monthly cap', () => {
  it("stops every running conversation of the user once the month's total reaches it, and lets them go on once raised", async () => {
    const user = fresh('monthly');
    await domain.as(user).settings.save({ max_budget_per_month: 1 });
    const [a, b] = [hex(), hex()];
    await info(domain, user, a, 0.6);
    await info(domain, user, b, 0.3);
    expect((await get(user, a)).execution_status_reason).toBeNull();
    await statsEvent(domain, user, b, 0.45); // 1.05 in all
    expect((await get(user, a)).execution_status_reason).toBe('monthly_budget_reached');
    expect((await get(user, b)).execution_status_reason).toBe('monthly_budget_reached');
    const budget = await domain.as(user).budgets.get();
    expect(budget).toMatchObject({ max_budget_per_month: 1, max_budget_per_month_source: 'settings', monthly_budget_reached: true });
    expect(budget.month_cost).toBeCloseTo(1.05, 10);
    expect(budget.stopped_conversation_ids.sort()).toEqual([a, b].sort());
    await expect(
      domain.as(user).appConversationActions.sendMessage({ conversation_id: a, content: [{ type: 'text', text: 'more' }] }),
    ).rejects.toMatchObject({ code: 'CONFLICT', message: expect.stringMatching(/^This month's budget is reached/) });

    await domain.as(user).settings.save({ max_budget_per_month: 5 });
    expect((await get(user, a)).execution_status_reason).toBeNull();
    expect((await domain.as(user).budgets.get()).stopped_conversation_ids).toEqual([]);
  });

  it("counts each report in its month: what was spent before a month's start is not this month's", async () => {
    const user = fresh('months');
    const id = hex();
    now = Date.parse('2026-04-30T23:59:00Z');
    await info(domain, user, id, 0.7);
    now = Date.parse('2026-05-01T00:01:00Z');
    await info(domain, user, id, 1.0);
    await info(domain, user, id, 0.7); // stale: nothing
    const budget = await domain.as(user).budgets.get();
    expect(budget.month).toBe('2026-05');
    expect(budget.month_cost).toBeCloseTo(0.3, 10);
    expect(await domain.deps.services.budgets['records'].monthCost(user, '2026-04')).toBeCloseTo(0.7, 10);
  });

  it("applies the operator's default to users who set no cap of their own", async () => {
    const operated = await startTestDomain('budgets-operator', { MAX_BUDGET_PER_MONTH: '0.5' });
    try {
      const user = fresh('operator');
      const id = hex();
      await operated.deps.services.agentCallbacks.conversation(SANDBOX, user, { id, execution_status: 'running', stats: stats(0.5) });
      const [conversation] = await operated.as(user).appConversations.batchGet({ ids: [id] });
      expect(conversation!.execution_status_reason).toBe('monthly_budget_reached');
      expect(await operated.as(user).budgets.get()).toMatchObject({ max_budget_per_month: 0.5, max_budget_per_month_source: 'operator' });
      await operated.as(user).settings.save({ max_budget_per_month: 2 });
      expect(await operated.as(user).budgets.get()).toMatchObject({ max_budget_per_month: 2, max_budget_per_month_source: 'settings' });
    } finally {
      await operated.stop();
    }
  });
});

describe('two replicas on one database', () => {
  it('never count a report twice, whatever arrives where and in which order', async () => {
    const user = fresh('replicas');
    const ids = [hex(), hex(), hex()];
    // Each conversation reports 0.01, 0.02 … 0.40 (cumulative). Every report reaches both
    // replicas at the same moment (some a third time), as conversation info or as a stats
    // event, in an order shuffled across conversations, several reports at once.
    const reports = ids.flatMap((id) => Array.from({ length: 40 }, (_, i) => ({ id, cost: (i + 1) / 100 })));
    const shuffled = reports.map((r, i) => ({ ...r, order: Math.sin(i * 7919) })).sort((x, y) => x.order - y.order);
    for (let at = 0; at < shuffled.length; at += 4) {
      await Promise.all(
        shuffled
          .slice(at, at + 4)
          .flatMap(({ id, cost }, i) => [
            info(domain, user, id, cost),
            statsEvent(replica, user, id, cost),
            ...(i === 0 ? [statsEvent(domain, user, id, cost)] : []),
          ]),
      );
    }
    for (const id of ids) expect((await get(user, id)).metrics!.accumulated_cost).toBe(0.4);
    const [here, there] = [await domain.as(user).budgets.get(), await replica.as(user).budgets.get()];
    expect(here.month_cost).toBeCloseTo(1.2, 10);
    expect(there.month_cost).toBe(here.month_cost);
  });

  it('tell "budget reached" once per stop, on one of them, however many reports cross the limit', async () => {
    const user = fresh('reached-once');
    await domain.as(user).settings.save({ max_budget_per_task: 0.2 });
    const told: { replica: string; conversationId: string; reason: string }[] = [];
    for (const [name, d] of [
      ['first', domain],
      ['second', replica],
    ] as const) {
      d.deps.services.budgets.whenReached(({ conversationId, userId, stop }) => {
        if (userId === user) told.push({ replica: name, conversationId, reason: stop.reason });
      });
    }
    const id = hex();
    await info(domain, user, id, 0.1);
    // Every report past the budget reaches both replicas at once.
    await Promise.all([0.25, 0.3, 0.35].flatMap((cost) => [info(domain, user, id, cost), statsEvent(replica, user, id, cost)]));
    expect(told.map(({ conversationId, reason }) => ({ conversationId, reason }))).toEqual([
      { conversationId: id, reason: 'budget_reached' },
    ]);

    // Raised, then reached again: a second stop, told once more.
    await domain.as(user).appConversationActions.update({ conversation_id: id, max_budget_per_task: 0.5 });
    await Promise.all([info(domain, user, id, 0.55), statsEvent(replica, user, id, 0.55)]);
    expect(told).toHaveLength(2);
  });
});
