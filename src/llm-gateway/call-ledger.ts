// The LLM gateway's writes after a call (docs/llm-gateway.md#budgets): every call that ended is
// written once to the ledger (llm_calls, the gateway's call id as its _id) and its usage added
// to its conversation's totals on its route, which go to the budgets as the conversation's cost.
// They are written after the answer has gone, one write at a time per conversation: the calls
// that end while a write is under way are written together after it (one insert, one $inc, one
// report), so that the writes keep up however fast calls come and the agent never waits for
// them. A stopping service awaits drain() before its database closes.
import type { MetricsSnapshot } from '../../contract/budgets.schema.js';
import type { Models } from '../../models/index.js';
import type { Logger } from '../logger.js';
import type { Metrics } from '../metrics.js';
import type { LlmRoute, LlmRoutes, LlmTotals } from './llm-routes.js';
import type { CallUsage } from './usage.js';

export type CallOutcome = 'ok' | 'provider_error' | 'unreachable' | 'aborted' | 'too_large';

export interface LedgerDeps {
  models: Models;
  routes: Pick<LlmRoutes, 'add'>;
  budgets: {
    report(conversationId: string, spend: ReturnType<typeof spendOf>, status: string | null, source: 'gateway'): Promise<void>;
  };
  metrics: Metrics;
  log: Logger;
}

/** What the ledger needs of a call (the gateway's GatewayCall). */
export interface LedgerCall {
  id: string;
  style: string;
  route: Pick<LlmRoute, 'conversationId' | 'userId' | 'model' | 'routeId'>;
  startedAt: number;
}

/** A call that has ended, as llm_calls holds it (and its usage, for the totals). */
interface EndedCall {
  _id: string;
  conversationId: string;
  userId: string;
  model: string;
  api: string;
  outcome: CallOutcome;
  status: number | null;
  promptTokens: number;
  completionTokens: number;
  cacheReadTokens: number;
  cacheWriteTokens: number;
  cost: number;
  ms: number;
  at: Date;
  usage: CallUsage | null;
}

export class CallLedger {
  /** Every write under way (and the refusals' stops, track()), awaited by drain(). */
  private readonly writing = new Set<Promise<void>>();
  /** The writes under way by user (the gateway waits for them before a call under a limit). */
  private readonly writingOf = new Map<string, Set<Promise<void>>>();
  /** By conversation: the calls waiting for the write under way, and the last write. */
  private readonly waiting = new Map<string, { calls: EndedCall[]; written: Promise<void> }>();
  private readonly lastWrite = new Map<string, Promise<void>>();
  /** The costs of the calls ended and not yet written, by user and conversation. */
  private readonly pending = new Map<string, Map<string, { cost: number; calls: number }>>();

  constructor(private readonly deps: LedgerDeps) {}

  /** Counts the call in the metrics now and writes it soon; resolves once it is written (never rejects: failures are logged). */
  end(call: LedgerCall, outcome: CallOutcome, status: number | null, priced: { usage: CallUsage; cost: number } | null): Promise<void> {
    const { model, conversationId, userId } = call.route;
    const { metrics } = this.deps;
    const usage = priced?.usage ?? null;
    const cost = priced?.cost ?? 0;
    const ms = Date.now() - call.startedAt;
    metrics.llmCalls.inc({ model, outcome });
    metrics.llmCallDuration.observe({ model, outcome }, ms / 1000);
    if (usage) {
      metrics.llmTokens.inc({ model, kind: 'input' }, usage.input);
      metrics.llmTokens.inc({ model, kind: 'output' }, usage.output);
      metrics.llmTokens.inc({ model, kind: 'cache_read' }, usage.cacheRead);
      metrics.llmTokens.inc({ model, kind: 'cache_write' }, usage.cacheWrite);
      metrics.llmCost.inc({ model }, cost);
    }
    let batch = this.waiting.get(conversationId);
    if (!batch) {
      const calls: EndedCall[] = [];
      const written = (this.lastWrite.get(conversationId) ?? Promise.resolve()).then(() => {
        // From here on, calls that end wait for the next write.
        if (this.waiting.get(conversationId)?.calls === calls) this.waiting.delete(conversationId);
        return this.write(call.route.routeId ?? conversationId, conversationId, calls);
      });
      batch = { calls, written };
      this.waiting.set(conversationId, batch);
      this.lastWrite.set(conversationId, written);
      void written.then(() => {
        if (this.lastWrite.get(conversationId) === written) this.lastWrite.delete(conversationId);
      });
      this.track(written);
      const ofUser = this.writingOf.get(userId) ?? new Set<Promise<void>>();
      this.writingOf.set(userId, ofUser.add(written));
      void written.then(() => {
        ofUser.delete(written);
        if (ofUser.size === 0 && this.writingOf.get(userId) === ofUser) this.writingOf.delete(userId);
        for (const c of calls) this.settle(c);
      });
    }
    const costs = this.pending.get(userId) ?? new Map<string, { cost: number; calls: number }>();
    const mine = costs.get(conversationId) ?? { cost: 0, calls: 0 };
    costs.set(conversationId, { cost: mine.cost + cost, calls: mine.calls + 1 });
    this.pending.set(userId, costs);
    batch.calls.push({
      _id: call.id,
      conversationId,
      userId,
      model,
      api: call.style,
      outcome,
      status,
      promptTokens: usage ? usage.input + usage.cacheRead + usage.cacheWrite : 0,
      completionTokens: usage?.output ?? 0,
      cacheReadTokens: usage?.cacheRead ?? 0,
      cacheWriteTokens: usage?.cacheWrite ?? 0,
      cost,
      ms,
      at: new Date(),
      usage,
    });
    return batch.written;
  }

