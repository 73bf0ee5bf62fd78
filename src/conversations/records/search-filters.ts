// Every filter of the conversation and start-task searches, defined once: the record field a
// MongoDB query tests, the place of the same fact on the embedded lists' entries
// (src/db/record-lists/record-layouts.ts), and what a search asks of it. Both forms are derived
// from these definitions: the query (filterQuery: conversationQuery and taskQuery in queries.ts,
// for MongoDB) and the check of a list entry (entryCheck: list-searches.ts, for the embedded
// FerretDB). test/unit/list-filters.test.ts holds the two forms of every filter to the same
// answers on the same records.
//
// A new filter is one line in CONVERSATION_FILTERS or TASK_FILTERS. If no entry carries the fact
// it tests yet, the layout gains it first: a position in CONVERSATION_FACTS or TASK_FACTS, the
// field in `facts`, the value in `entry`, and RECORD_LISTS_VERSION bumped so that stored lists
// are rebuilt (docs/decisions/0010-record-lists-on-the-embedded-ferretdb.md).
import type { ConversationFilters, StartTaskFilters } from '../../../contract/app-conversations.schema.js';
import type { Entry } from '../../db/record-lists/list-buckets.js';
import { CONVERSATION_FACTS as F, TASK_FACTS as T } from '../../db/record-lists/record-layouts.js';
import { escapeRegex } from '../../db/regex.js';

/** Which conversations a search returns: the V1 filters, the V0 filters, and sub-conversations or not. */
export interface ConversationSearch extends ConversationFilters {
  selected_repository?: string | undefined;
  trigger?: string | undefined;
  topLevelOnly: boolean;
}

/** What a search asks of a filter's field. */
export type Condition =
  /** Equal (a string; a field missing or of another type is not). */
  | { kind: 'equals'; value: string }
  /** A date from `gte` (inclusive) before `lt` (exclusive), ISO strings; a record without one is outside. */
  | { kind: 'range'; gte?: string | undefined; lt?: string | undefined }
  /** A string containing `text`, ignoring case. */
  | { kind: 'contains'; text: string }
  /** Null or missing; the entry's fact is a flag, 0 when so (as `child` in record-layouts.ts). */
  | { kind: 'unset' };

export interface SearchFilter<S> {
  kind: Condition['kind'];
  /** The record field the query tests. */
  field: string;
  /** The position of the same fact on the layout's entries. */
  fact: number;
  /** The lists whose entries carry the fact (all of the layout's when absent). */
  lists?: readonly string[] | undefined;
  /** What the search asks of the field; undefined when it does not filter by it. */
  condition(search: S): Condition | undefined;
}

const equals = <S>(field: string, fact: number, value: (s: S) => string | undefined): SearchFilter<S> => ({
  kind: 'equals',
  field,
  fact,
  condition: (s) => {
    const v = value(s);
    return v === undefined ? undefined : { kind: 'equals', value: v };
  },
});
const range = <S>(field: string, fact: number, bounds: (s: S) => [string?, string?], lists?: readonly string[]): SearchFilter<S> => ({
  kind: 'range',
  field,
  fact,
  lists,
  condition: (s) => {
    const [gte, lt] = bounds(s);
    return gte || lt ? { kind: 'range', gte: gte || undefined, lt: lt || undefined } : undefined;
  },
});
const contains = <S>(field: string, fact: number, text: (s: S) => string | undefined): SearchFilter<S> => ({
  kind: 'contains',
  field,
  fact,
  condition: (s) => {
    const t = text(s);
    return t ? { kind: 'contains', text: t } : undefined;
  },
});
const unset = <S>(field: string, fact: number, asked: (s: S) => boolean): SearchFilter<S> => ({
  kind: 'unset',
  field,
  fact,
  condition: (s) => (asked(s) ? { kind: 'unset' } : undefined),
});

/** A conversation id as start tasks store it: without dashes, lower case. */
export const storedConversationId = (id: string) => id.replace(/-/g, '').toLowerCase();

