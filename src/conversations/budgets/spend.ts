// The arithmetic of budgets (docs/budgets.md), without the database: what an agent server's
// report says a conversation has cost, the snapshot shown for it, the month a report counts
// in, the month's total, and whether a limit stops the conversation.
import type { BudgetStopReason, MetricsSnapshot, TokenUsage } from '../../../contract/budgets.schema.js';

/** A report's figures: cumulative over the conversation's whole life, summed over its LLMs. */
export interface Spend {
  cost: number;
  /** Prompt plus completion tokens: tells a newer report from an older one when costs are equal (unpriced models). */
  tokens: number;
  snapshot: MetricsSnapshot;
}

/** A cost counts as reaching a limit within a billionth of a dollar (sums of floats drift below it). */
const EPSILON = 1e-9;

const TOKEN_FIELDS = ['prompt_tokens', 'completion_tokens', 'cache_read_tokens', 'cache_write_tokens', 'reasoning_tokens'] as const;

const num = (value: unknown) => (typeof value === 'number' && Number.isFinite(value) && value >= 0 ? value : 0);
const isRecord = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

/**
 * What the agent server says the conversation has cost, from its ConversationInfo, its full state
 * or a "stats" state update: stats.usage_to_metrics holds one Metrics per LLM (usage id), each
 * cumulative; they are combined as the SDK combines them (costs and tokens summed, the largest
 * context window). Null when the source carries no stats.
 */
export function reportedSpend(source: unknown): Spend | null {
  if (!isRecord(source)) return null;
  const stats = isRecord(source.stats) ? source.stats : isRecord(source.usage_to_metrics) ? source : null;
  if (!stats || !isRecord(stats.usage_to_metrics)) return null;
  const all = Object.entries(stats.usage_to_metrics).filter((entry): entry is [string, Record<string, unknown>] => isRecord(entry[1]));
  if (all.length === 0) return null;
  // The agent's LLM names the model, as the reference's snapshot does.
  const [, main] = all.find(([usageId]) => usageId === 'agent') ?? all[0]!;
  const model = typeof main.model_name === 'string' ? main.model_name : 'default';
  let cost = 0;
  const usage: TokenUsage = {
    model,
    prompt_tokens: 0,
    completion_tokens: 0,
    cache_read_tokens: 0,
    cache_write_tokens: 0,
    reasoning_tokens: 0,
    context_window: 0,
    per_turn_token: 0,
    response_id: '',
  };
  for (const [, metrics] of all) {
    cost += num(metrics.accumulated_cost);
    const tokens = isRecord(metrics.accumulated_token_usage) ? metrics.accumulated_token_usage : {};
    for (const field of TOKEN_FIELDS) usage[field] += num(tokens[field]);
    usage.context_window = Math.max(usage.context_window, num(tokens.context_window));
    if (metrics === main) usage.per_turn_token = num(tokens.per_turn_token);
  }
  return {
    cost,
    tokens: usage.prompt_tokens + usage.completion_tokens,
    snapshot: { model_name: model, accumulated_cost: cost, max_budget_per_task: null, accumulated_token_usage: usage },
  };
}

/** Whether a report says more than what is stored: a higher cost, or as much with more tokens. */
export function advances(spend: Spend, stored: { cost: number; tokens: number }): boolean {
  return spend.cost > stored.cost || (spend.cost === stored.cost && spend.tokens > stored.tokens);
}

/** The tokens of a stored snapshot (prompt plus completion). */
export function tokensOf(snapshot: unknown): number {
  const usage = isRecord(snapshot) && isRecord(snapshot.accumulated_token_usage) ? snapshot.accumulated_token_usage : {};
  return num(usage.prompt_tokens) + num(usage.completion_tokens);
}

