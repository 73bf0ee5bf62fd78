// Database connection. Each call makes its own mongoose connection (never the global one),
// so a test process can hold several isolated databases side by side.
import type { CommandStartedEvent } from 'mongodb';
import mongoose from 'mongoose';
import { createModels, type Models } from '../../models/index.js';
import { migrate } from './migrations.js';

export const DEFAULT_DB_NAME = 'agent_control_plane';

// Otherwise mongoose formats a stack trace (`new Error().stack`) for every query it runs, only
// to attach it to a "query was already executed" error we never cause.
mongoose.set('skipOriginalStackTraces', true);

export interface Database {
  connection: mongoose.Connection;
  models: Models;
  /** True when the server answers a ping (used by /ready). */
  ping(): Promise<boolean>;
  close(): Promise<void>;
}

export interface ConnectOptions {
  dbName?: string;
  /** Sees every command sent (the driver's command monitoring; tests check queries against indexes). */
  onCommand?: (event: CommandStartedEvent) => void;
}

export async function connectDatabase(uri: string, options: ConnectOptions = {}): Promise<Database> {
  const { dbName, onCommand } = options;
  const connection = mongoose.createConnection(uri, {
    ...(dbName ? { dbName } : hasPathDb(uri) ? {} : { dbName: DEFAULT_DB_NAME }),
    serverSelectionTimeoutMS: 10_000,
    // Indexes are created once below, explicitly, so start-up fails loudly if one is rejected.
    autoIndex: false,
    ...(onCommand ? { monitorCommands: true } : {}),
  });
  if (onCommand) connection.getClient().on('commandStarted', onCommand);
  await connection.asPromise();
  const models = createModels(connection);
  await Promise.all(Object.values(models).map((m) => m.createIndexes()));
  await migrate(connection, models);
  return {
    connection,
    models,
    async ping() {
      try {
        await connection.db!.command({ ping: 1 }, { timeoutMS: 2_000 });
        return true;
      } catch {
        return false;
      }
    },
    close: () => connection.close(),
  };
}

function hasPathDb(uri: string): boolean {
  const match = /^mongodb(?:\+srv)?:\/\/[^/]+\/([^?]*)/.exec(uri);
  return Boolean(match?.[1]);
}