/** The conversation searches' filters, in the order the query names them. */
export const CONVERSATION_FILTERS = {
  title: contains<ConversationSearch>('title', F.title, (s) => s.title__contains),
  created: range<ConversationSearch>('createdAt', F.created, (s) => [s.created_at__gte, s.created_at__lt]),
  // The update time is a fact of the update-time list only (record-layouts.ts).
  updated: range<ConversationSearch>('updatedAt', F.updated, (s) => [s.updated_at__gte, s.updated_at__lt], ['u']),
  sandbox: equals<ConversationSearch>('sandboxId', F.sandbox, (s) => s.sandbox_id__eq || undefined),
  repository: equals<ConversationSearch>('selected_repository', F.repository, (s) => s.selected_repository || undefined),
  trigger: equals<ConversationSearch>('trigger', F.trigger, (s) => s.trigger || undefined),
  // Sub-conversations only on request; walks count top-level entries apart (the layout's `marked`).
  topLevel: unset<ConversationSearch>('parent_conversation_id', F.child, (s) => s.topLevelOnly),
};
export type ConversationFilter = keyof typeof CONVERSATION_FILTERS;

/** The start-task searches' filters, in the order the query names them. */
export const TASK_FILTERS = {
  conversation: equals<StartTaskFilters>('app_conversation_id', T.conversation, (f) =>
    f.conversation_id__eq ? storedConversationId(f.conversation_id__eq) : undefined,
  ),
  created: range<StartTaskFilters>('createdAt', T.created, (f) => [f.created_at__gte]),
};
export type TaskFilter = keyof typeof TASK_FILTERS;

/** A filter's condition as MongoDB's query language says it, for the filter's field. */
export function queryCondition(condition: Condition): unknown {
  switch (condition.kind) {
    case 'equals':
      return condition.value;
    case 'range':
      return {
        ...(condition.gte ? { $gte: new Date(condition.gte) } : {}),
        ...(condition.lt ? { $lt: new Date(condition.lt) } : {}),
      };
    case 'contains':
      return { $regex: escapeRegex(condition.text), $options: 'i' };
    case 'unset':
      return null;
  }
}

const time = (iso: string | undefined) => (iso ? new Date(iso).getTime() : undefined);

/** The same condition on the fact at `fact` of a list entry. */
export function factCheck(condition: Condition, fact: number): (entry: Entry) => boolean {
  switch (condition.kind) {
    case 'equals':
      return (e) => e[fact] === condition.value;
    case 'range': {
      const [gte, lt] = [time(condition.gte), time(condition.lt)];
      return (e) => e[fact] !== null && (gte === undefined || (e[fact] as number) >= gte) && (lt === undefined || (e[fact] as number) < lt);
    }
    case 'contains': {
      const pattern = new RegExp(escapeRegex(condition.text), 'iu');
      return (e) => typeof e[fact] === 'string' && pattern.test(e[fact]);
    }
    case 'unset':
      return (e) => e[fact] === 0;
  }
}

/** The query's conditions of every filter the search sets (beside the owner's). */
export function filterQuery<S>(filters: Record<string, SearchFilter<S>>, search: S): Record<string, unknown> {
  const query: Record<string, unknown> = {};
  for (const filter of Object.values(filters)) {
    const condition = filter.condition(search);
    if (condition) query[filter.field] = queryCondition(condition);
  }
  return query;
}

/** The check of a list entry by every filter the search sets but those in `leave` (the walk applies them itself); undefined for none. */
export function entryCheck<S, K extends string>(
  filters: Record<K, SearchFilter<S>>,
  search: S,
  leave: readonly (K | undefined)[] = [],
): ((entry: Entry) => boolean) | undefined {
  const checks: ((entry: Entry) => boolean)[] = [];
  for (const [name, filter] of Object.entries(filters) as [K, SearchFilter<S>][]) {
    const condition = leave.includes(name) ? undefined : filter.condition(search);
    if (condition) checks.push(factCheck(condition, filter.fact));
  }
  return checks.length === 0 ? undefined : (e) => checks.every((check) => check(e));
}

/** A range filter's bounds as a walk of the list ordered by its fact takes them (times in ms). */
export function walkRange<S>(filter: SearchFilter<S>, search: S): { gte?: number | undefined; lt?: number | undefined } {
  const condition = filter.condition(search);
  return condition?.kind === 'range' ? { gte: time(condition.gte), lt: time(condition.lt) } : {};
}
