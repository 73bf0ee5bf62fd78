// Agent callbacks: the webhooks agent servers send us (docs/api.md; outbound ones are
// src/lifecycle-webhooks/). Authenticated with the sandbox's own session key (SandboxKeys:
// the sandbox named in the path, or found by the key alone), they keep a conversation's
// status and title current without wiping other fields, its events stored, and its cost
// reported to the budgets (docs/budgets.md); the
// secrets lookup serves GIT_TOKEN to a holder of a signed access token. A sandbox's key
// reaches only its own conversations: an id that belongs to another user or another sandbox
// (or to a start that has not chosen its sandbox yet) answers 401 and nothing changes.
import type { ProviderType } from '../../../contract/common.schema.js';
import type { AccessClaims, AccessTokens } from '../../access-token.js';
import { AppError } from '../../errors.js';
import { PROFILE_TAGS } from '../profiles.js';
import type { GitProvidersService } from '../../git/git-providers.service.js';
import type { SandboxUsage } from '../../sandbox/index.js';
import type { AppConversationRecord } from '../../../models/index.js';
import type { BudgetsService } from '../budgets/budgets.service.js';
import type { EventsService } from './events.service.js';
import { reportedTitleCondition } from '../records/queries.js';
import { advances, reportedSpend, type Spend } from '../budgets/spend.js';
import type { ConversationLifecycleEvents } from '../conversation-lifecycle-events.js';
import type { ConversationStore } from '../records/store.js';

const unauthorized = () => new AppError('UNAUTHORIZED', 'Unauthorized');
const TITLE_LENGTH = 50;

type ReportedFields = Partial<Pick<AppConversationRecord, 'execution_status' | 'tags'>>;

interface AgentEvent {
  kind?: string;
  source?: string;
  key?: string;
  value?: unknown;
  llm_message?: { content?: { type?: string; text?: string }[] };
}

export class AgentCallbacksService {
  constructor(
    private readonly store: ConversationStore,
    private readonly gitProviders: GitProvidersService,
    private readonly accessTokens: AccessTokens,
    private readonly usage: SandboxUsage,
    private readonly eventLog: EventsService,
    private readonly budgets: BudgetsService,
    /** Execution status changes, for the lifecycle webhooks. */
    private readonly lifecycle: Pick<ConversationLifecycleEvents, 'conversationChanged'> | null = null,
  ) {}

  /** ConversationInfo from the agent server: upsert, keeping fields the agent does not know. */
  /** userId: the sandbox's owner, as authenticated by sandboxProcedure. */
  async conversation(sandboxId: string, userId: string, info: Record<string, unknown>): Promise<void> {
    const id = normaliseId(info.id);
    if (!id) throw new AppError('BAD_REQUEST', 'Conversation info without an id', { reason: 'webhook_conversation_id_missing' });
    // A conversation being deleted (reported so, or marked so here) must not come back.
    if (info.execution_status === 'deleting') return;
    const known = await this.store.conversationById(id);
    if (known?.execution_status === 'deleting') return;
    const set: ReportedFields = {};
    if (typeof info.execution_status === 'string') set.execution_status = info.execution_status;
    const llm = (info.agent as { llm?: { model?: string } } | undefined)?.llm;
    if (!(await this.store.saveReportedConversation(id, { userId, sandboxId }, set, llm?.model ?? null))) throw unauthorized();
    if (typeof info.title === 'string' && info.title.trim()) {
      const title = info.title.trim();
      await this.store.updateConversation(userId, id, { title }, reportedTitleCondition(title, false));
    }
    const tags = 'tags' in info ? withReportedTags(info.tags, known?.tags) : null;
    if (tags) await this.store.updateConversation(userId, id, { tags });
    if (set.execution_status) await this.usage.noteExecutionStatus(sandboxId, id, set.execution_status);
    await this.announce(userId, id, known?.execution_status ?? null, set.execution_status ? [set.execution_status] : []);
    // Without figures a report matters to budgets only for a stopped conversation (its agent running on).
    const spend = reportedSpend(info);
    if (spend || known?.budget_stop) await this.budgets.report(id, spend, set.execution_status ?? null);
  }

