// Budgets (docs/budgets.md): each conversation's cost as its agent server reports it (webhooks,
// and the agent server's own answers when the service reads it), kept durably and never counted
// twice (spend-records.ts), in its owner's month and its organisation's; the limits applied to it
// (budget-limits.ts); and what happens when one is reached: budgetReached() marks the
// conversation and pauses its agent (never its sandbox or data). Raising a limit lets it go on.
import type { BudgetStopReason, MetricsSnapshot, UserBudget } from '../../../contract/budgets.schema.js';
import { AppError } from '../../errors.js';
import type { Logger } from '../../logger.js';
import type { SettingsService } from '../../services/settings/settings.service.js';
import type { AppConversationRecord } from '../../../models/index.js';
import { untilApplied } from '../../db/versions.js';
import type { SandboxAccess } from '../../sandbox/index.js';
import { BudgetLimits, CACHED_MS, type UserLimits } from './budget-limits.js';
import { orgSpendKey, spendOf, type BudgetStop, type SpendRecord, type SpendRecords } from './spend-records.js';
import { advances, monthOf, reachedLimit, refusal, shownSnapshot, type Limits, type MonthCosts, type Spend } from './spend.js';

export type { UserLimits } from './budget-limits.js';

/** The budget fields of a conversation as the API shows it. */
export interface BudgetView {
  metrics: MetricsSnapshot | null;
  max_budget_per_task: number | null;
  execution_status_reason: BudgetStopReason | null;
}

export interface BudgetsOptions {
  records: SpendRecords;
  settings: SettingsService;
  access: SandboxAccess;
  /** MAX_BUDGET_PER_MONTH: the monthly cap of users who set none (null: none). */
  defaultMonthlyCap: number | null;
  /** A team organisation's monthly cap (docs/organizations.md; null: none). */
  orgMonthlyCap?: (orgId: string) => Promise<number | null>;
  log: Logger;
  clock?: (() => number) | undefined;
  /** Whether the LLM gateway counts the conversation's calls (then its agent's own cost reports are not counted). */
  countedByGateway?: (conversationId: string) => Promise<boolean>;
}

export type MayRunOptions = { cached?: boolean; pending?: { conversation: number; user: number } };

/** A conversation that has just been stopped for a budget: the one "budget reached" event. */
export interface BudgetReached {
  conversationId: string;
  userId: string;
  stop: BudgetStop;
}

/** How often, and how far apart, a run the agent server refuses (its previous run still winding up) is asked again. */
const RUN_ATTEMPTS = 120;
const RUN_RETRY_MS = 500;

/**
 * For the LLM gateway's calls (assertMayRun's `cached`): how long a conversation found under no
 * limit at all is taken to be so (as the limits themselves: budget-limits.ts). A conversation
 * under a limit has its cost (and the month's) read for every call.
 */
const MAX_UNLIMITED = 10_000;

export class BudgetsService {
  private readonly records: SpendRecords;
  private readonly log: Logger;
  private readonly now: () => number;
  private readonly reachedListeners: ((reached: BudgetReached) => Promise<void> | void)[] = [];
  /** Conversations found under no limit, by when (CACHED_MS). */
  private readonly unlimited = new Map<string, number>();
  private readonly limits: BudgetLimits;

  constructor(private readonly options: BudgetsOptions) {
    this.records = options.records;
    this.log = options.log;
    this.now = options.clock ?? Date.now;
    this.limits = new BudgetLimits({ ...options, now: this.now });
  }

  // ---- reports ----

