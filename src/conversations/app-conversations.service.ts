// V1 app conversations and their start tasks (docs/api.md): creating a task, reading tasks
// and conversations with live sandbox and execution status. The work itself is done by the
// start workflow (start-workflow.ts) through the lease queue.
import crypto from 'node:crypto';
import {
  isLaterSnapshot,
  type AppConversation,
  type AppConversationStartRequest,
  type AppConversationStartTask,
  type ConversationFilters,
  type ConversationSortOrder,
  type StartTaskFilters,
} from '../../contract/app-conversations.schema.js';
import { hexId, pageFromExtra, pageOffset, SECRET_MASK, UUID_PATTERN } from '../../contract/common.schema.js';
import type { McpConfigInput } from '../../contract/mcp.schema.js';
import type { SandboxGrouping } from './start/sandbox-grouping.js';
import type { DailyStarts } from './budgets/daily-starts.js';
import type { ClientGeneration } from '../../contract/sandbox-specs.schema.js';
import { AgentServerClient } from '../agent-server/client.js';
import { AppError, isDuplicateKeyError } from '../errors.js';
import type { Logger } from '../logger.js';
import type { OrgMembership } from '../organizations/index.js';
import type { SandboxesService } from '../sandbox/index.js';
import type { BudgetsService } from './budgets/budgets.service.js';
import type { ConversationLifecycleEvents } from './conversation-lifecycle-events.js';
import { LiveStatus } from './live-status.js';
import { NO_AGENT_PROFILES, profileTags, type AgentProfiles } from './profiles.js';
import { inheritFromParent, refused, withSuggestedTask } from './start/start-request.js';
import { TERMINAL, type ConversationSearch, type ConversationStore, type StartTask, type TaskSortOrder } from './records/store.js';
import { toTask } from './records/queries.js';

export { toTask } from './records/queries.js';

/** Ids are 32 lowercase hex digits here; clients may send UUIDs dashed (the reference accepts both). */
const idKey = (id: string) => (UUID_PATTERN.test(id) ? hexId(id) : id);
/** How long a new task waits for its creation event before any worker may claim it anyway (a crash in between). */
const CREATION_EVENT_HOLD_MS = 5_000;
const randomHex = () => crypto.randomBytes(16).toString('hex');
const masked = (secrets: Record<string, string>) => Object.fromEntries(Object.keys(secrets).map((name) => [name, SECRET_MASK]));
const idTaken = (id: string) =>
  new AppError('CONFLICT', `Conversation id ${id} is taken: choose another or leave it out`, { reason: 'conversation_exists' });

export class AppConversationsService {
  private readonly live: LiveStatus;

  constructor(
    private readonly store: ConversationStore,
    private readonly sandboxes: SandboxesService,
    /** Tells the start-task queue that work was added. */
    private readonly kick: () => void,
    private readonly log: Logger,
    budgets: BudgetsService,
    /** Removes what other services keep about a deleted conversation (its events, feedback). */
    private readonly removeConversationData: (userId: string, conversationId: string) => Promise<void> = async () => {},
    private readonly profiles: AgentProfiles = NO_AGENT_PROFILES,
    /** Creations and deletions, for the lifecycle webhooks. */
    private readonly events: Pick<ConversationLifecycleEvents, 'taskChanged' | 'deleted' | 'listensToTasks'> | null = null,
    /** Where a start without a sandbox goes when its owner groups conversations (null: always a new sandbox). */
    private readonly grouping: SandboxGrouping | null = null,
    /** Starts per user per day (DAILY_CONVERSATION_LIMIT); null: not counted. */
    private readonly dailyStarts: DailyStarts | null = null,
  ) {
    this.live = new LiveStatus(store, sandboxes, budgets);
  }

  /** Where a start goes: a running sandbox it joins (grouping: no new slot, as a start naming it), or a slot reserved for its own. */
  private async placement(userId: string, sandboxId: string | null, specId: string | null) {
    const grouped = sandboxId ? null : ((await this.grouping?.pick(userId, specId)) ?? null);
    const reservedSandboxId = grouped ? null : await this.sandboxes.slots.reserve(userId, sandboxId);
    return { grouped, reservedSandboxId };
  }

