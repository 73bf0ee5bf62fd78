// V1 app conversations and their start tasks (API.md B.7): creating a task, reading tasks
// and conversations with live sandbox and execution status. The work itself is done by
// StartTaskRunner.
import crypto from 'node:crypto';
import type { Models } from '../../models/index.js';
import type {
  AppConversation,
  AppConversationStartRequest,
  AppConversationStartTask,
  ConversationFilters,
  StartTaskFilters,
} from '../../contract/app-conversations.schema.js';
import { pageOf, pageOffset } from '../../contract/common.schema.js';
import { AgentServerClient } from '../agent-server/client.js';
import { AppError } from '../errors.js';
import type { Logger } from '../logger.js';
import type { SandboxesService } from './sandboxes.service.js';
import type { StartTaskRunner, StoredTask } from './start-task-runner.js';
import { mcpOverrideContext, TERMINAL } from './start-task-runner.js';
import type { McpConfigInput } from '../../contract/mcp.schema.js';
import type { SecretBox } from '../crypto.js';

export interface StoredConversation {
  _id: string;
  userId: string;
  sandboxId: string;
  title: string | null;
  selected_repository: string | null;
  selected_branch: string | null;
  git_provider: string | null;
  trigger: string | null;
  llm_model: string | null;
  pr_number: number[];
  parent_conversation_id: string | null;
  metrics: Record<string, unknown> | null;
  execution_status: string | null;
  createdAt: Date;
  updatedAt: Date;
}

const hexId = () => crypto.randomBytes(16).toString('hex');

export class AppConversationsService {
  constructor(
    private readonly models: Models,
    private readonly box: SecretBox,
    private readonly sandboxes: SandboxesService,
    private readonly runner: StartTaskRunner,
    private readonly log: Logger,
  ) {}

  /** Persists a start task (WORKING) and returns it at once; a runner picks it up. */
  async start(
    userId: string,
    input: AppConversationStartRequest,
    mcpOverride: McpConfigInput | null = null,
  ): Promise<AppConversationStartTask> {
    const request = { ...input };
    if (request.parent_conversation_id) {
      // Sub-conversation: inherit what the request leaves out from the parent (reference).
      const parent = await this.models.AppConversation.findOne({ _id: request.parent_conversation_id, userId }).lean<StoredConversation>();
      if (!parent) throw new AppError('NOT_FOUND', `Parent conversation not found: ${request.parent_conversation_id}`);
      request.sandbox_id ??= parent.sandboxId;
      request.selected_repository ??= parent.selected_repository;
      request.selected_branch ??= parent.selected_branch;
      request.git_provider ??= parent.git_provider as AppConversationStartRequest['git_provider'];
      request.llm_model ??= parent.llm_model;
    }
    const now = new Date();
    const taskId = hexId();
    const task: StoredTask = {
      _id: taskId,
      userId,
      status: 'WORKING',
      detail: null,
      app_conversation_id: null,
      sandbox_id: null,
      agent_server_url: null,
      request,
      conversationId: hexId(),
      mcpConfig: mcpOverride ? this.box.encrypt(JSON.stringify(mcpOverride), mcpOverrideContext(taskId)) : null,
      attempts: 0,
      leaseOwner: null,
      leaseExpiresAt: null,
      createdAt: now,
      updatedAt: now,
    };
    await this.models.StartTask.create(task);
    this.runner.kick();
    return toTask(task);
  }

  async conversationIdOfTask(userId: string, taskId: string): Promise<string | null> {
    const task = await this.models.StartTask.findOne({ _id: taskId, userId }, { conversationId: 1 }).lean<StoredTask>();
    return task?.conversationId ?? null;
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
    const query: Record<string, unknown> = { userId };
    if (f.selected_repository) query.selected_repository = f.selected_repository;
    if (f.trigger) query.trigger = f.trigger;
    if (!f.include_sub_conversations) query.parent_conversation_id = null;
    const { items, total } = await this.page(userId, query, f.offset, f.limit);
    return { items, nextOffset: f.offset + f.limit < total ? f.offset + f.limit : null };
  }

  /** One page of conversations, newest first, with live status (sub_conversation_ids left empty). */
  private async page(userId: string, query: Record<string, unknown>, offset: number, limit: number) {
    const [records, total] = await Promise.all([
      this.models.AppConversation.find(query).sort({ createdAt: -1, _id: 1 }).skip(offset).limit(limit).lean<StoredConversation[]>(),
      this.models.AppConversation.countDocuments(query),
    ]);
    return { items: await this.withLiveStatus(userId, records, false), total };
  }

  async getTask(userId: string, taskId: string): Promise<AppConversationStartTask | null> {
    const task = await this.models.StartTask.findOne({ _id: taskId, userId }).lean<StoredTask>();
    return task ? toTask(task) : null;
  }

