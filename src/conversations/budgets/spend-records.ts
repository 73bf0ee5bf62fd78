// The conversation store's spend side (docs/budgets.md): the budget fields of AppConversation
// records and the monthly_spend ledger, kept in a file of its own beside store.ts. Every write
// is one single-document update (atomic on MongoDB, and on FerretDB through the write gate):
// a conversation's cost only over the spendVersion it read, a stop only over the stop it read,
// the ledger only with $min/$max (idempotent, in any order, on any replica).
import crypto from 'node:crypto';
import type { BudgetStopReason, MetricsSnapshot } from '../../../contract/budgets.schema.js';
import type { AppConversationRecord, Models } from '../../../models/index.js';
import { monthTotal, tokensOf, type Spend } from './spend.js';

/** Why and when a conversation was stopped, and the figures that stopped it. */
export interface BudgetStop {
  reason: BudgetStopReason;
  at: Date;
  accumulated_cost: number;
  /** The limit reached: the conversation's budget, or the monthly cap. */
  limit: number;
  /** Whose limit: the conversation's, its owner's month, its organisation's month (absent on stops before organisations). */
  of?: 'conversation' | 'user' | 'organization';
}

/** The monthly_spend key of an organisation's month, beside its users' (no user id holds a ":"). */
export const orgSpendKey = (orgId: string) => `org:${orgId}`;

/** What budgets need of a conversation record. */
export interface SpendRecord {
  _id: string;
  userId: string;
  /** The team organisation it was started in, null: none. */
  orgId: string | null;
  sandboxId: string | null;
  accumulated_cost: number;
  tokens: number;
  spendVersion: string | null;
  max_budget_per_task: number | null;
  budget_stop: BudgetStop | null;
  execution_status: string | null;
}

const FIELDS = {
  userId: 1,
  orgId: 1,
  sandboxId: 1,
  accumulated_cost: 1,
  spendVersion: 1,
  max_budget_per_task: 1,
  budget_stop: 1,
  execution_status: 1,
  metrics: 1,
} as const;

/** The budget facts of a record (records from before budgets have none: nothing spent, no budget). */
export function spendOf(record: Pick<AppConversationRecord, keyof typeof FIELDS | '_id'>): SpendRecord {
  return {
    _id: record._id,
    userId: record.userId,
    orgId: record.orgId ?? null,
    sandboxId: record.sandboxId ?? null,
    accumulated_cost: record.accumulated_cost ?? 0,
    tokens: tokensOf(record.metrics),
    spendVersion: record.spendVersion ?? null,
    max_budget_per_task: record.max_budget_per_task ?? null,
    budget_stop: (record.budget_stop as BudgetStop | null | undefined) ?? null,
    execution_status: record.execution_status ?? null,
  };
}

export class SpendRecords {
  constructor(private readonly models: Models) {}

  async conversation(id: string): Promise<SpendRecord | null> {
    const record = await this.models.AppConversation.findOne({ _id: id }, FIELDS).lean();
    return record ? spendOf(record) : null;
  }

  /** The report's figures, if the record still has the spendVersion read; false when another write came first. */
  async saveSpend(record: SpendRecord, spend: Spend): Promise<boolean> {
    const snapshot: MetricsSnapshot = spend.snapshot;
    const result = await this.models.AppConversation.updateOne(
      { _id: record._id, spendVersion: record.spendVersion },
      { $set: { accumulated_cost: spend.cost, metrics: snapshot, spendVersion: crypto.randomBytes(12).toString('base64url') } },
    );
    return result.matchedCount > 0;
  }

  /**
   * Counts a report in the owner's month: the conversation's range this month widens to include
   * the cost before the report (`from`) and the reported cost (`to`). Applied before the
   * conversation's own write, so a crash in between leaves a range the next report re-applies.
   */
  async noteMonth(userId: string, month: string, conversationId: string, from: number, to: number): Promise<void> {
    // The driver's own update: mongoose would add the document's defaults on insert, colliding with the paths set here.
    await this.models.MonthlySpend.collection.updateOne(
      { _id: `${userId}:${month}` as never },
      {
        $min: { [`conversations.${conversationId}.from`]: from },
        $max: { [`conversations.${conversationId}.to`]: to },
        $set: { updatedAt: new Date() },
        $setOnInsert: { userId, month },
      },
      { upsert: true },
    );
  }

  /** What the user's conversations have cost in the month. */
  async monthCost(userId: string, month: string): Promise<number> {
    const doc = await this.models.MonthlySpend.findOne({ _id: `${userId}:${month}` }, { conversations: 1 }).lean();
    return monthTotal(doc?.conversations);
  }

  /** Marks the conversation stopped: 'first' when it was not (the moment it is), 'held' when it is, 'stale' when its budget changed since read. */
  async markStopped(id: string, stop: BudgetStop, budgetRead: number | null): Promise<'first' | 'held' | 'stale'> {
    // Only while the budget is the one the decision was made on: a raise in between decides anew.
    const unchanged = { _id: id, max_budget_per_task: budgetRead ?? null };
    const first = await this.models.AppConversation.updateOne({ ...unchanged, budget_stop: null }, { $set: { budget_stop: stop } });
    if (first.matchedCount > 0) return 'first';
    // Already stopped: a different limit now holds it (e.g. the monthly cap after a raised budget).
    const stopped = { ...unchanged, budget_stop: { $ne: null } };
    await this.models.AppConversation.updateOne(
      { ...stopped, 'budget_stop.reason': { $ne: stop.reason } },
      { $set: { budget_stop: stop } },
    );
    return (await this.models.AppConversation.exists(stopped)) ? 'held' : 'stale';
  }

  /** Clears the stop read (not one set since); true when it cleared it. */
  async clearStop(id: string, stop: BudgetStop): Promise<boolean> {
    const result = await this.models.AppConversation.updateOne(
      { _id: id, 'budget_stop.reason': stop.reason, 'budget_stop.at': stop.at },
      { $set: { budget_stop: null } },
    );
    return result.matchedCount > 0;
  }

  /** Sets the conversation's own budget (null: the settings'); false when the user has no such conversation. */
  async setBudget(userId: string, id: string, budget: number | null): Promise<boolean> {
    const result = await this.models.AppConversation.updateOne({ _id: id, userId }, { $set: { max_budget_per_task: budget } });
    return result.matchedCount > 0;
  }

  /** An organisation's conversations stopped for a budget. */
  async ofOrganization(orgId: string, which: 'stopped'): Promise<SpendRecord[]> {
    const filter = which === 'stopped' ? { orgId, budget_stop: { $ne: null } } : { orgId };
    return (await this.models.AppConversation.find(filter, FIELDS).sort({ orgId: 1, createdAt: -1, _id: -1 }).lean()).map(spendOf);
  }

  /** The user's conversations stopped for a budget, or (running) those the agent server last reported running. */
  async ofUser(userId: string, which: 'stopped' | 'running'): Promise<SpendRecord[]> {
    const filter = which === 'stopped' ? { userId, budget_stop: { $ne: null } } : { userId, execution_status: 'running' };
    return (await this.models.AppConversation.find(filter, FIELDS).lean()).map(spendOf);
  }
}