  /**
   * What the conversation's agent server reported (`spend`: its cumulative figures, if the report
   * had any; `status`: its execution status then). A higher cost is kept and counted in the
   * owner's month once; then the limits are applied when the cost rose or the agent runs on
   * while stopped.
   */
  async report(conversationId: string, spend: Spend | null, status: string | null, source: 'agent' | 'gateway' = 'agent'): Promise<void> {
    // The gateway's ledger is the conversation's cost where it has one: the agent's own is not counted then.
    if (spend && source === 'agent' && (await this.options.countedByGateway?.(conversationId))) spend = null;
    if (!spend && status !== 'running') return;
    let record = await this.records.conversation(conversationId);
    if (!record) return;
    let rose = false;
    if (spend) {
      await untilApplied("The conversation's cost", async () => {
        if (!record || !advances(spend, { cost: record.accumulated_cost, tokens: record.tokens })) return true;
        if (spend.cost > record.accumulated_cost) {
          await this.records.noteMonth(record.userId, this.month(), record._id, record.accumulated_cost, spend.cost);
          if (record.orgId)
            await this.records.noteMonth(orgSpendKey(record.orgId), this.month(), record._id, record.accumulated_cost, spend.cost);
        }
        if (await this.records.saveSpend(record, spend)) {
          record = { ...record, accumulated_cost: spend.cost, tokens: spend.tokens };
          rose = true;
          return true;
        }
        record = await this.records.conversation(conversationId);
        return false;
      });
    }
    if (record && (rose || (record.budget_stop && status === 'running'))) await this.enforce(record, status);
  }

  /** Stops the conversation when a limit is reached; clears a stop no limit holds any more. */
  private async enforce(record: SpendRecord, status: string | null): Promise<void> {
    const limits = await this.limits.of(record);
    const reached = reachedLimit(record.accumulated_cost, await this.monthCosts(record, limits), limits);
    if (reached) await this.budgetReached(record, this.stop(reached, record), status);
    else if (record.budget_stop) await this.records.clearStop(record._id, record.budget_stop);
  }

  /** What the month has cost the owner and the organisation, where a cap applies; `pending`: costs not written yet. */
  private async monthCosts(record: SpendRecord, limits: Limits, pending = { conversation: 0, user: 0 }): Promise<MonthCosts> {
    const month = this.month();
    return {
      user: limits.perMonth === null ? null : (await this.records.monthCost(record.userId, month)) + pending.user,
      // The other members' unwritten calls are not known here: they count once written (at most milliseconds later).
      org:
        limits.perOrgMonth === null || !record.orgId
          ? null
          : (await this.records.monthCost(orgSpendKey(record.orgId), month)) + pending.conversation,
    };
  }

  /**
   * THE moment a conversation is stopped for a budget: the one place that marks it (reason, time,
   * figures) and pauses its agent. `first` is true exactly once per stop, on whichever replica
   * set the mark, and only then are whenReached's listeners told (the "budget reached" event). The agent is paused then, and
   * again whenever it runs on while stopped (e.g. a message sent to the agent server directly).
   * Reaching the monthly cap stops the owner's other running conversations too.
   */
  async budgetReached(record: SpendRecord, stop: BudgetStop, status: string | null): Promise<void> {
    const mark = await this.records.markStopped(record._id, stop, record.max_budget_per_task);
    if (mark === 'stale') return; // its budget changed since it was read: that change decides
    const first = mark === 'first';
    if (first || status === 'running') await this.pauseAgent(record);
    if (!first) return;
    this.log.info(
      { conversationId: record._id, userId: record.userId, reason: stop.reason, cost: stop.accumulated_cost, limit: stop.limit },
      'conversation stopped: budget reached',
    );
    await this.tellReached({ conversationId: record._id, userId: record.userId, stop });
    if (stop.reason !== 'monthly_budget_reached' || stop.of === 'organization') return;
    for (const other of await this.records.ofUser(record.userId, 'running')) {
      if (other._id !== record._id) await this.budgetReached(other, { ...stop, accumulated_cost: other.accumulated_cost }, 'running');
    }
  }

  /**
   * Subscribes to "budget reached": told once per stop, on the replica that made it, after the
   * agent was asked to pause (lifecycle notifications hang here). A failing listener is logged.
   */
  whenReached(listener: (reached: BudgetReached) => Promise<void> | void): void {
    this.reachedListeners.push(listener);
  }

  private async tellReached(reached: BudgetReached): Promise<void> {
    for (const listener of this.reachedListeners) {
      try {
        await listener(reached);
      } catch (error) {
        this.log.warn({ err: error, conversationId: reached.conversationId }, 'a budget-reached listener failed');
      }
    }
  }

  private stop(reached: { reason: BudgetStopReason; limit: number; of: BudgetStop['of'] }, record: SpendRecord): BudgetStop {
    return {
      reason: reached.reason,
      at: new Date(this.now()),
      accumulated_cost: record.accumulated_cost,
      limit: reached.limit,
      of: reached.of,
    };
  }

