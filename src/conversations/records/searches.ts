// The searches of conversations and start tasks, behind one interface with two ways of
// answering: on MongoDB the models' queries, each served by a declared index
// (IndexedSearches, below); on the embedded FerretDB, which would scan whole collections for
// them, the owner's lists of the record tables (ListedSearches, list-searches.ts). The
// indexed one is also the reference the listed one is tested against.
import type { Models } from '../../../models/index.js';
import type { ConversationSortOrder, StartTaskFilters } from '../../../contract/app-conversations.schema.js';
import type { ModelsAndTables } from '../../db/record-lists/record-tables.js';
import { ListedSearches } from './list-searches.js';
import {
  CONVERSATION_SORT,
  conversationQuery,
  TASK_SORT,
  taskQuery,
  type ConversationSearch,
  type Searches,
  type TaskSortOrder,
} from './queries.js';

export type { Searches } from './queries.js';

export function searchesFor({ models, tables }: ModelsAndTables): Searches {
  return tables.listed ? new ListedSearches(tables.listed) : new IndexedSearches(models);
}

export class IndexedSearches implements Searches {
  constructor(private readonly models: Models) {}

  conversations(userId: string, search: ConversationSearch, offset: number, limit: number, order: ConversationSortOrder) {
    return this.models.AppConversation.find(conversationQuery(userId, search))
      .sort(CONVERSATION_SORT[order])
      .skip(offset)
      .limit(limit)
      .lean();
  }

  countConversations(userId: string, search: ConversationSearch) {
    return this.models.AppConversation.countDocuments(conversationQuery(userId, search));
  }

  subConversationsOf(userId: string, parentIds: string[]) {
    return this.models.AppConversation.find({ userId, parent_conversation_id: { $in: parentIds } }).lean();
  }

  inSandbox(userId: string | null, sandboxId: string) {
    return this.models.AppConversation.find(userId === null ? { sandboxId } : { userId, sandboxId }).lean();
  }

  tasks(userId: string, filters: StartTaskFilters, order: TaskSortOrder, offset: number, limit: number) {
    return this.models.StartTask.find(taskQuery(userId, filters)).sort(TASK_SORT[order]).skip(offset).limit(limit).lean();
  }

  countTasks(userId: string, filters: StartTaskFilters) {
    return this.models.StartTask.countDocuments(taskQuery(userId, filters));
  }

  tasksOf(userId: string, conversationId: string) {
    return this.models.StartTask.find({ userId, conversationId }).sort({ createdAt: -1 }).lean();
  }
}
