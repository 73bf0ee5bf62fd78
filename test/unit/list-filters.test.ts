// The search filters' two forms agree (src/conversations/records/search-filters.ts), without a
// database: for every filter defined there (a new one is covered here by being defined), on a
// varied set of records, the check of a record's list entry (as record-layouts.ts derives it, on
// every list that carries the filter's fact) answers as the MongoDB query does against the
// record itself, the query evaluated by sift (the matcher mongoose ships, a devDependency at its
// version). A filter pointing at the wrong fact, field or lists is caught (the self-check cases).
import siftModule from 'sift';
import { describe, expect, it } from 'vitest';
import type { StartTaskFilters } from '../../contract/app-conversations.schema.js';
import { conversationQuery, taskQuery } from '../../src/conversations/records/queries.js';
import {
  CONVERSATION_FILTERS,
  entryCheck,
  filterQuery,
  TASK_FILTERS,
  type Condition,
  type ConversationSearch,
  type SearchFilter,
} from '../../src/conversations/records/search-filters.js';
import {
  CONVERSATION_FACTS,
  CONVERSATION_LAYOUT,
  TASK_LAYOUT,
  type Listed,
  type RecordLayout,
} from '../../src/db/record-lists/record-layouts.js';

/** sift's query tester (typed as its module's default: the module is a CommonJS one). */
const sift = siftModule.default;

/** A small deterministic generator (the same records every run). */
function generator(seed: number) {
  let state = seed;
  const next = () => (state = (state * 1_103_515_245 + 12_345) % 2 ** 31) / 2 ** 31;
  return <T>(items: readonly T[]): T => items[Math.floor(next() * items.length)]!;
}

const base = Date.UTC(2026, 0, 1);
const DATES = [null, undefined, ...[0, 1, 2, 5, 9].map((m) => new Date(base + m * 60_000)), new Date(base + 2 * 60_000 + 1)];
const TITLES = [null, undefined, '', 'Fix the build', 'fix TESTS', 'Ünïcode title', 'a.b (c) [d]*', 'zeta', 'Alpha', 42];
const MISSING = Symbol('missing');

/** A record of these field values, a field left out where its value is undefined (a record written before it). */
const record = (fields: Record<string, unknown>): Listed =>
  Object.fromEntries(Object.entries(fields).filter(([, v]) => v !== undefined && v !== MISSING)) as Listed;

function conversations(n: number): Listed[] {
  const pick = generator(7);
  return Array.from({ length: n }, (_, i) =>
    record({
      _id: `c${i}`,
      userId: pick(['alice', 'bob']),
      title: pick(TITLES),
      createdAt: pick(DATES),
      updatedAt: pick(DATES),
      sandboxId: pick([null, undefined, 'sb-1', 'sb-2']),
      selected_repository: pick([null, undefined, 'acme/widgets', 'acme/gears', 'Acme/Widgets']),
      trigger: pick([null, undefined, 'gui', 'resolver', 7]),
      parent_conversation_id: pick([null, undefined, 'c1', 'c2']),
    }),
  );
}

function tasks(n: number): Listed[] {
  const pick = generator(11);
  return Array.from({ length: n }, (_, i) =>
    record({
      _id: `t${i}`,
      userId: 'alice',
      createdAt: pick(DATES),
      updatedAt: pick(DATES),
      app_conversation_id: pick([null, undefined, 'aa11', 'bb22', 'AA11']),
      conversationId: pick(['aa11', 'bb22']),
    }),
  );
}

/** The conditions a filter of this kind is tried with: drawn from the records' values of its field, and some that match none. */
function conditionsFor(filter: SearchFilter<unknown>, records: Listed[]): Condition[] {
  const values = records.map((r) => r[filter.field]);
  const strings = [...new Set(values.filter((v): v is string => typeof v === 'string'))];
  switch (filter.kind) {
    case 'equals':
      return [...strings, 'no such value'].map((value) => ({ kind: 'equals', value }));
    case 'range': {
      const times = [...new Set(values.filter((v): v is Date => v instanceof Date).map((d) => d.getTime()))];
      const bounds = [...times, ...times.map((t) => t + 1), base - 86_400_000].map((t) => new Date(t).toISOString());
      return bounds.flatMap((gte) => [
        { kind: 'range', gte },
        { kind: 'range', lt: gte },
        ...bounds.map((lt) => ({ kind: 'range' as const, gte, lt })),
      ]);
    }
    case 'contains': {
      const texts = strings.flatMap((s) => [s, s.slice(1, 4), s.toUpperCase(), s.toLowerCase()]).filter((t) => t !== '');
      return [...new Set([...texts, '.', '(c)', '[d]*', 'ÜNÏ', 'nothing like it'])].map((text) => ({ kind: 'contains', text }));
    }
    case 'unset':
      return [{ kind: 'unset' }];
  }
}

/** Where the filter's two forms answer differently: "<condition> <record id> <list>: query …, entry …". */
function disagreements(layout: RecordLayout, filter: SearchFilter<unknown>, records: Listed[]): string[] {
  const found: string[] = [];
  for (const condition of conditionsFor(filter, records)) {
    // The production derivations (filterQuery, entryCheck), of this filter alone, set to this condition.
    const fixed = { only: { ...filter, condition: () => condition } };
    const query = filterQuery(fixed, undefined);
    const check = entryCheck(fixed, undefined)!;
    const matches = sift(query);
    for (const r of records) {
      for (const list of filter.lists ?? layout.orders) {
        const [byQuery, byEntry] = [matches(r), check(layout.entry(r, list))];
        if (byQuery !== byEntry) found.push(`${JSON.stringify(condition)} ${r._id} ${list}: query ${byQuery}, entry ${byEntry}`);
      }
    }
  }
  return found;
}

