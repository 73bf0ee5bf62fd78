// The transport-free tier: the service's domain (database, runtime, services; openDomain, the
// same wiring as the server minus HTTP) against the run's FerretDB, and procedures called
// through createCaller as tRPC's own examples do. For rules that need no HTTP; tests of wire
// bytes (statuses, bodies, headers) stay with the HTTP tests.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { CommandStartedEvent } from 'mongodb';
import { createCaller } from '../../routers/index.js';
import { loadConfig } from '../../src/config/config.js';
import { createContextInner, type Deps } from '../../src/trpc/context.js';
import { generateKeyText } from '../../src/crypto.js';
import { createLogger } from '../../src/logger.js';
import { openDomain, type ServerOptions } from '../../src/server.js';
import { testDatabaseUri, uniqueDbName, unservedQueries } from './app.js';
import { declaredIndexes } from './query-indexes.js';

export interface TestDomain {
  deps: Deps;
  /** Procedures as the user calls them (no HTTP, no per-user rate limit). */
  as(userId: string): ReturnType<typeof createCaller>;
  /** Closes the domain; fails when a query is not served by a declared index, as the HTTP tier does. */
  stop(): Promise<void>;
}

export async function startTestDomain(label: string, env: Record<string, string> = {}, opts: ServerOptions = {}): Promise<TestDomain> {
  const commands: CommandStartedEvent[] = [];
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'acp-test-domain-'));
  const config = loadConfig({
    DATA_DIR: dataDir,
    MONGODB_URI: testDatabaseUri(uniqueDbName(label)),
    ENCRYPTION_KEY: generateKeyText(),
    LOG_LEVEL: 'silent',
    ...env,
  });
  const domain = await openDomain(config, createLogger(config.log.level), {
    ...opts,
    onCommand: (event) => {
      commands.push(event);
      opts.onCommand?.(event);
    },
  });
  return {
    deps: domain.deps,
    as: (userId) => createCaller(createContextInner(domain.deps, { id: userId })),
    stop: async () => {
      await domain.close();
      fs.rmSync(dataDir, { recursive: true, force: true });
      const unserved = unservedQueries(commands, declaredIndexes(domain.deps.db.models));
      if (unserved.length > 0) throw new Error(`queries no declared index serves:\n${unserved.join('\n')}`);
    },
  };
}
