// Stored conversations as the API shows them: with the live status of their sandbox, the
// agent server's execution status, their cost and budget and, when asked, their
// sub-conversations. What the agent server answers about cost is reported to the budgets, so
// a conversation whose webhooks went missing is still counted (and stopped) when it is read.
// watch(): one conversation read again and again, each change pushed once (tRPC appConversations.watch).
import type { AppConversation } from '../../contract/app-conversations.schema.js';
import { polledChanges } from '../db/polled-changes.js';
import { AppError } from '../errors.js';
import { AgentServerClient, type AgentConversationInfo } from '../agent-server/client.js';
import type { SandboxesService } from '../sandbox/index.js';
import type { AppConversationRecord } from '../../models/index.js';
import type { BudgetsService } from './budgets/budgets.service.js';
import { PROFILE_TAGS } from './profiles.js';
import { storedConversationFields } from './records/queries.js';
import { advances, reportedSpend, tokensOf } from './budgets/spend.js';
import type { ConversationStore } from './records/store.js';

export class LiveStatus {
  constructor(
    private readonly store: ConversationStore,
    private readonly sandboxes: SandboxesService,
    private readonly budgets: BudgetsService,
  ) {}

  /**
   * The conversation as its owner reads it (its status, title, metrics and budget as stored,
   * the sandbox's state), again every WATCH_MS, whichever replica changed it: each change once.
   * Ends when the conversation is deleted; NOT_FOUND for one the user does not have.
   */
  watch(userId: string, id: string, signal?: AbortSignal): AsyncGenerator<AppConversation> {
    return polledChanges(
      async () => {
        const record = await this.store.conversation(userId, id);
        return record ? (await this.of(userId, [record], false, true))[0]! : null;
      },
      {
        everyMs: WATCH_MS,
        signal,
        missing: () => new AppError('NOT_FOUND', `Conversation not found: ${id}`, { reason: 'conversation_not_found' }),
      },
    );
  }

  /** storedExecution: the execution status the agent server last reported (lifecycle events), with no call to it. */
  async of(
    userId: string,
    given: AppConversationRecord[],
    withSubConversations: boolean,
    storedExecution = false,
  ): Promise<AppConversation[]> {
    let records = given;
    const states = await this.sandboxes.statuses(
      userId,
      records.flatMap((r) => (r.sandboxId ? [r.sandboxId] : [])),
    );
    const subs = withSubConversations
      ? await this.store.subConversationsOf(
          userId,
          records.map((r) => r._id),
        )
      : [];
    // One agent-server call per running sandbox for the live execution status.
    const execution = new Map<string, string | null>();
    const newer: [AppConversationRecord, AgentConversationInfo][] = [];
    const bySandbox = new Map<string, AppConversationRecord[]>();
    for (const r of storedExecution ? [] : records) {
      if (r.sandboxId && isReady(r)) bySandbox.set(r.sandboxId, [...(bySandbox.get(r.sandboxId) ?? []), r]);
    }
    await Promise.all(
      [...bySandbox].map(async ([sandboxId, conversations]) => {
        const state = states.get(sandboxId);
        const url = state?.internalUrl;
        if (state?.status !== 'RUNNING' || !url || !state.sessionKey) return;
        try {
          const infos = await new AgentServerClient(url, state.sessionKey, 3_000).getConversations(conversations.map((c) => c._id));
          infos.forEach((info, i) => {
            const record = conversations[i]!;
            execution.set(record._id, info?.execution_status ?? null);
            const spend = reportedSpend(info);
            const stored = { cost: record.accumulated_cost ?? 0, tokens: tokensOf(record.metrics) };
            if (info && spend && advances(spend, stored)) newer.push([record, info]);
          });
        } catch {
          // Unreachable agent server: execution_status stays null (reference).
        }
      }),
    );
    if (newer.length > 0) {
      for (const [record, info] of newer) await this.budgets.report(record._id, reportedSpend(info), info.execution_status ?? null);
      const fresh = new Map(
        (
          await this.store.conversationsByIds(
            userId,
            newer.map(([r]) => r._id),
          )
        ).map((r) => [r._id, r]),
      );
      records = records.map((r) => fresh.get(r._id) ?? r);
    }
    const limits = await this.budgets.userLimits(userId);
    return records.map((r) => {
      const state = r.sandboxId ? states.get(r.sandboxId) : undefined;
      // A conversation still starting, or whose start failed, shows as such whatever its sandbox does.
      const startStatus = r.startState === 'starting' ? 'STARTING' : r.startState === 'failed' ? 'ERROR' : null;
      const publicUrl =
        !startStatus && state?.status === 'RUNNING' ? state.exposedUrls?.find((u) => u.name === 'AGENT_SERVER')?.url : undefined;
      return {
        ...storedConversationFields(r),
        trigger: r.trigger ?? null,
        llm_model: r.llm_model ?? null,
        pr_number: r.pr_number ?? [],
        ...this.budgets.view(r, limits),
        parent_conversation_id: r.parent_conversation_id ?? null,
        sub_conversation_ids: subs.filter((s) => s.parent_conversation_id === r._id).map((s) => s._id),
        created_at: r.createdAt.toISOString(),
        updated_at: r.updatedAt.toISOString(),
        sandbox_status: startStatus ?? state?.status ?? 'MISSING',
        sandbox_status_reason: state ? state.reason : (r.sandbox_gone_reason ?? null),
        // A delete under way says so, whatever the agent server still reports.
        execution_status:
          r.execution_status === 'deleting' || storedExecution ? (r.execution_status ?? null) : (execution.get(r._id) ?? null),
        conversation_url: publicUrl ? `${publicUrl}/api/conversations/${r._id}` : null,
        session_api_key: state?.sessionKey ?? null,
        ...fields2026(r),
      };
    });
  }
}

const isReady = (r: AppConversationRecord) => r.startState !== 'starting' && r.startState !== 'failed';

/** The 2026 fields: the agent kind (always the OpenHands agent here), sharing, tags and the launching profile. */
function fields2026(r: AppConversationRecord) {
  const tags = (r.tags ?? {}) as Record<string, string>;
  const profileId = tags[PROFILE_TAGS.id];
  return {
    agent_kind: 'openhands',
    public: r.public ?? null,
    tags,
    acp_server: null,
    launched_agent_profile: profileId ? { agent_profile_id: profileId, revision: Number(tags[PROFILE_TAGS.revision]) || 0 } : null,
  };
}

/** How often a watched conversation is read again (a change on another replica shows within this). */
const WATCH_MS = 1_000;
