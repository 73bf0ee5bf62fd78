// See docs/decisions/0010-record-lists-on-the-embedded-ferretdb.md (why, the invariants, when to delete).
// The searches on the embedded FerretDB (searches.ts): pages are walks of the owner's lists
// (src/db/record-lists/record-lists.ts), whose entries carry the facts the filters need, then the page's
// records read by _id. How each search is answered:
// - in the requested order's own list, skipping whole buckets by their counts where only the
//   default top-level filter applies, bounded by the order's own date range, and stopping as
//   soon as the page is full; other filters are checked on the entries walked (each filter's
//   check derived from its one definition, search-filters.ts);
// - an updated_at range with another order: the update-time list, within the range, sorted
//   by the requested order (its entries carry every fact);
// - a sandbox (sandbox_id__eq) or a conversation id (tasks): the group's records.
import type { AppConversationRecord, StartTaskRecord } from '../../../models/index.js';
import type { ConversationSortOrder, StartTaskFilters } from '../../../contract/app-conversations.schema.js';
import { compareEntries, type Entry } from '../../db/record-lists/list-buckets.js';
import type { ListedTables } from '../../db/record-lists/record-tables.js';
import {
  CONVERSATION_FACTS as F,
  CONVERSATION_LAYOUT,
  TASK_FACTS as T,
  TASK_LAYOUT,
  type Listed,
} from '../../db/record-lists/record-layouts.js';
import type { ListedTable } from '../../db/record-lists/listed-table.js';
import type { ConversationSearch, Searches, TaskSortOrder } from './queries.js';
import {
  CONVERSATION_FILTERS,
  entryCheck,
  storedConversationId,
  TASK_FILTERS,
  walkRange,
  type ConversationFilter,
} from './search-filters.js';

/** Which list serves an order, and in which direction. */
const ORDERS: Record<ConversationSortOrder, { list: 'c' | 'u' | 't'; descending: boolean }> = {
  CREATED_AT: { list: 'c', descending: false },
  CREATED_AT_DESC: { list: 'c', descending: true },
  UPDATED_AT: { list: 'u', descending: false },
  UPDATED_AT_DESC: { list: 'u', descending: true },
  TITLE: { list: 't', descending: false },
  TITLE_DESC: { list: 't', descending: true },
};
const KEY_FACT = { c: F.created, u: F.updated, t: F.title } as const;

/** The filter whose range a walk of each list applies itself (by its sort key). */
const OWN_RANGE = { c: 'created', u: 'updated', t: undefined } as const satisfies Record<string, ConversationFilter | undefined>;
const ownRange = (list: 'c' | 'u' | 't', s: ConversationSearch) => {
  const filter = OWN_RANGE[list];
  return filter ? walkRange(CONVERSATION_FILTERS[filter], s) : {};
};

/** (key, id) in the order's direction: the comparison a sorted page uses. */
function byOrder(keyAt: number, descending: boolean) {
  return (a: Entry, b: Entry) => {
    const order = compareEntries([a[keyAt] as Entry[0], a[1]], [b[keyAt] as Entry[0], b[1]]);
    return descending ? -order : order;
  };
}

export class ListedSearches implements Searches {
  private readonly conversationTable: ListedTable<AppConversationRecord & Listed>;
  private readonly taskTable: ListedTable<StartTaskRecord & Listed>;

  constructor(tables: ListedTables) {
    this.conversationTable = tables.conversations;
    this.taskTable = tables.tasks;
  }