  async batchGetTasks(userId: string, ids: string[]): Promise<(AppConversationStartTask | null)[]> {
    const tasks = await this.models.StartTask.find({ userId, _id: { $in: ids } }).lean<StoredTask[]>();
    const byId = new Map(tasks.map((t) => [t._id, t]));
    return ids.map((id) => (byId.has(id) ? toTask(byId.get(id)!) : null));
  }

  async searchTasks(userId: string, filters: StartTaskFilters & { sort_order: string; page_id?: string | null; limit: number }) {
    const query = taskQuery(userId, filters);
    const sort = {
      CREATED_AT: { createdAt: 1 },
      CREATED_AT_DESC: { createdAt: -1 },
      UPDATED_AT: { updatedAt: 1 },
      UPDATED_AT_DESC: { updatedAt: -1 },
    }[filters.sort_order] as Record<string, 1 | -1>;
    const offset = pageOffset(filters.page_id);
    const [tasks, total] = await Promise.all([
      this.models.StartTask.find(query)
        .sort({ ...sort, _id: 1 })
        .skip(offset)
        .limit(filters.limit)
        .lean<StoredTask[]>(),
      this.models.StartTask.countDocuments(query),
    ]);
    return pageOf(tasks.map(toTask), offset, filters.limit, total);
  }

  countTasks(userId: string, filters: StartTaskFilters): Promise<number> {
    return this.models.StartTask.countDocuments(taskQuery(userId, filters));
  }

  /** Snapshots of a task until it is READY or ERROR (stream-start and the tRPC subscription). */
  async *watchTask(userId: string, taskId: string, signal?: AbortSignal): AsyncGenerator<AppConversationStartTask> {
    let last = '';
    for (;;) {
      const task = await this.getTask(userId, taskId);
      if (!task) throw new AppError('NOT_FOUND', 'Start task not found', { reason: 'start_task_not_found' });
      const snapshot = JSON.stringify(task);
      if (snapshot !== last) {
        last = snapshot;
        yield task;
      }
      if (TERMINAL.includes(task.status) || signal?.aborted) return;
      // Woken early by this process's runner; the timeout covers work done by other replicas.
      await new Promise<void>((resolve) => {
        const wake = (id: string) => {
          if (id === taskId) done();
        };
        const timer = setTimeout(() => done(), 500);
        const done = () => {
          clearTimeout(timer);
          this.runner.updates.off('update', wake);
          resolve();
        };
        this.runner.updates.on('update', wake);
      });
    }
  }

  async search(
    userId: string,
    filters: ConversationFilters & { page_id?: string | null; limit: number; include_sub_conversations: boolean },
  ) {
    const query = conversationQuery(userId, filters);
    if (!filters.include_sub_conversations) query.parent_conversation_id = null;
    const offset = pageOffset(filters.page_id);
    // Reference: search results leave sub_conversation_ids empty.
    const { items, total } = await this.page(userId, query, offset, filters.limit);
    return pageOf(items, offset, filters.limit, total);
  }

  count(userId: string, filters: ConversationFilters): Promise<number> {
    const query = conversationQuery(userId, filters);
    query.parent_conversation_id = null;
    return this.models.AppConversation.countDocuments(query);
  }

  async batchGet(userId: string, ids: string[]): Promise<(AppConversation | null)[]> {
    const records = await this.models.AppConversation.find({ userId, _id: { $in: ids } }).lean<StoredConversation[]>();
    const items = await this.withLiveStatus(userId, records, true);
    const byId = new Map(items.map((c) => [c.id, c]));
    return ids.map((id) => byId.get(id) ?? null);
  }

  async get(userId: string, id: string): Promise<AppConversation | null> {
    return (await this.batchGet(userId, [id]))[0] ?? null;
  }

  /** Renames a conversation here and, best effort, on the agent server. */
  async setTitle(userId: string, id: string, title: string): Promise<boolean> {
    const result = await this.models.AppConversation.updateOne({ _id: id, userId }, { $set: { title, updatedAt: new Date() } });
    if (result.matchedCount === 0) return false;
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
    const record = await this.models.AppConversation.findOne({ _id: id, userId }).lean<StoredConversation>();
    if (!record) {
      // A conversation still starting exists only as its task.
      const removed = await this.models.StartTask.deleteMany({ userId, conversationId: id });
      return removed.deletedCount > 0;
    }
    const conversation = (await this.withLiveStatus(userId, [record], false))[0]!;
    if (conversation.conversation_url && conversation.session_api_key) {
      await new AgentServerClient(agentBase(conversation.conversation_url), conversation.session_api_key, 5_000)
        .deleteConversation(id)
        .catch(() => {});
    }
    await this.models.AppConversation.deleteOne({ _id: id, userId });
    await this.models.StartTask.deleteMany({ userId, conversationId: id });
    const others = await this.models.AppConversation.countDocuments({ userId, sandboxId: record.sandboxId });
    if (others === 0) {
      await this.sandboxes.delete(userId, record.sandboxId).catch((error: unknown) => {
        if (!(error instanceof AppError && error.code === 'NOT_FOUND'))
          this.log.warn({ err: error, sandboxId: record.sandboxId }, 'deleting the sandbox failed');
      });
    }
    return true;
  }

