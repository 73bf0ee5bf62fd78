// The searches on the embedded FerretDB (searches.ts): pages are walks of the owner's lists
// (src/db/record-lists/record-lists.ts), whose entries carry the facts the filters need, then the page's
// records read by _id. How each search is answered:
// - in the requested order's own list, skipping whole buckets by their counts where only the
//   default top-level filter applies, bounded by the order's own date range, and stopping as
//   soon as the page is full; other filters are checked on the entries walked;
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
import { escapeRegex, type ConversationSearch, type Searches, type TaskSortOrder } from './queries.js';

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

const time = (iso: string | undefined) => (iso ? new Date(iso).getTime() : undefined);
type Check = (entry: Entry) => boolean;
const all = (checks: Check[]): Check | undefined => (checks.length === 0 ? undefined : (e) => checks.every((check) => check(e)));
const within = (at: number, gte: number | undefined, lt: number | undefined) =>
  (gte === undefined || at >= gte) && (lt === undefined || at < lt);

/** The search's conditions on a conversation entry's facts, leaving out those a walk applies itself. */
function conversationChecks(s: ConversationSearch, leave: { created?: boolean; updated?: boolean; topLevel?: boolean }): Check[] {
  const checks: Check[] = [];
  if (s.title__contains) {
    const pattern = new RegExp(escapeRegex(s.title__contains), 'iu');
    checks.push((e) => typeof e[F.title] === 'string' && pattern.test(e[F.title] as string));
  }
  const created = [time(s.created_at__gte), time(s.created_at__lt)] as const;
  if (!leave.created && (created[0] !== undefined || created[1] !== undefined))
    checks.push((e) => e[F.created] !== null && within(e[F.created] as number, ...created));
  const updated = [time(s.updated_at__gte), time(s.updated_at__lt)] as const;
  if (!leave.updated && (updated[0] !== undefined || updated[1] !== undefined))
    checks.push((e) => e[F.updated] !== null && within(e[F.updated] as number, ...updated));
  if (s.selected_repository) checks.push((e) => e[F.repository] === s.selected_repository);
  if (s.trigger) checks.push((e) => e[F.trigger] === s.trigger);
  if (s.topLevelOnly && !leave.topLevel) checks.push((e) => e[F.child] === 0);
  return checks;
}

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
      const check = all(conversationChecks(s, {}));
      const entries = records.map((r) => CONVERSATION_LAYOUT.entry(r as Listed, 'u')).filter((e) => !check || check(e));
      const page = entries.sort(byOrder(KEY_FACT[list], descending)).slice(offset, offset + limit);
      return page.map((e) => records.find((r) => r._id === e[1])!);
    }
    const updatedRange = s.updated_at__gte !== undefined || s.updated_at__lt !== undefined;
    const range = (gte?: string, lt?: string) => ({ gte: time(gte), lt: time(lt) });
    return this.checked(this.conversationTable, userId, updatedRange && list !== 'u' ? 'u' : list, async () => {
      if (updatedRange && list !== 'u') {
        // Every fact is on the update-time list: read the range there, then order the matches.
        const match = all(conversationChecks(s, { updated: true }));
        const found = await this.conversationTable.collect(userId, 'u', { ...range(s.updated_at__gte, s.updated_at__lt), match });
        return found.sort(byOrder(KEY_FACT[list], descending)).slice(offset, offset + limit);
      }
      const own =
        list === 'c' ? range(s.created_at__gte, s.created_at__lt) : list === 'u' ? range(s.updated_at__gte, s.updated_at__lt) : {};
      const match = all(conversationChecks(s, { created: list === 'c', updated: list === 'u', topLevel: true }));
      return this.conversationTable.walk(userId, list, { ...own, descending, offset, limit, marked: s.topLevelOnly, match });
    });
  }

  async countConversations(userId: string, s: ConversationSearch) {
    if (s.sandbox_id__eq) return (await this.conversations(userId, s, 0, Infinity, 'CREATED_AT')).length;
    const list = s.updated_at__gte !== undefined || s.updated_at__lt !== undefined ? 'u' : 'c';
    const own =
      list === 'c'
        ? { gte: time(s.created_at__gte), lt: time(s.created_at__lt) }
        : { gte: time(s.updated_at__gte), lt: time(s.updated_at__lt) };
    const match = all(conversationChecks(s, { created: list === 'c', updated: list === 'u', topLevel: true }));
    return this.conversationTable.count(userId, list, { ...own, marked: s.topLevelOnly, match });
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
    const gte = time(f.created_at__gte);
    if (f.conversation_id__eq) {
      const entries = (await this.taskEntriesOf(userId, f)).sort(byOrder(list === 'c' ? T.created : T.updated, descending));
      const records = await this.taskTable.getMany(entries.slice(offset, offset + limit).map((e) => e[1]));
      return entries.slice(offset, offset + limit).flatMap((e) => records.filter((r) => r._id === e[1]));
    }
    return this.checked(this.taskTable, userId, list, () => {
      const own = list === 'c' ? { gte } : {};
      const match = list !== 'c' && gte !== undefined ? (e: Entry) => (e[T.created] as number) >= gte : undefined;
      return this.taskTable.walk(userId, list, { ...own, descending, offset, limit, marked: false, match });
    });
  }

  async countTasks(userId: string, f: StartTaskFilters) {
    if (f.conversation_id__eq) return (await this.taskEntriesOf(userId, f)).length;
    return this.taskTable.count(userId, 'c', { gte: time(f.created_at__gte), marked: false });
  }

  async tasksOf(userId: string, conversationId: string) {
    const tasks = await this.taskTable.groupRecords('cv', conversationId, { userId });
    return tasks.sort((a, b) => b.createdAt.getTime() - a.createdAt.getTime());
  }

  /** The conversation's tasks as entries of the update-time list (they carry every fact), filtered. */
  private async taskEntriesOf(userId: string, f: StartTaskFilters): Promise<Entry[]> {
    const conversationId = f.conversation_id__eq!.replace(/-/g, '').toLowerCase();
    const gte = time(f.created_at__gte);
    const tasks = await this.taskTable.groupRecords('cv', conversationId, { userId });
    return tasks
      .map((t) => TASK_LAYOUT.entry(t as Listed, 'u'))
      .filter((e) => e[T.conversation] === conversationId && (gte === undefined || (e[T.created] as number) >= gte));
  }

  /** The records of the entries a read finds, read once more when one of them was stale (then repaired). */
  private async checked<R extends Listed>(table: ListedTable<R>, owner: string, list: string, read: () => Promise<Entry[]>): Promise<R[]> {
    for (let attempt = 0; ; attempt++) {
      const { records, stale } = await table.recordsOf(owner, list, await read());
      if (!stale || attempt > 0) return records;
    }
  }
}
