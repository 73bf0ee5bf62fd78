// The queries and sorts of the conversation store's searches on MongoDB (their filters are
// defined once, in search-filters.ts), and the fields of a new conversation record (no
// database access here; store.ts runs them).
import type { ConversationSortOrder, StartTaskFilters, StartTaskStatus } from '../../../contract/app-conversations.schema.js';
import type { McpConfigInput } from '../../../contract/mcp.schema.js';
import type { AppConversationRecord } from '../../../models/index.js';
import type { AppConversationStartRequest, AppConversationStartTask } from '../../../contract/app-conversations.schema.js';
import type { StartTaskRecord } from '../../../models/index.js';
import { CONVERSATION_FILTERS, filterQuery, TASK_FILTERS, type ConversationSearch } from './search-filters.js';

/** A start task as the store hands it out: the record, its status and request typed. */
export type StartTask = Omit<StartTaskRecord, 'status' | 'request'> & { status: StartTaskStatus; request: AppConversationStartRequest };
export type NewStartTask = Pick<StartTask, '_id' | 'userId' | 'status' | 'request' | 'conversationId' | 'createdAt' | 'updatedAt'> &
  // sandbox_id at creation: the running sandbox a grouped start joins (conversations/start/sandbox-grouping.ts).
  Partial<Pick<StartTask, 'reservedSandboxId' | 'sandboxSpecId' | 'orgId' | 'sandbox_id' | 'sandbox_source'>>;

/** What an owner (PATCH) or its agent server (webhooks) changes of a conversation record. */
export type ConversationUpdate = Partial<
  Pick<
    AppConversationRecord,
    | 'execution_status'
    | 'title'
    | 'titleByUser'
    | 'metrics'
    | 'public'
    | 'selected_repository'
    | 'selected_branch'
    | 'git_provider'
    | 'llm_model'
    | 'tags'
  >
>;

/**
 * What a conversation without a title is called in every view, as the reference names a new
 * one ("Conversation" and its id's first five hex digits): a client's list never shows an empty
 * entry. The record keeps null, so the first message's title still fills it.
 */
export const untitledName = (id: string) => `Conversation ${id.slice(0, 5)}`;

/** The fields every view of a conversation takes from its record as stored (the API's and the shared one). */
export function storedConversationFields(r: AppConversationRecord) {
  return {
    id: r._id,
    created_by_user_id: r.userId,
    sandbox_id: r.sandboxId ?? null,
    selected_repository: r.selected_repository ?? null,
    selected_branch: r.selected_branch ?? null,
    git_provider: r.git_provider ?? null,
    title: r.title ?? untitledName(r._id),
  };
}

/** A title the agent reported (it may predate a rename) never replaces the user's; one from the first message only fills none. */
export function reportedTitleCondition(title: string, derived: boolean): Record<string, unknown> {
  return derived ? { title: null } : { titleByUser: { $ne: true }, title: { $ne: title } };
}

export type { ConversationSearch } from './search-filters.js';

// Ties are broken by id in the same direction, so one index serves each order both ways.
export const TASK_SORT = {
  CREATED_AT: { createdAt: 1, _id: 1 },
  CREATED_AT_DESC: { createdAt: -1, _id: -1 },
  UPDATED_AT: { updatedAt: 1, _id: 1 },
  UPDATED_AT_DESC: { updatedAt: -1, _id: -1 },
} as const;
export type TaskSortOrder = keyof typeof TASK_SORT;

/** The V1 search orders; each is served by an index on {userId, <field>, _id} (either direction). */
export const CONVERSATION_SORT: Record<ConversationSortOrder, Record<string, 1 | -1>> = {
  ...TASK_SORT,
  TITLE: { title: 1, _id: 1 },
  TITLE_DESC: { title: -1, _id: -1 },
};

export function conversationQuery(userId: string, s: ConversationSearch): Record<string, unknown> {
  return { userId, ...filterQuery(CONVERSATION_FILTERS, s) };
}

export function taskQuery(userId: string, f: StartTaskFilters): Record<string, unknown> {
  return { userId, ...filterQuery(TASK_FILTERS, f) };
}