  /**
   * Persists a start task (WORKING) and returns it at once; the queue picks it up. What the
   * start cannot honour is refused here (422, 409 for a taken conversation id); with
   * SANDBOX_AT_LIMIT=refuse a start that needs a running slot claims it here (429 past the limit).
   */
  async start(
    userId: string,
    input: AppConversationStartRequest,
    mcpOverride: McpConfigInput | null = null,
    /** Who starts it: a new sandbox runs the agent server that generation's clients read. */
    generation: ClientGeneration = '2026',
    /** The team organisation it starts in (its LLM defaults apply); null: the personal one. */
    orgId: string | null = null,
  ): Promise<AppConversationStartTask> {
    const request = withSuggestedTask({ ...input });
    if (request.parent_conversation_id) {
      const parent = await this.store.conversation(userId, request.parent_conversation_id);
      const message = `Parent conversation not found: ${request.parent_conversation_id}`;
      if (!parent) throw new AppError('NOT_FOUND', message, { reason: 'parent_conversation_not_found' });
      inheritFromParent(request, parent);
    }
    const conversationId = request.conversation_id ? hexId(request.conversation_id) : randomHex();
    if (request.conversation_id && (await this.store.conversationById(conversationId))) throw idTaken(conversationId);
    const profile = await this.profiles.resolve(userId, request.agent_profile_id ?? null);
    if (request.agent_profile_id && !profile) throw refused('agent_profile_id', `Agent profile not found: ${request.agent_profile_id}`);
    // The secrets' values are sealed with the task; the request keeps their names only.
    const { secrets, ...rest } = request;
    const stored = { ...rest, agent_profile_id: profile?.id ?? null, ...(secrets ? { secrets: masked(secrets) } : {}) };
    const tags = profileTags(profile);
    const giveBackStart = await this.dailyStarts?.take(userId);
    const sandboxSpecId = this.sandboxes.specs.specIdFor(generation);
    const { grouped, reservedSandboxId } = await this.placement(userId, request.sandbox_id ?? null, sandboxSpecId).catch(
      async (error: unknown) => {
        await giveBackStart?.(); // a start refused here (429 at the sandbox limit) is not one of the day's
        throw error;
      },
    );
    // When anyone listens, its WORKING event goes out before any worker (another replica's too) can tell a later status.
    const announced = (await this.events?.listensToTasks(userId)) ?? false;
    const now = new Date();
    let task: StartTask;
    try {
      task = await this.store.createTask(
        {
          _id: randomHex(),
          userId,
          status: 'WORKING',
          request: stored,
          conversationId,
          createdAt: now,
          updatedAt: now,
          reservedSandboxId,
          sandboxSpecId,
          ...(grouped ? { sandbox_id: grouped, sandbox_source: 'existing' as const } : {}),
          orgId,
        },
        { mcpConfig: mcpOverride, requestSecrets: secrets ?? null },
        { tags },
        announced ? CREATION_EVENT_HOLD_MS : 0,
      );
    } catch (error) {
      if (reservedSandboxId) await this.sandboxes.slots.dropReservation(userId, reservedSandboxId);
      await giveBackStart?.();
      throw isDuplicateKeyError(error) ? idTaken(conversationId) : error;
    }
    if (announced && this.events) {
      await this.events.taskChanged(task);
      await this.store.releaseTask(task._id);
    }
    this.kick();
    return toTask(task);
  }

  async conversationIdOfTask(userId: string, taskId: string): Promise<string | null> {
    return (await this.store.task(userId, taskId))?.conversationId ?? null;
  }

