// Database connection. Each call makes its own mongoose connection (never the global one),
// so a test process can hold several isolated databases side by side.
//
// Outages are bounded: each step of an operation (server selection, connection checkout, the
// socket read) has the bound as its deadline, and a failed read is not retried by the driver
// (the client retries after Retry-After), so a stalled server answers within the bound;
// nothing is buffered behind a dead
// connection (bufferCommands off), and the failure is one domain error
// (src/db/unavailable.ts). The driver reconnects by itself when the server is back. One case
// escapes those bounds (a call on a connection whose server just died), so every call also
// has a deadline of its own (deadlines.ts).
// Not the driver's timeoutMS (one deadline for the whole operation): it sends maxTimeMS with
// every command and arms timers per operation, which cost a quarter of a settings read's CPU
// in the service and in FerretDB (docs/performance.md).
//
// On FerretDB (its buildInfo says so) every update goes through the write gate (write-gate.ts),
// which makes single-document updates atomic as they are on MongoDB.
import type { CommandFailedEvent, CommandStartedEvent, CommandSucceededEvent, CreateIndexesOptions } from 'mongodb';
import mongoose from 'mongoose';
import { AppError } from '../errors.js';
import { createModels, RecordListSchema, WriteLockSchema, type Models } from '../../models/index.js';
import { interceptCollections } from '../library-internals.js';
import { boundCollection } from './deadlines.js';
import { assertGated, installWriteGate } from './write-gate/gated-collections.js';
import { migrate } from './migrations.js';
import { createTables, type ModelsAndTables } from './record-lists/record-tables.js';
import { isDatabaseUnavailable, mapUnavailableErrors } from './unavailable.js';
import { WriteGate, type WriteLockDoc } from './write-gate/write-gate.js';

export const DEFAULT_DB_NAME = 'agent_control_plane';
const READY_PING_TIMEOUT_MS = 2_000;
/** What a call may take beyond the driver's per-step bound before its deadline fails it (deadlines.ts). */
const DEADLINE_MARGIN_MS = 1_000;
/** How long start-up waits out a database that answers "unavailable" (busy, restarting) before it fails. */
const START_UP_PATIENCE_MS = 30_000;

// Otherwise mongoose formats a stack trace (`new Error().stack`) for every query it runs, only
// to attach it to a "query was already executed" error we never cause.
mongoose.set('skipOriginalStackTraces', true);

export interface Database extends ModelsAndTables {
  connection: mongoose.Connection;
  /** The embedded FerretDB's write gate (write-gate.ts); null on MongoDB, where single-document updates are atomic. */
  writeGate: WriteGate | null;
  /** True when the server answers a ping (used by /ready). */
  ping(): Promise<boolean>;
  close(): Promise<void>;
}

export interface DatabaseOptions {
  /** Database name when the URI has none (default agent_control_plane). */
  dbName?: string | undefined;
  /** Bound of one database operation (DB_OPERATION_TIMEOUT_MS). */
  operationTimeoutMs: number;
  /** Sees every command sent (the driver's command monitoring; tests check queries against indexes). */
  onCommand?: ((event: CommandStartedEvent) => void) | undefined;
  /** Told each command's collection, name and duration (DB_COMMAND_METRICS: where the database's time goes). */
  onCommandDone?: ((command: TimedCommand, seconds: number) => void) | undefined;
}

/** A command as DB_COMMAND_METRICS counts it: the filter's field names, never its values. */
export interface TimedCommand {
  collection: string;
  command: string;
  /** The filter's top-level field names, sorted and joined by commas ('' for none). */
  filter: string;
}