/** The snapshot shown for a stored conversation: its highest cost, the budget in force, its last token usage. */
export function shownSnapshot(stored: unknown, cost: number, budget: number | null): MetricsSnapshot | null {
  if (!isRecord(stored) && cost === 0) return budget === null ? null : { ...EMPTY, max_budget_per_task: budget };
  const snapshot = isRecord(stored) ? stored : {};
  const usage = isRecord(snapshot.accumulated_token_usage) ? snapshot.accumulated_token_usage : null;
  return {
    model_name: typeof snapshot.model_name === 'string' ? snapshot.model_name : 'default',
    accumulated_cost: cost,
    max_budget_per_task: budget,
    accumulated_token_usage: usage
      ? {
          model: typeof usage.model === 'string' ? usage.model : 'default',
          prompt_tokens: num(usage.prompt_tokens),
          completion_tokens: num(usage.completion_tokens),
          cache_read_tokens: num(usage.cache_read_tokens),
          cache_write_tokens: num(usage.cache_write_tokens),
          reasoning_tokens: num(usage.reasoning_tokens),
          context_window: num(usage.context_window),
          per_turn_token: num(usage.per_turn_token),
          response_id: typeof usage.response_id === 'string' ? usage.response_id : '',
        }
      : null,
  };
}

const EMPTY: MetricsSnapshot = { model_name: 'default', accumulated_cost: 0, max_budget_per_task: null, accumulated_token_usage: null };

/** The calendar month (UTC) of a moment, "YYYY-MM": the month a report counts in. */
export function monthOf(at: Date): string {
  return at.toISOString().slice(0, 7);
}

/** A month's cost from its per-conversation ranges ({from, to}: the lowest and highest cumulative cost seen that month). */
export function monthTotal(conversations: unknown): number {
  if (!isRecord(conversations)) return 0;
  let total = 0;
  for (const range of Object.values(conversations)) {
    if (isRecord(range)) total += Math.max(0, num(range.to) - num(range.from));
  }
  return total;
}

export interface Limits {
  /** The conversation's budget in force (its own, else the settings'), null for none. */
  perTask: number | null;
  /** The owner's monthly cap in force, null for none. */
  perMonth: number | null;
  /** The monthly cap of the organisation it was started in (docs/organizations.md), null for none. */
  perOrgMonth: number | null;
}

/** What the month has cost so far: the owner's, the organisation's (null where no cap applies). */
export interface MonthCosts {
  user: number | null;
  org: number | null;
}

/** The limit a conversation that has cost `cost` has reached in a month that has cost `months`, or null. */
export function reachedLimit(
  cost: number,
  months: MonthCosts,
  limits: Limits,
): { reason: BudgetStopReason; limit: number; of: 'conversation' | 'user' | 'organization' } | null {
  if (limits.perTask !== null && cost >= limits.perTask - EPSILON)
    return { reason: 'budget_reached', limit: limits.perTask, of: 'conversation' };
  if (limits.perMonth !== null && months.user !== null && months.user >= limits.perMonth - EPSILON) {
    return { reason: 'monthly_budget_reached', limit: limits.perMonth, of: 'user' };
  }
  // The organisation's month stops its conversations with the same reason: a month's budget is reached.
  if (limits.perOrgMonth !== null && months.org !== null && months.org >= limits.perOrgMonth - EPSILON) {
    return { reason: 'monthly_budget_reached', limit: limits.perOrgMonth, of: 'organization' };
  }
  return null;
}

const dollars = (amount: number) => `$${Math.round(amount * 10_000) / 10_000}`;

/** Why a call or message is refused, and what to raise. */
export function refusal(
  conversationId: string,
  cost: number,
  months: MonthCosts,
  reached: NonNullable<ReturnType<typeof reachedLimit>>,
): string {
  if (reached.of === 'conversation') {
    return `Conversation ${conversationId} reached its budget (${dollars(cost)} of ${dollars(reached.limit)}): raise its max_budget_per_task to continue`;
  }
  if (reached.of === 'user') {
    return `This month's budget is reached (${dollars(months.user!)} of ${dollars(reached.limit)}): raise max_budget_per_month in your settings to continue`;
  }
  return `The organization's budget for this month is reached (${dollars(months.org!)} of ${dollars(reached.limit)}): an owner or admin of the organization can raise it`;
}
