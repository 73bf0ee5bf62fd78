// Starts the real service (startServer, the same wiring as main.ts) on a free port against
// the run's FerretDB, in a database of its own.
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { MongoClient, type Collection, type CommandStartedEvent } from 'mongodb';
import { inject } from 'vitest';
import { loadConfig, type Config } from '../../src/config/config.js';
import { generateKeyText } from '../../src/crypto.js';
import { createLogger } from '../../src/logger.js';
import { resolveSandboxMachine, type SandboxMachine } from '../../src/sandbox/machine.js';
import { startServer, type RunningServer, type ServerOptions } from '../../src/server.js';
import { declaredIndexes, queriesOf, unservedReason } from './query-indexes.js';
import { LLM_TEST_ENV } from './llm-test-env.js';
import { sandboxHostPorts } from './sandbox-host-ports.js';
import { writeSpecsFile } from './specs.js';

export interface TestApp {
  url: string;
  server: RunningServer;
  dbName: string;
  /** Mints a new API key for a user (users need no other registration). */
  keyFor(userId: string): Promise<string>;
  /** Raw access to the database, for checks such as "no secret in clear" (its own client: not the service's commands). */
  rawCollection(name: string): Collection;
  /** Every database command the service has sent so far. */
  commands: CommandStartedEvent[];
  /** Stops the service; its sandboxes are removed too unless keepSandboxes (restart tests). */
  stop(opts?: { keepSandboxes?: boolean }): Promise<void>;
}

/**
 * The process runtime's isolation and limits, found once per worker and configuration: each
 * service would run the same trial sandbox at its start (a test that reads the start-up log still
 * gets its own).
 */
const machines = new Map<string, Promise<SandboxMachine>>();
export function machineFor(config: Config): Promise<SandboxMachine> {
  const { isolation, bwrapPath, pastaPath } = config.sandbox;
  const key = JSON.stringify([isolation, bwrapPath, pastaPath, config.cacheDir]);
  let found = machines.get(key);
  if (!found) machines.set(key, (found = resolveSandboxMachine(config, createLogger('silent'))));
  return found;
}

export function testDatabaseUri(dbName: string): string {
  return `${inject('mongoUri').replace(/\/$/, '')}/${dbName}`;
}

export function uniqueDbName(label: string): string {
  return `t_${label.replace(/[^A-Za-z0-9]/g, '_').slice(0, 30)}_${crypto.randomBytes(4).toString('hex')}`;
}

/** Test apps started and not stopped yet, by label (test/helpers/leak-check.ts fails a file that leaves one). */
export const liveTestApps = new Map<object, string>();

/**
 * opts.dbName: share a database with another app (a second replica). opts.logLines: collect the
 * service's log lines (JSON text) there, at LOG_LEVEL (default debug then). opts.specs: the
 * sandbox specs (SANDBOX_SPECS_FILE, written in the app's data folder). Every command the
 * service sends is recorded; stop() fails when a query is not served by a declared index
 * (helpers/query-indexes.ts), so each test checks the queries of the routes it exercises.
 */
export async function startTestApp(
  label: string,
  env: Record<string, string> = {},
  opts: ServerOptions & { dbName?: string; logLines?: string[]; specs?: object[] } = {},
): Promise<TestApp> {
  const { dbName = uniqueDbName(label), logLines, specs, ...serverOptions } = opts;
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'acp-test-data-'));
  try {
    const specsEnv: Record<string, string> = specs ? { SANDBOX_SPECS_FILE: writeSpecsFile(dataDir, specs) } : {};
    return await startInDataDir(label, { ...specsEnv, ...env }, dbName, dataDir, serverOptions, logLines);
  } catch (err) {
    // Tests that expect start-up to fail must not leave the data directory behind.
    fs.rmSync(dataDir, { recursive: true, force: true });
    throw err;
  }
}