/** What a conversation record takes from its start task's request. */
export function conversationFields(task: Pick<StartTask, 'request'>) {
  const request = task.request;
  return {
    selected_repository: request.selected_repository ?? null,
    selected_branch: request.selected_branch ?? null,
    git_provider: request.git_provider ?? null,
    trigger: request.trigger ?? null,
    pr_number: request.pr_number ?? [],
    parent_conversation_id: request.parent_conversation_id ?? null,
    public: request.public ?? null,
  };
}

/** A new conversation record for a task: its request's fields, no title or status yet, and `fields`. */
export function newConversation(
  task: Pick<StartTask, 'request' | 'conversationId' | 'userId' | 'createdAt'> & { orgId?: string | null },
  fields: Record<string, unknown>,
) {
  return {
    ...conversationFields(task),
    _id: task.conversationId,
    userId: task.userId,
    orgId: task.orgId ?? null,
    createdAt: task.createdAt,
    title: null,
    metrics: null,
    execution_status: null,
    // The start's own budget (docs/budgets.md); null follows the settings.
    max_budget_per_task: task.request.max_budget_per_task ?? null,
    ...fields,
  };
}

/** A new start task, WORKING, unclaimed; mcpConfig is the encrypted per-conversation MCP override. */
export function newStartTask(task: NewStartTask, sealed: Pick<StartTask, 'mcpConfig' | 'requestSecrets'>): StartTask {
  return {
    reservedSandboxId: null,
    sandboxSpecId: null,
    orgId: null,
    ...task,
    ...sealed,
    detail: null,
    app_conversation_id: null,
    sandbox_id: task.sandbox_id ?? null,
    agent_server_url: null,
    phase_times: { [task.status]: task.createdAt },
    sandbox_source: task.sandbox_source ?? null,
    attempts: 0,
    leaseOwner: null,
    leaseExpiresAt: null,
  };
}

/** The fields of a conversation an agent server reports first (created ready, for the sandbox's owner). */
export function reportedConversationDefaults(set: Partial<Pick<AppConversationRecord, 'title' | 'metrics'>>, llmModel: string | null) {
  return {
    createdAt: new Date(),
    startState: 'ready',
    llm_model: llmModel,
    pr_number: [],
    ...(set.title ? {} : { title: null }),
    ...(set.metrics ? {} : { metrics: null }),
  };
}

/** A start task in these statuses is finished: it leaves the claim queue. */
export const TERMINAL: StartTaskStatus[] = ['READY', 'ERROR'];

/** A task's fields stored encrypted (they hold credentials), and what they hold. */
export interface Sealed {
  mcpConfig: McpConfigInput | null;
  requestSecrets: Record<string, string> | null;
}
export const SEALED = ['mcpConfig', 'requestSecrets'] as const;
/** The encryption context of a sealed field (the MCP override's predates the others' naming). */
export const sealContext = (taskId: string, field: keyof Sealed) =>
  field === 'mcpConfig' ? `task:${taskId}:mcp_config` : `task:${taskId}:request_secrets`;

/** The store's searches: by index (searches.ts) or through the record lists (list-searches.ts). */
export interface Searches {
  /** Up to `limit` conversations from `offset`, in `order`. */
  conversations(
    userId: string,
    search: ConversationSearch,
    offset: number,
    limit: number,
    order: ConversationSortOrder,
  ): Promise<AppConversationRecord[]>;
  countConversations(userId: string, search: ConversationSearch): Promise<number>;
  /** The conversations whose parent is one of `parentIds`. */
  subConversationsOf(userId: string, parentIds: string[]): Promise<AppConversationRecord[]>;
  /** The conversations in a sandbox (of `userId`, or of anyone when null). */
  inSandbox(userId: string | null, sandboxId: string): Promise<AppConversationRecord[]>;
  /** Up to `limit` tasks from `offset`, in `order`. */
  tasks(userId: string, filters: StartTaskFilters, order: TaskSortOrder, offset: number, limit: number): Promise<StartTaskRecord[]>;
  countTasks(userId: string, filters: StartTaskFilters): Promise<number>;
  /** The tasks that create (or created) a conversation id. */
  tasksOf(userId: string, conversationId: string): Promise<StartTaskRecord[]>;
}

/** A start task as the API shows it. */
export function toTask(task: StartTask): AppConversationStartTask {
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
    phase_times: Object.fromEntries(
      Object.entries((task.phase_times ?? {}) as Record<string, Date>).map(([status, at]) => [status, new Date(at).toISOString()]),
    ),
    sandbox_source: task.sandbox_source ?? null,
  };
}