const SETS: [string, RecordLayout, Record<string, SearchFilter<never>>, Listed[]][] = [
  ['conversation', CONVERSATION_LAYOUT, CONVERSATION_FILTERS, conversations(300)],
  ['start-task', TASK_LAYOUT, TASK_FILTERS, tasks(120)],
];

describe.each(SETS)('the %s filters', (_, layout, filters, records) => {
  it('are defined (the cases below iterate them)', () => {
    expect(Object.keys(filters).length).toBeGreaterThan(1);
  });

  it.each(Object.entries(filters))('%s: the entry check answers as the query does, on every list carrying its fact', (_name, filter) => {
    const tried = conditionsFor(filter as SearchFilter<unknown>, records);
    expect(tried.length).toBeGreaterThan(0);
    expect(disagreements(layout, filter as SearchFilter<unknown>, records)).toEqual([]);
    // Both answers vary over the records: the agreement is not that of two constants.
    const some = tried.some((c) => {
      const matched = records.filter((r) => sift(filterQuery({ f: { ...filter, condition: () => c } }, undefined))(r)).length;
      return matched > 0 && matched < records.length;
    });
    expect(some).toBe(true);
  });

  it.each(Object.entries(filters))('%s: its field is one of the layout facts (a write of it changes the lists)', (_name, filter) => {
    expect(layout.facts).toContain(filter.field);
  });
});

describe('the self-check: a wrong definition is caught', () => {
  const records = conversations(300);
  const wrong = (filter: SearchFilter<ConversationSearch>) => disagreements(CONVERSATION_LAYOUT, filter as SearchFilter<unknown>, records);

  it('an entry check reading another fact', () => {
    expect(wrong({ ...CONVERSATION_FILTERS.repository, fact: CONVERSATION_FACTS.trigger })).not.toEqual([]);
  });

  it('a query testing another field', () => {
    expect(wrong({ ...CONVERSATION_FILTERS.title, field: 'selected_repository' })).not.toEqual([]);
  });

  it('a fact claimed on lists whose entries do not carry it (the update time is on the u list only)', () => {
    const everywhere = { ...CONVERSATION_FILTERS.updated, lists: undefined };
    expect(wrong(everywhere).some((d) => d.endsWith(': query true, entry false'))).toBe(true);
    expect(wrong(CONVERSATION_FILTERS.updated)).toEqual([]);
  });
});

describe('the queries derived from the definitions', () => {
  const iso = (minutes: number) => new Date(base + minutes * 60_000).toISOString();
  const search: ConversationSearch = {
    topLevelOnly: true,
    title__contains: 'a.b',
    created_at__gte: iso(1),
    created_at__lt: iso(9),
    updated_at__gte: iso(0),
    updated_at__lt: iso(5),
    sandbox_id__eq: 'sb-1',
    selected_repository: 'acme/widgets',
    trigger: 'gui',
  };
  const filters: StartTaskFilters = { conversation_id__eq: 'AA11-', created_at__gte: iso(2) };

  it('are the queries MongoDB deployments were sent before (shape, field order, values)', () => {
    expect(JSON.stringify(conversationQuery('alice', search))).toBe(
      JSON.stringify({
        userId: 'alice',
        title: { $regex: 'a\\.b', $options: 'i' },
        createdAt: { $gte: new Date(iso(1)), $lt: new Date(iso(9)) },
        updatedAt: { $gte: new Date(iso(0)), $lt: new Date(iso(5)) },
        sandboxId: 'sb-1',
        selected_repository: 'acme/widgets',
        trigger: 'gui',
        parent_conversation_id: null,
      }),
    );
    expect(conversationQuery('alice', { topLevelOnly: false, title__contains: '', created_at__gte: iso(1) })).toEqual({
      userId: 'alice',
      createdAt: { $gte: new Date(iso(1)) },
    });
    expect(JSON.stringify(taskQuery('alice', filters))).toBe(
      JSON.stringify({ userId: 'alice', app_conversation_id: 'aa11', createdAt: { $gte: new Date(iso(2)) } }),
    );
    expect(taskQuery('alice', {})).toEqual({ userId: 'alice' });
  });

  it('agree with the entry checks on searches setting several filters at once', () => {
    const searches: ConversationSearch[] = [
      search,
      { topLevelOnly: true, selected_repository: 'acme/gears' },
      { topLevelOnly: false, title__contains: 'FIX', created_at__gte: iso(1) },
      { topLevelOnly: true, trigger: 'resolver', updated_at__lt: iso(5) },
    ];
    for (const [set, layout, records, checked] of [
      [CONVERSATION_FILTERS, CONVERSATION_LAYOUT, conversations(300), searches],
      [TASK_FILTERS, TASK_LAYOUT, tasks(120), [filters, { created_at__gte: iso(2) }, { conversation_id__eq: 'bb-22' }]],
    ] as const) {
      for (const s of checked) {
        const byQuery = records.filter((r) => sift(filterQuery(set as Record<string, SearchFilter<unknown>>, s))(r)).map((r) => r._id);
        const check = entryCheck(set as Record<string, SearchFilter<unknown>>, s);
        // The update-time list's entries carry every fact (record-layouts.ts).
        const byEntry = records.filter((r) => !check || check(layout.entry(r, 'u'))).map((r) => r._id);
        expect(byEntry, JSON.stringify(s)).toEqual(byQuery);
      }
    }
  });
});