  /** A batch of agent events: stored, and their execution status, title and metrics changes applied. */
  async events(sandboxId: string, userId: string, conversationId: string, events: AgentEvent[]): Promise<void> {
    const id = normaliseId(conversationId);
    const conversation = id ? await this.store.conversationById(id) : null;
    // Unknown here (e.g. deleted): acknowledged, or the agent server would resend it forever.
    if (!conversation) return;
    if (conversation.userId !== userId || conversation.sandboxId !== sandboxId) throw unauthorized();
    if (conversation.execution_status === 'deleting') return; // its events die with it
    await this.eventLog.record(userId, conversation._id, events as Record<string, unknown>[]);
    const set: ReportedFields = {};
    let reportedTitle: string | null = null;
    let derivedTitle: string | null = null;
    // Every execution status the batch passes through, in order (each change is an event).
    const statuses: string[] = [];
    const noteStatus = (status: string) => statuses.push((set.execution_status = status));
    // Each report is cumulative: the batch's highest one says it all.
    let spend: Spend | null = null;
    const note = (found: Spend | null) => {
      if (found && (!spend || advances(found, { cost: spend.cost, tokens: spend.tokens }))) spend = found;
    };
    for (const event of events) {
      if (event.kind === 'ConversationStateUpdateEvent') {
        if (event.key === 'execution_status' && typeof event.value === 'string') noteStatus(event.value);
        if (event.key === 'title' && typeof event.value === 'string' && event.value.trim()) reportedTitle = event.value.trim();
        if (event.key === 'stats') note(reportedSpend(event.value));
        const tags = event.key === 'tags' ? withReportedTags(event.value, conversation.tags) : null;
        if (tags) set.tags = tags;
        if (event.key === 'full_state' && event.value && typeof event.value === 'object') {
          const state = event.value as Record<string, unknown>;
          if (typeof state.execution_status === 'string') noteStatus(state.execution_status);
          const stateTags = 'tags' in state ? withReportedTags(state.tags, conversation.tags) : null;
          if (stateTags) set.tags = stateTags;
          if (typeof state.title === 'string' && state.title.trim()) reportedTitle = state.title.trim();
          note(reportedSpend(state));
        }
      }
      // The title comes from the first user message when nothing better has arrived.
      if (!conversation.title && !derivedTitle && event.kind === 'MessageEvent' && event.source === 'user') {
        const text = event.llm_message?.content?.find((c) => c.type === 'text' && c.text?.trim())?.text?.trim();
        if (text) derivedTitle = text.split('\n')[0]!.slice(0, TITLE_LENGTH);
      }
    }
    const title = reportedTitle ?? derivedTitle;
    if (title) await this.store.updateConversation(userId, conversation._id, { title }, reportedTitleCondition(title, !reportedTitle));
    if (Object.keys(set).length > 0) {
      await this.store.updateConversation(userId, conversation._id, set);
      if (set.execution_status) await this.usage.noteExecutionStatus(conversation.sandboxId, conversation._id, set.execution_status);
      await this.announce(userId, conversation._id, conversation.execution_status ?? null, statuses);
    }
    if (spend || conversation.budget_stop) {
      await this.budgets.report(conversation._id, spend, set.execution_status ?? conversation.execution_status ?? null);
    }
  }

  /** One lifecycle event per change of execution status, in the order reported. */
  private async announce(userId: string, conversationId: string, before: string | null, statuses: string[]): Promise<void> {
    let last = before;
    for (const status of statuses) {
      if (status === last) continue;
      await this.lifecycle?.conversationChanged('conversation.execution_status_changed', userId, conversationId, status);
      last = status;
    }
  }

  /** What a valid, unexpired access token says (its user and provider); 401 otherwise. */
  accessClaims(accessToken: string | undefined): AccessClaims {
    const claims = accessToken ? this.accessTokens.verify(accessToken) : null;
    if (!claims) throw unauthorized();
    return claims;
  }

  /** The user's current token for the provider named in a valid access token's claims. */
  async gitToken(claims: AccessClaims): Promise<string> {
    const token = (await this.gitProviders.resolve(claims.sub))[claims.provider as ProviderType]?.token;
    if (!token) throw new AppError('NOT_FOUND', 'No such provider', { reason: 'provider_token_not_found' });
    return token;
  }
}

/** Tags an agent sets on its conversation hold at most this many entries (the SDK sets no bound). */
const MAX_REPORTED_TAGS = 50;

/**
 * The agent's tags as its agent server reports them (they replace the previous ones; the SDK's
 * rule: keys lowercase alphanumeric, values at most 256 characters), with the launch profile's
 * tags the service set kept as they are (an agent does not rewrite where it came from); null for
 * anything else.
 */
function withReportedTags(value: unknown, stored: Record<string, string> | null | undefined): Record<string, string> | null {
  if (!value || typeof value !== 'object' || Array.isArray(value)) return null;
  const entries = Object.entries(value as Record<string, unknown>);
  const valid =
    entries.length <= MAX_REPORTED_TAGS &&
    entries.every(([k, v]) => /^[a-z0-9]{1,64}$/.test(k) && typeof v === 'string' && v.length <= 256);
  if (!valid) return null;
  const launch = Object.values(PROFILE_TAGS).flatMap((key) => (stored?.[key] !== undefined ? [[key, stored[key]] as const] : []));
  return { ...(Object.fromEntries(entries) as Record<string, string>), ...Object.fromEntries(launch) };
}

function normaliseId(id: unknown): string | null {
  return typeof id === 'string' && id ? id.replace(/-/g, '').toLowerCase() : null;
}