  async conversations(userId: string, s: ConversationSearch, offset: number, limit: number, order: ConversationSortOrder) {
    const { list, descending } = ORDERS[order];
    if (s.sandbox_id__eq) {
      const records = await this.inSandbox(userId, s.sandbox_id__eq);
      const check = entryCheck(CONVERSATION_FILTERS, s);
      const entries = records.map((r) => CONVERSATION_LAYOUT.entry(r as Listed, 'u')).filter((e) => !check || check(e));
      const page = entries.sort(byOrder(KEY_FACT[list], descending)).slice(offset, offset + limit);
      return page.map((e) => records.find((r) => r._id === e[1])!);
    }
    const updatedRange = s.updated_at__gte !== undefined || s.updated_at__lt !== undefined;
    return this.checked(this.conversationTable, userId, updatedRange && list !== 'u' ? 'u' : list, async () => {
      if (updatedRange && list !== 'u') {
        // Every fact is on the update-time list: read the range there, then order the matches.
        const match = entryCheck(CONVERSATION_FILTERS, s, ['updated']);
        const found = await this.conversationTable.collect(userId, 'u', { ...ownRange('u', s), match });
        return found.sort(byOrder(KEY_FACT[list], descending)).slice(offset, offset + limit);
      }
      // Top-level entries are the marked ones: the walk skips the others by the directory's counts.
      const match = entryCheck(CONVERSATION_FILTERS, s, [OWN_RANGE[list], 'topLevel']);
      return this.conversationTable.walk(userId, list, { ...ownRange(list, s), descending, offset, limit, marked: s.topLevelOnly, match });
    });
  }

  async countConversations(userId: string, s: ConversationSearch) {
    if (s.sandbox_id__eq) return (await this.conversations(userId, s, 0, Infinity, 'CREATED_AT')).length;
    const list = s.updated_at__gte !== undefined || s.updated_at__lt !== undefined ? 'u' : 'c';
    const match = entryCheck(CONVERSATION_FILTERS, s, [OWN_RANGE[list], 'topLevel']);
    return this.conversationTable.count(userId, list, { ...ownRange(list, s), marked: s.topLevelOnly, match });
  }

  async subConversationsOf(userId: string, parentIds: string[]) {
    const found = await Promise.all([...new Set(parentIds)].map((id) => this.conversationTable.groupRecords('pa', id, { userId })));
    return found.flat();
  }

  inSandbox(userId: string | null, sandboxId: string) {
    return this.conversationTable.groupRecords('sb', sandboxId, userId === null ? {} : { userId });
  }

  async tasks(userId: string, f: StartTaskFilters, order: TaskSortOrder, offset: number, limit: number) {
    const { list, descending } = ORDERS[order];
    if (f.conversation_id__eq) {
      const entries = (await this.taskEntriesOf(userId, f)).sort(byOrder(list === 'c' ? T.created : T.updated, descending));
      const records = await this.taskTable.getMany(entries.slice(offset, offset + limit).map((e) => e[1]));
      return entries.slice(offset, offset + limit).flatMap((e) => records.filter((r) => r._id === e[1]));
    }
    return this.checked(this.taskTable, userId, list, () => {
      const own = list === 'c' ? walkRange(TASK_FILTERS.created, f) : {};
      const match = entryCheck(TASK_FILTERS, f, list === 'c' ? ['created'] : []);
      return this.taskTable.walk(userId, list, { ...own, descending, offset, limit, marked: false, match });
    });
  }

  async countTasks(userId: string, f: StartTaskFilters) {
    if (f.conversation_id__eq) return (await this.taskEntriesOf(userId, f)).length;
    return this.taskTable.count(userId, 'c', { ...walkRange(TASK_FILTERS.created, f), marked: false });
  }

  async tasksOf(userId: string, conversationId: string) {
    const tasks = await this.taskTable.groupRecords('cv', conversationId, { userId });
    return tasks.sort((a, b) => b.createdAt.getTime() - a.createdAt.getTime());
  }

  /** The conversation's tasks as entries of the update-time list (they carry every fact), filtered. */
  private async taskEntriesOf(userId: string, f: StartTaskFilters): Promise<Entry[]> {
    const tasks = await this.taskTable.groupRecords('cv', storedConversationId(f.conversation_id__eq!), { userId });
    const check = entryCheck(TASK_FILTERS, f);
    return tasks.map((t) => TASK_LAYOUT.entry(t as Listed, 'u')).filter((e) => !check || check(e));
  }

  /** The records of the entries a read finds, read once more when one of them was stale (then repaired). */
  private async checked<R extends Listed>(table: ListedTable<R>, owner: string, list: string, read: () => Promise<Entry[]>): Promise<R[]> {
    for (let attempt = 0; ; attempt++) {
      const { records, stale } = await table.recordsOf(owner, list, await read());
      if (!stale || attempt > 0) return records;
    }
  }
}
