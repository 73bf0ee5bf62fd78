// Which commands the service sends, and whether a declared index serves each one. Every test
// app records its service's commands (the driver's command monitoring) and checks them when
// it stops (helpers/app.ts), so a query added anywhere, by any route or background loop, is
// checked by the tests that exercise it.
//
// The rule: an index serves a query when it bounds the scan and gives the sort, so MongoDB
// never scans a collection nor sorts in memory. It bounds the scan when its leading keys are
// equality fields of the query (`$in` counts as equality), or its first key is a field the
// query bounds by a range; its next keys must then be the query's sort keys in order (all in
// the index's direction or all reversed; sort keys fixed by equality may be left out). Other
// conditions filter what the index bounds. Equality on `_id` (or `$in` of ids) is served by
// the `_id` index. A command with an empty filter and no sort is served only when it reads or
// changes at most one document (no scan is needed to find "any" document). Commands with a
// comment starting "migration:" are one-off start-up moves of an earlier version's data.
import type { CommandStartedEvent } from 'mongodb';
import type { Models } from '../../models/index.js';

export interface Query {
  collection: string;
  command: string;
  filter: Record<string, unknown>;
  sort: Record<string, 1 | -1>;
  /** At most one document is read or changed (findOne, updateOne, deleteOne, findAndModify). */
  single: boolean;
}

type IndexKeys = [field: string, direction: number][];

/** Declared indexes per collection name: `_id`, then the schema's own (field-level ones included). */
export function declaredIndexes(models: Models): Map<string, IndexKeys[]> {
  const indexes = new Map<string, IndexKeys[]>();
  for (const model of Object.values(models)) {
    const keys = model.schema.indexes().map(([fields]) => Object.entries(fields).map(([f, d]) => [f, Number(d)] as [string, number]));
    indexes.set(model.collection.collectionName, [[['_id', 1]], ...keys]);
  }
  return indexes;
}

const IGNORED = new Set([
  'insert',
  'getMore',
  'killCursors',
  'createIndexes',
  'listIndexes',
  'listCollections',
  'create',
  'drop',
  'dropDatabase',
  'ping',
  'hello',
  'isMaster',
  'ismaster',
  'buildInfo',
  'endSessions',
  'saslStart',
  'saslContinue',
  'getParameter',
  'serverStatus',
]);

/** The queries of one command (an update or delete command may carry several); [] for commands without a query. */
export function queriesOf(event: Pick<CommandStartedEvent, 'commandName' | 'command'>): Query[] {
  const { commandName: name, command } = event;
  if (IGNORED.has(name)) return [];
  if (typeof command.comment === 'string' && command.comment.startsWith('migration:')) return [];
  const collection = String(command[name]);
  const asRecord = (v: unknown) => (v ?? {}) as Record<string, unknown>;
  // The driver sends sorts as a Map (key order matters).
  const sortOf = (v: unknown) => (v instanceof Map ? Object.fromEntries(v) : (v ?? {})) as Record<string, 1 | -1>;
  switch (name) {
    case 'find':
      return [{ collection, command: name, filter: asRecord(command.filter), sort: sortOf(command.sort), single: command.limit === 1 }];
    case 'findAndModify':
      return [{ collection, command: name, filter: asRecord(command.query), sort: sortOf(command.sort), single: true }];
    case 'update':
      return (command.updates as { q: unknown; multi?: boolean }[]).map((u) => ({
        collection,
        command: name,
        filter: asRecord(u.q),
        sort: {},
        single: !u.multi,
      }));
    case 'delete':
      return (command.deletes as { q: unknown; limit: number }[]).map((d) => ({
        collection,
        command: name,
        filter: asRecord(d.q),
        sort: {},
        single: d.limit === 1,
      }));
    case 'count':
      return [{ collection, command: name, filter: asRecord(command.query), sort: {}, single: false }];
    case 'distinct':
      return [{ collection, command: name, filter: asRecord(command.query), sort: {}, single: false }];
    case 'aggregate': {
      const pipeline = command.pipeline as Record<string, unknown>[];
      const match = pipeline.find((stage) => '$match' in stage)?.$match;
      const sort = pipeline.find((stage) => '$sort' in stage)?.$sort;
      return [{ collection, command: name, filter: asRecord(match), sort: sortOf(sort), single: false }];
    }
    default:
      // A command this checker does not know: report it rather than let it pass unchecked.
      return [{ collection, command: name, filter: { $unknownCommand: name }, sort: {}, single: false }];
  }
}