export async function connectDatabase(uri: string, options: DatabaseOptions): Promise<Database> {
  const bound = options.operationTimeoutMs;
  const { onCommand, onCommandDone } = options;
  const connection = mongoose.createConnection(uri, {
    ...(options.dbName ? { dbName: options.dbName } : hasPathDb(uri) ? {} : { dbName: DEFAULT_DB_NAME }),
    serverSelectionTimeoutMS: bound,
    waitQueueTimeoutMS: bound,
    socketTimeoutMS: bound,
    retryReads: false,
    // Notice a restarted server soon (the default is 10 s).
    heartbeatFrequencyMS: 2_000,
    bufferCommands: false,
    // Indexes are created once below, explicitly, so start-up fails loudly if one is rejected.
    autoIndex: false,
    // Collections come with their first write (or unique index): creating all ~20 at every start
    // took a third of a start's database work, on the embedded build a table each.
    autoCreate: false,
    ...(onCommand || onCommandDone ? { monitorCommands: true } : {}),
  });
  connection.plugin(mapUnavailableErrors);
  if (onCommand) connection.getClient().on('commandStarted', onCommand);
  if (onCommandDone) timeCommands(connection, onCommandDone);
  await connection.asPromise();
  // Before the write gate's: a gated write waits for its turn (bounded there), then its call is bounded here.
  interceptCollections(connection, (collection) => boundCollection(collection, bound + DEADLINE_MARGIN_MS));
  // FerretDB answers buildInfo with its own version; MongoDB has no such field.
  const { ferretdbVersion } = await connection.db!.admin().command({ buildInfo: 1 });
  const ferretDb = ferretdbVersion !== undefined;
  // FerretDB v1 (the embedded build) serves no query from an index but _id's; later versions do.
  const onlyUniqueIndexes = ferretDb && /^v?1\./.test(String(ferretdbVersion));
  const lockCollection = WriteLockSchema.get('collection') as string;
  // The lists are written only inside exclusive sections of their records' lanes (record-lists.ts).
  const ungated = [lockCollection, RecordListSchema.get('collection') as string];
  let writeGate: WriteGate | null = null;
  if (ferretDb) {
    const locks = connection.db!.collection<WriteLockDoc>(lockCollection);
    writeGate = new WriteGate(locks, { operationTimeoutMs: bound });
    installWriteGate(connection, writeGate, ungated);
  }
  const models = createModels(connection);
  if (writeGate) assertGated(models, ungated);
  // The stores' record tables: with the gate, the listed ones (record-lists/record-tables.ts).
  const tables = createTables(models, writeGate);
  // Both are idempotent (replicas run them side by side), so a database too slow for one
  // operation's bound at this moment delays the start instead of failing it.
  await whileUnavailable(async () => {
    await Promise.all(Object.values(models).map((m) => (onlyUniqueIndexes ? createUniqueIndexes(m) : m.createIndexes())));
    await migrate(connection, models, tables);
  });
  return {
    connection,
    models,
    tables,
    writeGate,
    async ping() {
      try {
        await connection.db!.command({ ping: 1 }, { timeoutMS: Math.min(bound, READY_PING_TIMEOUT_MS) });
        return true;
      } catch {
        return false;
      }
    },
    close: async () => {
      await writeGate?.close();
      await connection.close();
    },
  };
}

/** Runs a start-up step again while the database answers "unavailable", for up to START_UP_PATIENCE_MS. */
async function whileUnavailable(step: () => Promise<void>): Promise<void> {
  const giveUpAt = Date.now() + START_UP_PATIENCE_MS;
  for (let pause = 250; ; pause = Math.min(pause * 2, 2_000)) {
    try {
      return await step();
    } catch (error) {
      const unavailable = isDatabaseUnavailable(error) || (error instanceof AppError && error.reason === 'database_unavailable');
      if (!unavailable || Date.now() + pause > giveUpAt) throw error;
      await new Promise((resolve) => setTimeout(resolve, pause));
    }
  }
}

function hasPathDb(uri: string): boolean {
  const match = /^mongodb(?:\+srv)?:\/\/[^/]+\/([^?]*)/.exec(uri);
  return Boolean(match?.[1]);
}

/**
 * FerretDB v1 answers every query from its `_id` index or a scan (scripts/build-ferretdb.sh), so
 * an index is worth its upkeep on every write only when it enforces uniqueness.
 */
async function createUniqueIndexes(model: Models[keyof Models]): Promise<void> {
  for (const [fields, options] of model.schema.indexes()) {
    if (options?.unique) await model.collection.createIndex(fields as Record<string, 1 | -1>, options as CreateIndexesOptions);
  }
}

/** Reports each command's duration by collection and filter shape (getMore names its collection in `collection`). */
function timeCommands(connection: mongoose.Connection, done: NonNullable<DatabaseOptions['onCommandDone']>): void {
  const client = connection.getClient();
  const started = new Map<number, TimedCommand>();
  client.on('commandStarted', ({ command, commandName, requestId }) => {
    const target = command[commandName] as unknown;
    const collection = typeof target === 'string' ? target : typeof command.collection === 'string' ? command.collection : '';
    started.set(requestId, { collection, command: commandName, filter: filterShape(command) });
  });
  const finish = (event: CommandSucceededEvent | CommandFailedEvent) => {
    const timed = started.get(event.requestId);
    if (!timed) return;
    started.delete(event.requestId);
    done(timed, event.duration / 1000);
  };
  client.on('commandSucceeded', finish);
  client.on('commandFailed', finish);
}

function filterShape(command: Record<string, unknown>): string {
  const first = (list: unknown) => (Array.isArray(list) ? (list[0] as Record<string, unknown> | undefined) : undefined);
  const match = first(command.pipeline)?.$match;
  const filter = command.filter ?? command.query ?? first(command.updates)?.q ?? first(command.deletes)?.q ?? match;
  return filter && typeof filter === 'object' ? Object.keys(filter).sort().join(',') : '';
}