  /** The conversations started in an organisation, everyone's (its admins' view: docs/organizations.md). */
  async inOrganization(org: OrgMembership, pageId: string | null | undefined, limit: number) {
    const offset = pageOffset(pageId);
    const { page, next_page_id } = pageFromExtra(await this.store.inOrganization(org, offset, limit), offset, limit);
    const items = page.map((r) => ({
      id: r._id,
      user_id: r.userId,
      title: r.title ?? null,
      selected_repository: r.selected_repository ?? null,
      llm_model: r.llm_model ?? null,
      execution_status: r.execution_status ?? null,
      accumulated_cost: r.accumulated_cost ?? 0,
      created_at: r.createdAt.toISOString(),
      updated_at: r.updatedAt.toISOString(),
    }));
    return { items, next_page_id };
  }

  /** The V0 list: newest first, with the V0 filters. */
  async searchFiltered(
    userId: string,
    f: {
      offset: number;
      limit: number;
      selected_repository?: string | undefined;
      trigger?: string | undefined;
      include_sub_conversations: boolean;
    },
  ): Promise<{ items: AppConversation[]; nextOffset: number | null }> {
    const search = { selected_repository: f.selected_repository, trigger: f.trigger, topLevelOnly: !f.include_sub_conversations };
    const { items, next_page_id } = await this.page(userId, search, f.offset, f.limit);
    return { items, nextOffset: next_page_id === null ? null : f.offset + f.limit };
  }

  /** One page of conversations (newest first by default), with live status (reference: sub_conversation_ids left empty). */
  private async page(userId: string, search: ConversationSearch, offset: number, limit: number, order?: ConversationSortOrder) {
    const records = await this.store.searchConversations(userId, search, offset, limit, order);
    const { page, next_page_id } = pageFromExtra(records, offset, limit);
    return { items: await this.live.of(userId, page, false), next_page_id };
  }

  async getTask(userId: string, taskId: string): Promise<AppConversationStartTask | null> {
    const task = await this.store.task(userId, taskId);
    return task ? toTask(task) : null;
  }

  async batchGetTasks(userId: string, ids: string[]): Promise<(AppConversationStartTask | null)[]> {
    const keys = ids.map(idKey);
    const byId = new Map((await this.store.tasksByIds(userId, keys)).map((t) => [t._id, t]));
    return keys.map((id) => (byId.has(id) ? toTask(byId.get(id)!) : null));
  }

  async searchTasks(userId: string, filters: StartTaskFilters & { sort_order: TaskSortOrder; page_id?: string | null; limit: number }) {
    const offset = pageOffset(filters.page_id);
    const { page, next_page_id } = pageFromExtra(
      await this.store.searchTasks(userId, filters, filters.sort_order, offset, filters.limit),
      offset,
      filters.limit,
    );
    return { items: page.map(toTask), next_page_id };
  }

  countTasks(userId: string, filters: StartTaskFilters): Promise<number> {
    return this.store.countTasks(userId, filters);
  }

