// The transport-free tier: the service's domain (database, runtime, services; openDomain, the
// same wiring as the server minus HTTP) against the run's FerretDB, and procedures called
// through createCaller as tRPC's own examples do. For rules that need no HTTP; tests of wire
// bytes (statuses, bodies, headers) stay with the HTTP tests.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { TRPCError } from '@trpc/server';
import type { CommandStartedEvent } from 'mongodb';
import { createCaller } from '../../routers/index.js';
import { loadConfig } from '../../src/config/config.js';
import { createContextInner, type Deps } from '../../src/trpc/context.js';
import { generateKeyText } from '../../src/crypto.js';
import { appErrorOf, inputIssuesOf, type ErrorReason, type InputIssue } from '../../src/errors.js';
import { createLogger } from '../../src/logger.js';
import { openDomain, type ServerOptions } from '../../src/server.js';
import { machineFor, testDatabaseUri, uniqueDbName, unservedQueries } from './app.js';
import { LLM_TEST_ENV } from './llm-test-env.js';
import { declaredIndexes } from './query-indexes.js';

export interface TestDomain {
  deps: Deps;
  /** Procedures as the user calls them (no HTTP, no per-user rate limit). */
  as(userId: string): ReturnType<typeof createCaller>;
  /** Procedures as a new API key of the user calls them (ctx.user.keyId set, as the key's authentication gives it). */
  withNewKey(userId: string): Promise<ReturnType<typeof createCaller>>;
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
    ...LLM_TEST_ENV,
    ...env,
  });
  const domain = await openDomain(config, createLogger(config.log.level), {
    // The process runtime's isolation and limits, found once per worker as the HTTP tier does
    // (else every domain runs a trial sandbox at its start).
    ...(config.sandbox.runtime === 'process' ? { sandboxMachine: await machineFor(config) } : {}),
    ...opts,
    onCommand: (event) => {
      commands.push(event);
      opts.onCommand?.(event);
    },
  });
  return {
    deps: domain.deps,
    as: (userId) => createCaller(createContextInner(domain.deps, { id: userId })),
    withNewKey: async (userId) => {
      const { key } = await domain.deps.services.apiKeys.create(userId);
      const proven = await domain.deps.services.apiKeys.authenticateApiKey(key);
      if (!proven) throw new Error('a new API key did not authenticate');
      return createCaller(createContextInner(domain.deps, { id: proven.userId, keyId: proven.keyId }));
    },
    stop: async () => {
      await domain.close();
      fs.rmSync(dataDir, { recursive: true, force: true });
      const unserved = unservedQueries(commands, declaredIndexes(domain.deps.db.models));
      if (unserved.length > 0) throw new Error(`queries no declared index serves:\n${unserved.join('\n')}`);
    },
  };
}

export interface Refusal {
  code: TRPCError['code'];
  message: string;
  /** The domain's reason (AppError), when the failure has one. */
  reason: ErrorReason | undefined;
  /** The ids or names the failure is about (AppError fields). */
  fields: Record<string, string>;
  /** The paths of the input's fields named by a validation failure (BAD_REQUEST), else []. */
  paths: PropertyKey[][];
  /** That failure's issues as the schema gave them (e.g. the keys of unrecognized_keys), else []. */
  issues: InputIssue[];
}

/** How a procedure call failed; fails the test when it succeeded or failed other than as a TRPCError. */
export async function refusal(call: Promise<unknown>): Promise<Refusal> {
  let result: unknown;
  try {
    result = await call;
  } catch (error) {
    if (!(error instanceof TRPCError)) throw error;
    const issues = inputIssuesOf(error) ?? [];
    const paths = issues.map((issue) => [...(issue.path ?? [])]);
    const appError = appErrorOf(error);
    return { code: error.code, message: error.message, reason: appError?.reason, fields: appError?.fields ?? {}, paths, issues };
  }
  throw new Error(`expected a refusal, got ${JSON.stringify(result)}`);
}
