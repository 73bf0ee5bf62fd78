// The filters and sorts of the conversation store's searches, built from the API's filter
// fields, and the fields of a new conversation record (no database access here; store.ts runs them).
import type { ConversationFilters, StartTaskFilters, StartTaskStatus } from '../../contract/app-conversations.schema.js';
import type { AppConversationRecord } from '../../models/index.js';
import type { NewStartTask, StartTask } from './store.js';

/** Which conversations a search returns: the V1 filters, the V0 filters, and sub-conversations or not. */
export interface ConversationSearch extends ConversationFilters {
  selected_repository?: string | undefined;
  trigger?: string | undefined;
  topLevelOnly: boolean;
}

// Ties are broken by id in the same direction, so one index serves each order both ways.
export const TASK_SORT = {
  CREATED_AT: { createdAt: 1, _id: 1 },
  CREATED_AT_DESC: { createdAt: -1, _id: -1 },
  UPDATED_AT: { updatedAt: 1, _id: 1 },
  UPDATED_AT_DESC: { updatedAt: -1, _id: -1 },
} as const;
export type TaskSortOrder = keyof typeof TASK_SORT;

function dateRange(gte?: string, lt?: string) {
  if (!gte && !lt) return undefined;
  return { ...(gte ? { $gte: new Date(gte) } : {}), ...(lt ? { $lt: new Date(lt) } : {}) };
}

export function conversationQuery(userId: string, s: ConversationSearch): Record<string, unknown> {
  const query: Record<string, unknown> = { userId };
  if (s.title__contains) query.title = { $regex: escapeRegex(s.title__contains), $options: 'i' };
  const created = dateRange(s.created_at__gte, s.created_at__lt);
  if (created) query.createdAt = created;
  const updated = dateRange(s.updated_at__gte, s.updated_at__lt);
  if (updated) query.updatedAt = updated;
  if (s.selected_repository) query.selected_repository = s.selected_repository;
  if (s.trigger) query.trigger = s.trigger;
  if (s.topLevelOnly) query.parent_conversation_id = null;
  return query;
}

export function taskQuery(userId: string, f: StartTaskFilters): Record<string, unknown> {
  const query: Record<string, unknown> = { userId };
  if (f.conversation_id__eq) query.app_conversation_id = f.conversation_id__eq.replace(/-/g, '').toLowerCase();
  if (f.created_at__gte) query.createdAt = { $gte: new Date(f.created_at__gte) };
  return query;
}

function escapeRegex(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
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
  };
}

/** A new conversation record for a task: its request's fields, no title or status yet, and `fields`. */
export function newConversation(
  task: Pick<StartTask, 'request' | 'conversationId' | 'userId' | 'createdAt'>,
  fields: Record<string, unknown>,
) {
  return {
    ...conversationFields(task),
    _id: task.conversationId,
    userId: task.userId,
    createdAt: task.createdAt,
    title: null,
    metrics: null,
    execution_status: null,
    ...fields,
  };
}

/** A new start task, WORKING, unclaimed; mcpConfig is the encrypted per-conversation MCP override. */
export function newStartTask(task: NewStartTask, mcpConfig: string | null): StartTask {
  return {
    ...task,
    detail: null,
    app_conversation_id: null,
    sandbox_id: null,
    agent_server_url: null,
    mcpConfig,
    phase_times: { [task.status]: task.createdAt },
    sandbox_source: null,
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