  /** Pauses the agent when its sandbox runs (a paused sandbox runs no agent); failures wait for the next report. */
  private async pauseAgent(record: SpendRecord): Promise<void> {
    try {
      const { agent } = await this.options.access.running(record.userId, record._id, { resume: false });
      await agent.pauseConversation(record._id);
    } catch (error) {
      if (error instanceof AppError && error.code === 'CONFLICT') return; // not running: nothing to pause
      this.log.warn({ err: error, conversationId: record._id }, 'pausing a conversation at its budget failed');
    }
  }

  // ---- raising a limit and going on ----

  /**
   * PATCH: the conversation's own budget (null: the settings'). A conversation it stopped goes on
   * once nothing holds it; one that has already cost as much is stopped now.
   */
  async setConversationBudget(userId: string, conversationId: string, budget: number | null): Promise<boolean> {
    const set = await this.records.setBudget(userId, conversationId, budget);
    this.limitsChanged(); // after the write: a read made across it is not kept
    if (!set) return false;
    const record = await this.records.conversation(conversationId);
    if (record?.budget_stop) await this.goOn(record, true);
    else if (record) await this.enforce(record, record.execution_status);
    return true;
  }

  /** After a settings save: the owner's stopped conversations that no limit holds any more go on (their sandboxes are not resumed). */
  async reconsider(userId: string): Promise<void> {
    this.limitsChanged(); // the save may have set a limit
    await this.goOnAll(await this.records.ofUser(userId, 'stopped'));
  }

  /** After an organisation's monthly cap changed: its stopped conversations that no limit holds any more go on. */
  async reconsiderOrganization(orgId: string): Promise<void> {
    this.limitsChanged();
    await this.goOnAll(await this.records.ofOrganization(orgId, 'stopped'));
  }

  private async goOnAll(records: SpendRecord[]): Promise<void> {
    for (const record of records) {
      await this.goOn(record, false).catch((error: unknown) =>
        this.log.warn({ err: error, conversationId: record._id }, 'continuing a conversation after a budget change failed'),
      );
    }
  }

  /** A limit may have been set: every conversation is read again at its next call (and a read under way is not kept). */
  private limitsChanged(): void {
    this.limits.changed();
    this.unlimited.clear();
  }

  /** Clears the stop if no limit holds the conversation, and runs its agent again if the stop paused (or ended) it. */
  private async goOn(record: SpendRecord, resumeSandbox: boolean): Promise<void> {
    const limits = await this.limits.of(record);
    const reached = reachedLimit(record.accumulated_cost, await this.monthCosts(record, limits), limits);
    if (reached) {
      // Still held, maybe by the other limit now; through budgetReached in case the stop was lifted meanwhile.
      if (reached.reason !== record.budget_stop?.reason) await this.budgetReached(record, this.stop(reached, record), null);
      return;
    }
    if (!record.budget_stop || !(await this.records.clearStop(record._id, record.budget_stop))) return;
    // In the background: the agent server refuses a new run while the paused one still winds up.
    void this.runAgain(record, resumeSandbox);
  }

  /** Runs the agent again if the stop paused or ended it (and no stop has come since); failures are logged, a message sent later runs it. */
  private async runAgain(record: SpendRecord, resumeSandbox: boolean): Promise<void> {
    try {
      const { agent } = await this.options.access.running(record.userId, record._id, { resume: resumeSandbox });
      for (let attempt = 0; attempt < RUN_ATTEMPTS; attempt++) {
        if ((await this.records.conversation(record._id))?.budget_stop) return;
        // Paused by the stop, or ended in error by it: the LLM gateway refuses the agent's next call
        // (budget_exceeded), and the agent SDK ends the run with an error rather than retrying.
        const status = (await agent.getConversation(record._id)).execution_status;
        if (status !== 'paused' && status !== 'error') return;
        if (await agent.runConversation(record._id)) return;
        await new Promise((resolve) => setTimeout(resolve, RUN_RETRY_MS).unref());
      }
      this.log.warn({ conversationId: record._id }, 'the agent server kept refusing to run a conversation after its budget was raised');
    } catch (error) {
      if (error instanceof AppError && error.code === 'CONFLICT') return; // its sandbox does not run (and was not to be resumed)
      this.log.warn({ err: error, conversationId: record._id }, 'running a conversation again after its budget was raised failed');
    }
  }

