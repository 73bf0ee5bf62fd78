// The filters and sorts of the conversation store's searches, built from the API's filter
// fields (no database access here; store.ts runs them).
import type { ConversationFilters, StartTaskFilters } from '../../contract/app-conversations.schema.js';

/** Which conversations a search returns: the V1 filters, the V0 filters, and sub-conversations or not. */
export interface ConversationSearch extends ConversationFilters {
  selected_repository?: string | undefined;
  trigger?: string | undefined;
  topLevelOnly: boolean;
}

export const TASK_SORT = {
  CREATED_AT: { createdAt: 1 },
  CREATED_AT_DESC: { createdAt: -1 },
  UPDATED_AT: { updatedAt: 1 },
  UPDATED_AT_DESC: { updatedAt: -1 },
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