async function startInDataDir(
  label: string,
  env: Record<string, string>,
  dbName: string,
  dataDir: string,
  serverOptions: ServerOptions,
  logLines: string[] | undefined,
): Promise<TestApp> {
  const commands: CommandStartedEvent[] = [];
  const config = loadConfig({
    PORT: '0',
    DATA_DIR: dataDir,
    MONGODB_URI: testDatabaseUri(dbName),
    ENCRYPTION_KEY: generateKeyText(),
    LOG_LEVEL: logLines ? 'debug' : 'silent',
    // No web UI unless a test asks for one: the default (Agent Canvas) is fetched at start.
    ...(env.WEB_UI || env.WEB_UI_DIR ? {} : { WEB_UI: 'none' }),
    // The loopback fakes running now (stub LLM, fake git host), which sandboxes must reach.
    SANDBOX_HOST_PORTS: sandboxHostPorts(),
    ...LLM_TEST_ENV,
    ...env,
  });
  const lines = logLines;
  const destination = lines ? { write: (line: string) => void lines.push(line) } : undefined;
  const server = await startServer(config, createLogger(config.log.level, destination), {
    ...(lines || config.sandbox.runtime !== 'process' ? {} : { sandboxMachine: await machineFor(config) }),
    ...serverOptions,
    onCommand: (event) => {
      commands.push(event);
      serverOptions.onCommand?.(event);
    },
  });
  const token = {};
  liveTestApps.set(token, label);
  let raw: MongoClient | undefined;
  const rawCollection = (name: string) => {
    raw ??= new MongoClient(config.mongo.uri!);
    return raw.db().collection(name);
  };
  return {
    url: server.url,
    server,
    dbName,
    commands,
    keyFor: async (userId) => (await server.deps.services.apiKeys.create(userId)).key,
    rawCollection,
    stop: async (opts = {}) => {
      liveTestApps.delete(token);
      // No warm-pool refill may start a sandbox after the list below is taken.
      await server.deps.services.sandboxLifecycle.stop();
      // Sandbox processes outlive the service by design; tests must not leave any behind.
      const removeSandboxes = async () => {
        const sandboxes = await rawCollection('sandboxes')
          .find({})
          .toArray()
          .catch(() => []);
        for (const s of sandboxes) await server.deps.runtime.remove(String(s._id)).catch(() => {});
      };
      if (!opts.keepSandboxes) await removeSandboxes();
      await server.stop();
      // Again once it has stopped (its runtime starts nothing more): a start under way may have
      // launched a sandbox after the first list.
      if (!opts.keepSandboxes) await removeSandboxes();
      await raw?.close();
      fs.rmSync(dataDir, { recursive: true, force: true });
      const unserved = unservedQueries(commands, declaredIndexes(server.deps.db.models));
      if (unserved.length > 0) throw new Error(`queries no declared index serves:\n${unserved.join('\n')}`);
    },
  };
}

/** One line per distinct unserved query shape. */
export function unservedQueries(commands: CommandStartedEvent[], indexes: ReturnType<typeof declaredIndexes>): string[] {
  const found = new Set<string>();
  for (const event of commands) {
    for (const query of queriesOf(event)) {
      const reason = unservedReason(query, indexes);
      if (reason) found.add(`${query.command}: ${reason}`);
    }
  }
  return [...found];
}

/** fetch with JSON in and out, returning status, headers and the parsed body. */
export async function call(
  app: { url: string },
  method: string,
  urlPath: string,
  opts: { key?: string; body?: unknown; rawBody?: string; headers?: Record<string, string> } = {},
) {
  const headers: Record<string, string> = { ...(opts.headers ?? {}) };
  if (opts.key) headers['x-session-api-key'] = opts.key;
  // A Buffer body makes fetch send no content type of its own (a string would be text/plain).
  let body: string | Buffer | undefined = opts.rawBody === undefined ? undefined : Buffer.from(opts.rawBody);
  if (opts.body !== undefined) {
    body = JSON.stringify(opts.body);
    headers['content-type'] ??= 'application/json';
  }
  const response = await fetch(app.url + urlPath, { method, headers, body });
  const text = await response.text();
  let json: unknown = undefined;
  try {
    json = text ? JSON.parse(text) : undefined;
  } catch {
    json = undefined;
  }
  return { status: response.status, headers: response.headers, text, body: json as any };
}
