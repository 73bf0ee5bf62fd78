// Budgets (docs/budgets.md): what a conversation has cost as its agent server reports it, the
// limits that stop it (a budget per conversation, a cap per user and calendar month), and why a
// conversation was stopped. Amounts are US dollars, as the agent SDK reports them.
import { z } from 'zod';
import { noCoerce } from './common.schema.js';

/** The largest budget accepted (a typo guard, not a policy). */
export const MAX_BUDGET = 1_000_000;

/** A budget in dollars: 0 allows no spending, null (where allowed) means no limit. */
export const budgetAmount = () => noCoerce(z.number().min(0).max(MAX_BUDGET));

export const BUDGET_STOP_REASONS = ['budget_reached', 'monthly_budget_reached'] as const;
/** Why a conversation was stopped: its own budget, or its owner's monthly cap. */
export const BudgetStopReasonSchema = z.enum(BUDGET_STOP_REASONS).meta({ id: 'BudgetStopReason' });
export type BudgetStopReason = z.infer<typeof BudgetStopReasonSchema>;

/** The agent SDK's TokenUsage, summed over the conversation's LLMs (agent, condenser…). */
export const TokenUsageSchema = z
  .object({
    model: z.string(),
    prompt_tokens: z.number(),
    completion_tokens: z.number(),
    cache_read_tokens: z.number(),
    cache_write_tokens: z.number(),
    reasoning_tokens: z.number(),
    context_window: z.number(),
    per_turn_token: z.number(),
    response_id: z.string(),
  })
  .meta({ id: 'TokenUsage' });
export type TokenUsage = z.infer<typeof TokenUsageSchema>;

/**
 * The reference's MetricsSnapshot of a conversation: accumulated_cost is the highest combined
 * cost its agent server reported; max_budget_per_task the budget in force (the conversation's
 * own, else its owner's setting; null: none).
 */
export const MetricsSnapshotSchema = z
  .object({
    model_name: z.string(),
    accumulated_cost: z.number(),
    max_budget_per_task: z.number().nullable(),
    accumulated_token_usage: TokenUsageSchema.nullable(),
  })
  .meta({ id: 'MetricsSnapshot' });
export type MetricsSnapshot = z.infer<typeof MetricsSnapshotSchema>;

/** GET /api/v1/budget: the caller's limits and what the current month has cost. */
export const UserBudgetSchema = z
  .object({
    // The default budget of conversations without their own (the settings' max_budget_per_task).
    max_budget_per_task: z.number().nullable(),
    // The monthly cap in force: the user's max_budget_per_month, else the operator's default.
    max_budget_per_month: z.number().nullable(),
    max_budget_per_month_source: z.enum(['settings', 'operator']).nullable(),
    // The calendar month (UTC) the figures below are for, "YYYY-MM".
    month: z.string(),
    month_cost: z.number(),
    monthly_budget_reached: z.boolean(),
    // Conversations stopped for a budget right now.
    stopped_conversation_ids: z.array(z.string()),
  })
  .meta({ id: 'UserBudget' });
export type UserBudget = z.infer<typeof UserBudgetSchema>;