  /** The user's calls that have ended and are not written yet (their writes), if any. */
  unwrittenOf(userId: string): Promise<void>[] | null {
    const ofUser = this.writingOf.get(userId);
    return ofUser ? [...ofUser] : null;
  }

  /** What the user's calls ended and not yet written cost: the conversation's, and all of the user's (for the month). */
  pendingCost(userId: string, conversationId: string): { conversation: number; user: number } {
    const ofUser = this.pending.get(userId);
    let user = 0;
    for (const { cost } of ofUser?.values() ?? []) user += cost;
    return { conversation: ofUser?.get(conversationId)?.cost ?? 0, user };
  }

  private settle(call: EndedCall): void {
    const ofUser = this.pending.get(call.userId);
    const mine = ofUser?.get(call.conversationId);
    if (!ofUser || !mine) return;
    if (mine.calls <= 1) ofUser.delete(call.conversationId);
    else ofUser.set(call.conversationId, { cost: mine.cost - call.cost, calls: mine.calls - 1 });
    if (ofUser.size === 0) this.pending.delete(call.userId);
  }

  /** Work that drain() waits for too. */
  track(work: Promise<void>): Promise<void> {
    this.writing.add(work);
    const done = () => void this.writing.delete(work);
    work.then(done, done);
    return work;
  }

  /** Resolves once every call that has ended is written (and all tracked work done). */
  async drain(): Promise<void> {
    while (this.writing.size > 0) await Promise.allSettled([...this.writing]);
  }

  /** One conversation's ended calls: into the ledger, their usage added to its route's totals at once, then the budgets told. */
  private async write(routeId: string, conversationId: string, calls: EndedCall[]): Promise<void> {
    try {
      // lean: the documents are complete as they are (no casting or validation per call).
      await this.deps.models.LlmCall.insertMany(
        calls.map(({ usage: _, ...doc }) => doc),
        { ordered: false, lean: true },
      );
      const counted = calls.filter((c) => c.usage !== null);
      if (counted.length === 0) return;
      const sum = (pick: (c: EndedCall) => number) => counted.reduce((total, c) => total + pick(c), 0);
      const totals = await this.deps.routes.add(routeId, {
        calls: counted.length,
        cost: sum((c) => c.cost),
        promptTokens: sum((c) => c.promptTokens),
        completionTokens: sum((c) => c.completionTokens),
        cacheReadTokens: sum((c) => c.cacheReadTokens),
        cacheWriteTokens: sum((c) => c.cacheWriteTokens),
        reasoningTokens: sum((c) => c.usage!.reasoning ?? 0),
      });
      if (totals) await this.deps.budgets.report(conversationId, spendOf(counted.at(-1)!.model, totals), null, 'gateway');
    } catch (error) {
      this.deps.log.error({ err: error, conversationId, callIds: calls.map((c) => c._id) }, 'recording LLM calls failed');
    }
  }
}

/** A conversation's gateway totals as the budgets read a report (cumulative, like the agent's own). */
export function spendOf(model: string, totals: LlmTotals): { cost: number; tokens: number; snapshot: MetricsSnapshot } {
  const tokens = totals.promptTokens + totals.completionTokens;
  return {
    cost: totals.cost,
    tokens,
    snapshot: {
      model_name: model,
      accumulated_cost: totals.cost,
      max_budget_per_task: null,
      accumulated_token_usage: {
        model,
        prompt_tokens: totals.promptTokens,
        completion_tokens: totals.completionTokens,
        cache_read_tokens: totals.cacheReadTokens,
        cache_write_tokens: totals.cacheWriteTokens,
        reasoning_tokens: totals.reasoningTokens,
        context_window: 0,
        per_turn_token: 0,
        response_id: '',
      },
    },
  };
}