  /** Start task that will create (or created) this conversation id. */
  async taskForConversation(userId: string, conversationId: string): Promise<AppConversationStartTask | null> {
    const task = await this.models.StartTask.findOne({ userId, conversationId }).sort({ createdAt: -1 }).lean<StoredTask>();
    return task ? toTask(task) : null;
  }

  private async withLiveStatus(userId: string, records: StoredConversation[], withSubConversations: boolean): Promise<AppConversation[]> {
    const states = await this.sandboxes.statuses(
      userId,
      records.map((r) => r.sandboxId),
    );
    const subs = withSubConversations
      ? await this.models.AppConversation.find(
          { userId, parent_conversation_id: { $in: records.map((r) => r._id) } },
          { _id: 1, parent_conversation_id: 1 },
        ).lean<StoredConversation[]>()
      : [];
    // One agent-server call per running sandbox for the live execution status.
    const execution = new Map<string, string | null>();
    const bySandbox = new Map<string, StoredConversation[]>();
    for (const r of records) bySandbox.set(r.sandboxId, [...(bySandbox.get(r.sandboxId) ?? []), r]);
    await Promise.all(
      [...bySandbox].map(async ([sandboxId, conversations]) => {
        const state = states.get(sandboxId);
        const url = state?.internalUrl;
        if (state?.status !== 'RUNNING' || !url || !state.sessionKey) return;
        try {
          const infos = await new AgentServerClient(url, state.sessionKey, 3_000).getConversations(conversations.map((c) => c._id));
          infos.forEach((info, i) => execution.set(conversations[i]!._id, info?.execution_status ?? null));
        } catch {
          // Unreachable agent server: execution_status stays null (reference).
        }
      }),
    );
    return records.map((r) => {
      const state = states.get(r.sandboxId);
      const publicUrl = state?.status === 'RUNNING' ? state.exposedUrls?.find((u) => u.name === 'AGENT_SERVER')?.url : undefined;
      return {
        id: r._id,
        created_by_user_id: r.userId,
        sandbox_id: r.sandboxId,
        selected_repository: r.selected_repository ?? null,
        selected_branch: r.selected_branch ?? null,
        git_provider: r.git_provider ?? null,
        title: r.title ?? null,
        trigger: r.trigger ?? null,
        llm_model: r.llm_model ?? null,
        pr_number: r.pr_number ?? [],
        metrics: r.metrics ?? null,
        parent_conversation_id: r.parent_conversation_id ?? null,
        sub_conversation_ids: subs.filter((s) => s.parent_conversation_id === r._id).map((s) => s._id),
        created_at: r.createdAt.toISOString(),
        updated_at: r.updatedAt.toISOString(),
        sandbox_status: state?.status ?? 'MISSING',
        execution_status: execution.get(r._id) ?? null,
        conversation_url: publicUrl ? `${publicUrl}/api/conversations/${r._id}` : null,
        session_api_key: state?.sessionKey ?? null,
      };
    });
  }
}

export function toTask(task: StoredTask): AppConversationStartTask {
  return {
    id: task._id,
    created_by_user_id: task.userId,
    status: task.status,
    detail: task.detail ?? null,
    app_conversation_id: task.app_conversation_id ?? null,
    sandbox_id: task.sandbox_id ?? null,
    agent_server_url: task.agent_server_url ?? null,
    request: task.request as unknown as Record<string, unknown>,
    created_at: task.createdAt.toISOString(),
    updated_at: task.updatedAt.toISOString(),
  };
}

/** "<agent url>/api/conversations/<id>" → "<agent url>". */
function agentBase(conversationUrl: string): string {
  return conversationUrl.replace(/\/api\/conversations\/[^/]+$/, '');
}

function dateRange(gte?: string, lt?: string) {
  if (!gte && !lt) return undefined;
  return { ...(gte ? { $gte: new Date(gte) } : {}), ...(lt ? { $lt: new Date(lt) } : {}) };
}

function conversationQuery(userId: string, f: ConversationFilters): Record<string, unknown> {
  const query: Record<string, unknown> = { userId };
  if (f.title__contains) query.title = { $regex: escapeRegex(f.title__contains), $options: 'i' };
  const created = dateRange(f.created_at__gte, f.created_at__lt);
  if (created) query.createdAt = created;
  const updated = dateRange(f.updated_at__gte, f.updated_at__lt);
  if (updated) query.updatedAt = updated;
  return query;
}

function taskQuery(userId: string, f: StartTaskFilters): Record<string, unknown> {
  const query: Record<string, unknown> = { userId };
  if (f.conversation_id__eq) query.app_conversation_id = f.conversation_id__eq.replace(/-/g, '').toLowerCase();
  if (f.created_at__gte) query.createdAt = { $gte: new Date(f.created_at__gte) };
  return query;
}

function escapeRegex(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