const isOperatorObject = (v: unknown) =>
  typeof v === 'object' && v !== null && !Array.isArray(v) && !(v instanceof Date) && Object.keys(v).some((k) => k.startsWith('$'));

/** Equality fields and bounded (range or other operator) fields of a filter without `$or`. */
function fieldsOf(filter: Record<string, unknown>): { equal: Set<string>; bounded: Set<string>; unknown: boolean } {
  const equal = new Set<string>();
  const bounded = new Set<string>();
  let unknown = false;
  for (const [field, condition] of Object.entries(filter)) {
    if (field.startsWith('$')) {
      unknown = true; // $and, $nor, $where, ... are not used by the service; treat as unserved
      continue;
    }
    if (!isOperatorObject(condition)) equal.add(field);
    else if (Object.keys(condition as object).every((op) => op === '$eq' || op === '$in')) equal.add(field);
    else bounded.add(field);
  }
  return { equal, bounded, unknown };
}

function servedBy(keys: IndexKeys, equal: Set<string>, bounded: Set<string>, sort: [string, number][]): boolean {
  let at = 0;
  while (at < keys.length && equal.has(keys[at]![0])) at++;
  if (at === 0 && !(keys[0] && bounded.has(keys[0][0]))) return false; // nothing bounds the scan
  const sortKeys = sort.filter(([field]) => !equal.has(field));
  let direction = 0;
  for (const [field, dir] of sortKeys) {
    const key = keys[at];
    if (!key || key[0] !== field) return false;
    const relative = Math.sign(dir) * Math.sign(key[1]);
    if (direction !== 0 && relative !== direction) return false;
    direction = relative;
    at++;
  }
  return true;
}

/** A filter with its values replaced by their types, so one line stands for every such query. */
export function shapeOf(value: unknown): unknown {
  if (value instanceof Date) return 'date';
  if (Array.isArray(value)) return value.length ? [shapeOf(value[0])] : [];
  if (typeof value === 'object' && value !== null) return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, shapeOf(v)]));
  return value === null ? null : typeof value;
}

/** Null when an index serves the query, else why not. */
export function unservedReason(query: Query, indexes: Map<string, IndexKeys[]>): string | null {
  const candidates = indexes.get(query.collection);
  if (!candidates) return `no model declares the collection "${query.collection}"`;
  const branches = Array.isArray(query.filter.$or)
    ? (query.filter.$or as Record<string, unknown>[]).map((branch) => ({
        ...Object.fromEntries(Object.entries(query.filter).filter(([k]) => k !== '$or')),
        ...branch,
      }))
    : [query.filter];
  const sort = Object.entries(query.sort).map(([f, d]) => [f, Number(d)] as [string, number]);
  for (const branch of branches) {
    const { equal, bounded, unknown } = fieldsOf(branch);
    if (unknown) return `operators this checker does not understand in ${JSON.stringify(shapeOf(branch))}`;
    if (equal.has('_id')) continue;
    if (equal.size === 0 && bounded.size === 0 && sort.length === 0 && query.single) continue;
    if (!candidates.some((keys) => servedBy(keys, equal, bounded, sort))) {
      return `no index of ${query.collection} serves filter ${JSON.stringify(shapeOf(branch))} sort ${JSON.stringify(query.sort)}`;
    }
  }
  return null;
}