  /**
   * Snapshots of a task until READY or ERROR (stream-start, the tRPC subscription): every step this process
   * records, however fast they follow each other (they arrive with the change); other replicas' every 500 ms.
   */
  async *watchTask(userId: string, taskId: string, signal?: AbortSignal): AsyncGenerator<AppConversationStartTask> {
    const changes: StartTask[] = [];
    let wake: (() => void) | undefined;
    const unsubscribe = this.store.onTaskChange((id, task) => {
      if (id !== taskId || task.userId !== userId) return;
      changes.push(task);
      wake?.();
    });
    try {
      let last: AppConversationStartTask | undefined;
      let latest = await this.store.task(userId, taskId);
      for (;;) {
        if (!latest) throw new AppError('NOT_FOUND', 'Start task not found', { reason: 'start_task_not_found' });
        for (const task of changes.length > 0 ? changes.splice(0) : [latest]) {
          const snapshot = toTask(task);
          // Never back in time (a change queued before the first read), never the same twice.
          if (last && !isLaterSnapshot(snapshot, last)) continue;
          last = snapshot;
          yield snapshot;
          if (TERMINAL.includes(snapshot.status)) return;
        }
        if (signal?.aborted) return;
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, 500);
          wake = () => {
            clearTimeout(timer);
            resolve();
          };
          if (changes.length > 0) wake();
        });
        wake = undefined;
        if (changes.length === 0) latest = await this.store.task(userId, taskId);
      }
    } finally {
      unsubscribe();
    }
  }

  /** The conversation each time it changes (live-status.ts), on any replica. */
  watch(userId: string, id: string, signal?: AbortSignal): AsyncGenerator<AppConversation> {
    return this.live.watch(userId, idKey(id), signal);
  }

  async search(
    userId: string,
    filters: ConversationFilters & {
      page_id?: string | null;
      limit: number;
      include_sub_conversations: boolean;
      sort_order: ConversationSortOrder;
    },
  ) {
    const offset = pageOffset(filters.page_id);
    const search = { ...filters, topLevelOnly: !filters.include_sub_conversations };
    return this.page(userId, search, offset, filters.limit, filters.sort_order);
  }

  count(userId: string, filters: ConversationFilters): Promise<number> {
    return this.store.countConversations(userId, { ...filters, topLevelOnly: true });
  }

  async batchGet(userId: string, ids: string[]): Promise<(AppConversation | null)[]> {
    const keys = ids.map(idKey);
    const items = await this.live.of(userId, await this.store.conversationsByIds(userId, keys), true);
    const byId = new Map(items.map((c) => [c.id, c]));
    return keys.map((id) => byId.get(id) ?? null);
  }

  async get(userId: string, id: string): Promise<AppConversation | null> {
    return (await this.batchGet(userId, [id]))[0] ?? null;
  }

  /** Renames a conversation here and, best effort, on the agent server. */
  async setTitle(userId: string, id: string, title: string): Promise<boolean> {
    if (!(await this.store.updateConversation(userId, id, { title, titleByUser: true }))) return false;
    const conversation = await this.get(userId, id);
    if (conversation?.conversation_url && conversation.session_api_key) {
      await new AgentServerClient(agentBase(conversation.conversation_url), conversation.session_api_key, 5_000)
        .setTitle(id, title)
        .catch(() => {});
    }
    return true;
  }

  /** Deletes the conversation, its start tasks and its sandbox; false when unknown. */
  async delete(userId: string, id: string): Promise<boolean> {
    const record = await this.store.conversation(userId, id);
    // A conversation still starting exists only as its task.
    if (!record) return (await this.store.deleteTasksOf(userId, id)) > 0;
    const conversation = (await this.live.of(userId, [record], false))[0]!;
    if (conversation.conversation_url && conversation.session_api_key) {
      await new AgentServerClient(agentBase(conversation.conversation_url), conversation.session_api_key, 5_000)
        .deleteConversation(id)
        .catch(() => {});
    }
    // A start still under way may know its sandbox before the record does.
    const sandboxId = record.sandboxId ?? (await this.store.latestTaskOf(userId, id))?.sandbox_id ?? null;
    // Tasks first: cut off between the two writes, the conversation is still listed and a
    // second delete finishes the job (the other order would leave a task that reads STARTING).
    await this.store.deleteTasksOf(userId, id);
    await this.store.deleteConversation(userId, id);
    await this.events?.deleted(userId, conversation);
    await this.removeConversationData(userId, id);
    if (sandboxId && (await this.store.countConversationsInSandbox(userId, sandboxId)) === 0) {
      await this.sandboxes.delete(userId, sandboxId).catch((error: unknown) => {
        if (!(error instanceof AppError && error.code === 'NOT_FOUND'))
          this.log.warn({ err: error, sandboxId }, 'deleting the sandbox failed');
      });
    }
    return true;
  }

  /** Start task that will create (or created) this conversation id. */
  async taskForConversation(userId: string, conversationId: string): Promise<AppConversationStartTask | null> {
    const task = await this.store.latestTaskOf(userId, conversationId);
    return task ? toTask(task) : null;
  }
}

/** "<agent url>/api/conversations/<id>" → "<agent url>". */
function agentBase(conversationUrl: string): string {
  return conversationUrl.replace(/\/api\/conversations\/[^/]+$/, '');
}
