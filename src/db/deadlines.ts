// Every driver call of a connection settles within a deadline, whatever happens to the server.
// The driver bounds each step of an operation by DB_OPERATION_TIMEOUT_MS (server selection,
// checkout, socket read: database.ts), but an operation sent on a pooled connection whose server
// has just died can wait for ever: mongodb 6.20 and 6.22, a FerretDB killed (SIGKILL) while
// reads were being checked out, hung those reads in 8 of 20 rounds, past every one of those
// bounds (the driver's timeoutMS bounds them, at a cost on every command: database.ts). So each
// call races one timer here; a call still pending at its deadline fails as the driver's own
// operation timeout, which the outage mapping turns into a 503 (unavailable.ts).
import { MongoOperationTimeoutError, type Collection } from 'mongodb';

/** Collection methods that return one promise. */
const CALLS = [
  'insertOne',
  'insertMany',
  'bulkWrite',
  'updateOne',
  'updateMany',
  'replaceOne',
  'deleteOne',
  'deleteMany',
  // Not findOne: the driver's findOne reads through this.find(), whose cursor's next() is bounded below (one timer, not two).
  'findOneAndUpdate',
  'findOneAndReplace',
  'findOneAndDelete',
  'countDocuments',
  'estimatedDocumentCount',
  'distinct',
] as const;
/** Methods that return a cursor, and the cursor methods that read from the server. */
const CURSORS = ['find', 'aggregate'] as const;
const CURSOR_READS = ['toArray', 'next', 'tryNext', 'hasNext'] as const;

const BOUNDED = Symbol('calls bounded by a deadline');

type Method = (...args: unknown[]) => unknown;

/** Races `pending` against a timer of `ms`; the timer is gone once either settles. One promise, not race() and finally()'s four (every read pays it). */
export function withDeadline<T>(pending: Promise<T>, ms: number, what: string): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const timer = setTimeout(() => reject(new MongoOperationTimeoutError(`${what} did not settle within ${ms} ms`)), ms);
    pending.then(
      (value) => {
        clearTimeout(timer);
        resolve(value);
      },
      (error: unknown) => {
        clearTimeout(timer);
        reject(error);
      },
    );
  });
}

/** Wraps the collection's server calls (and its cursors' reads) so that each settles within `ms`. */
export function boundCollection<T extends Collection>(collection: T, ms: number): T {
  const methods = collection as unknown as Record<string | symbol, unknown>;
  if (methods[BOUNDED]) return collection;
  const name = collection.collectionName;
  for (const method of CALLS) {
    if (typeof methods[method] !== 'function') continue;
    const call = (methods[method] as Method).bind(collection);
    methods[method] = (...args: unknown[]) => withDeadline(call(...args) as Promise<unknown>, ms, `${method} on ${name}`);
  }
  for (const method of CURSORS) {
    if (typeof methods[method] !== 'function') continue;
    const open = (methods[method] as Method).bind(collection);
    methods[method] = (...args: unknown[]) => boundCursor(open(...args) as Record<string, unknown>, ms, `${method} on ${name}`);
  }
  methods[BOUNDED] = true;
  return collection;
}

/** The reads of a bounded cursor: shared functions that find their deadline on the cursor, so a cursor costs no closures or bound functions. */
const DEADLINE = Symbol('the deadline of a bounded cursor');
type BoundedCursor = Record<string | symbol, unknown> & { [DEADLINE]: { ms: number; what: string; reads: Record<string, Method> } };
const BOUNDED_READS = Object.fromEntries(
  CURSOR_READS.map((read) => [
    read,
    function (this: BoundedCursor, ...args: unknown[]) {
      const { ms, what, reads } = this[DEADLINE];
      return withDeadline(reads[read]!.apply(this, args) as Promise<unknown>, ms, what);
    },
  ]),
) as Record<(typeof CURSOR_READS)[number], Method>;

function boundCursor<C extends Record<string, unknown>>(cursor: C, ms: number, what: string): C {
  const bounded = cursor as unknown as BoundedCursor;
  const reads: Record<string, Method> = {};
  for (const read of CURSOR_READS) reads[read] = bounded[read] as Method;
  bounded[DEADLINE] = { ms, what, reads };
  for (const read of CURSOR_READS) bounded[read] = BOUNDED_READS[read];
  return cursor;
}
