// What the embedded layout keeps of each listed collection (record-lists.ts, listed-table.ts):
// the lists of an owner, one per order, whose entries are [sort key, id, ...facts], and the
// groups a record belongs to. Facts are what searches filter on; everything else is read
// from the records themselves, by _id, so a field added to a record reaches every list
// without a change here. Entries are derived from records only (entry(), groupKey()), so a
// list can always be checked against, and rebuilt from, the records.
import type { Entry, ListKey } from './list-buckets.js';

export interface RecordLayout {
  /** Prefix of its list documents' ids. */
  name: string;
  /** The records' collection: its writes run in that collection's lane of the write gate. */
  lane: string;
  orders: readonly string[];
  /** Whose lists hold the record. */
  owner(record: Listed): string;
  entry(record: Listed, order: string): Entry;
  /** Entries the directories count separately (walks skip unmarked ones without reading them). */
  marked(entry: Entry): boolean;
  groups: readonly string[];
  groupKey(record: Listed, group: string): string | null;
  /** The record fields entries and groups are derived from: an update touching none changes no list. */
  facts: readonly string[];
}

/**
 * The version of what the layouts below derive, kept in the rebuild's marker (list-rebuild.ts):
 * bump it when an entry's facts or an order change (a fact added, removed, moved or derived
 * otherwise; a list added or sorted otherwise; an owner, mark or group derived otherwise), so
 * that lists an earlier version wrote are rebuilt from the records at the next start.
 */
export const RECORD_LISTS_VERSION = 1;

/** A record as stored (lean), as far as layouts read it. */
export type Listed = { _id: string } & Record<string, unknown>;

const ms = (value: unknown): number | null => (value == null ? null : new Date(value as Date).getTime());
const text = (value: unknown): string | null => (typeof value === 'string' ? value : null);

/** Positions of a conversation entry's facts. */
export const CONVERSATION_FACTS = { created: 2, updated: 3, title: 4, sandbox: 5, child: 6, repository: 7, trigger: 8 } as const;

/**
 * A user's conversations by creation (c), last update (u) and title (t); the update time is
 * a fact of the u list only (it changes with most writes; the other lists stay untouched
 * then). Marked: top-level conversations (what searches list by default). Groups: the
 * conversations of a sandbox (sb) and the sub-conversations of a conversation (pa).
 */
export const CONVERSATION_LAYOUT: RecordLayout = {
  name: 'conv',
  lane: 'app_conversations',
  orders: ['c', 'u', 't'],
  owner: (r) => String(r.userId),
  entry(r, order) {
    const created = ms(r.createdAt);
    const updated = order === 'u' ? ms(r.updatedAt) : null;
    const title = text(r.title);
    const key: ListKey = order === 'c' ? created : order === 'u' ? updated : title;
    const child = r.parent_conversation_id == null ? 0 : 1;
    return [key, r._id, created, updated, title, text(r.sandboxId), child, text(r.selected_repository), text(r.trigger)];
  },
  marked: (e) => e[CONVERSATION_FACTS.child] === 0,
  groups: ['sb', 'pa'],
  groupKey: (r, group) => text(group === 'sb' ? r.sandboxId : r.parent_conversation_id),
  facts: ['userId', 'createdAt', 'updatedAt', 'title', 'sandboxId', 'parent_conversation_id', 'selected_repository', 'trigger'],
};

export const TASK_FACTS = { created: 2, updated: 3, conversation: 4 } as const;

/** A user's start tasks by creation (c) and last update (u); group: the tasks of a conversation id (cv). */
export const TASK_LAYOUT: RecordLayout = {
  name: 'task',
  lane: 'start_tasks',
  orders: ['c', 'u'],
  owner: (r) => String(r.userId),
  entry(r, order) {
    const created = ms(r.createdAt);
    const updated = order === 'u' ? ms(r.updatedAt) : null;
    return [order === 'c' ? created : updated, r._id, created, updated, text(r.app_conversation_id)];
  },
  marked: () => true,
  groups: ['cv'],
  groupKey: (r) => text(r.conversationId),
  facts: ['userId', 'createdAt', 'updatedAt', 'app_conversation_id', 'conversationId'],
};

/** An owner's sandboxes by creation (the warm pool's unclaimed ones under its own owner). */
export const SANDBOX_LAYOUT: RecordLayout = {
  name: 'sbx',
  lane: 'sandboxes',
  orders: ['c'],
  owner: (r) => String(r.userId),
  entry: (r) => [ms(r.createdAt), r._id],
  marked: () => true,
  groups: [],
  groupKey: () => null,
  facts: ['userId', 'createdAt'],
};

export const listId = (layout: RecordLayout, owner: string, order: string) => `${layout.name}|${owner}|${order}`;
export const groupId = (layout: RecordLayout, group: string, key: string) => `g|${layout.name}|${group}|${key}`;