  /**
   * Before a message that runs the agent (or an LLM call through the gateway): refused (409)
   * while a limit is reached, with the reason and what to raise; a stop no limit holds any more
   * is lifted. Answers whether any limit applies to the conversation. The LLM gateway's calls:
   * `cached` (CACHED_MS); `pending`, costs not written yet, added to the conversation's and the
   * month's (a refusal is then the caller's to check again without them).
   */
  async assertMayRun(userId: string, conversationId: string, options: MayRunOptions = {}): Promise<boolean> {
    const key = `${userId}:${conversationId}`;
    const now = this.now();
    if (options.cached && now - (this.unlimited.get(key) ?? -Infinity) < CACHED_MS) return false;
    const generation = this.limits.generation;
    const record = await this.records.conversation(conversationId);
    if (!record || record.userId !== userId) return false; // the caller answers 404
    const limits = await this.limits.of(record, options.cached === true);
    const pending = options.pending ?? { conversation: 0, user: 0 };
    const months = await this.monthCosts(record, limits, pending);
    const reached = reachedLimit(record.accumulated_cost + pending.conversation, months, limits);
    if (!reached) {
      if (record.budget_stop) await this.records.clearStop(record._id, record.budget_stop);
      const limited = limits.perTask !== null || limits.perMonth !== null || limits.perOrgMonth !== null;
      // Not kept when a limit was set while this was read.
      if (!limited && !record.budget_stop && generation === this.limits.generation) {
        if (this.unlimited.size >= MAX_UNLIMITED) this.unlimited.clear();
        this.unlimited.set(key, now);
      } else this.unlimited.delete(key);
      return limited;
    }
    this.unlimited.delete(key);
    const message = refusal(conversationId, record.accumulated_cost, months, reached);
    throw new AppError('CONFLICT', message, { reason: reached.reason, fields: { conversation_id: conversationId } });
  }

  /**
   * The LLM gateway refused one of the conversation's calls (assertMayRun): the conversation is
   * stopped with the reason if it was not yet, e.g. one whose owner's month reached the cap while
   * its agent was not reported running (so the cap's stop passed it by). The agent's run ends in
   * error on the refusal; raising the limit runs it again.
   */
  async refused(conversationId: string): Promise<void> {
    const record = await this.records.conversation(conversationId);
    if (record && !record.budget_stop) await this.enforce(record, null);
  }

  // ---- what the API shows ----

  /** The user's limits: the settings' budget per conversation and the monthly cap in force. */
  userLimits(userId: string): Promise<UserLimits> {
    return this.limits.user(userId);
  }

  /** What an organisation's conversations have cost this month (its budget's view). */
  async organizationMonth(orgId: string): Promise<{ month: string; cost: number }> {
    const month = this.month();
    return { month, cost: await this.records.monthCost(orgSpendKey(orgId), month) };
  }

  /** A stored conversation's budget fields, under its owner's limits. */
  view(record: AppConversationRecord, limits: UserLimits): BudgetView {
    const spend = spendOf(record);
    const budget = spend.max_budget_per_task ?? limits.perTaskDefault;
    return {
      metrics: shownSnapshot(record.metrics, spend.accumulated_cost, budget),
      max_budget_per_task: spend.max_budget_per_task,
      execution_status_reason: spend.budget_stop?.reason ?? null,
    };
  }

  async userBudget(userId: string): Promise<UserBudget> {
    const limits = await this.userLimits(userId);
    const month = this.month();
    const cost = await this.records.monthCost(userId, month);
    return {
      max_budget_per_task: limits.perTaskDefault,
      max_budget_per_month: limits.perMonth,
      max_budget_per_month_source: limits.perMonthSource,
      month,
      month_cost: cost,
      monthly_budget_reached:
        reachedLimit(0, { user: cost, org: null }, { perTask: null, perMonth: limits.perMonth, perOrgMonth: null }) !== null,
      stopped_conversation_ids: (await this.records.ofUser(userId, 'stopped')).map((r) => r._id),
    };
  }

  private month(): string {
    return monthOf(new Date(this.now()));
  }
}
