// The embedded default database: a local FerretDB v1 (SQLite backend) that the service
// builds on first use (scripts/build-ferretdb.sh, cached outside the work tree) and runs
// as a child process, with its data under DATA_DIR so it survives restarts.
//
// DATA_DIR/ferretdb/server.json records the running server (pid, port). Whoever finds a
// live server there reuses it: the CLI works while the service runs, and a service that
// was killed with SIGKILL picks up its orphaned FerretDB instead of starting a second one.
import { spawn, execFile, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { MongoClient } from 'mongodb';
import type { Logger } from '../logger.js';
import { freePort, isProcessAlive, PACKAGE_ROOT, stopChild } from '../processes.js';
import { superviseFerretDb } from './ferretdb-supervisor.js';

export interface EmbeddedMongo {
  uri: string;
  /** Stops the server if this process started it; a reused server keeps running. */
  stop(): Promise<void>;
}

interface ServerRecord {
  pid: number;
  port: number;
}

/** Builds FerretDB into the cache if needed and returns the binary path. */
export async function ensureFerretDbBinary(cacheDir: string, log: Logger): Promise<string> {
  const script = path.join(PACKAGE_ROOT, 'scripts', 'build-ferretdb.sh');
  return new Promise((resolve, reject) => {
    const child = execFile(
      'bash',
      [script],
      {
        env: { ...process.env, AGENT_CP_CACHE_DIR: cacheDir },
        maxBuffer: 1024 * 1024,
      },
      (error, stdout) => {
        if (error) return reject(new Error(`building FerretDB failed: ${error.message}`));
        const binary = stdout.trim().split('\n').pop() ?? '';
        if (!fs.existsSync(binary)) return reject(new Error(`FerretDB build printed no binary path`));
        resolve(binary);
      },
    );
    child.stderr?.on('data', (chunk: Buffer) => {
      for (const line of chunk.toString().split('\n')) if (line.trim()) log.info(line.trim());
    });
  });
}

export interface StartOptions {
  binary: string;
  /** Directory holding the SQLite files (one per database). */
  dbDir: string;
  stateDir: string;
  port?: number;
  log: Logger;
}

/** Starts a FerretDB child process and waits until it answers a ping. */
export async function startFerretDb(options: StartOptions): Promise<{ uri: string; port: number; child: ChildProcess }> {
  fs.mkdirSync(options.dbDir, { recursive: true });
  fs.mkdirSync(options.stateDir, { recursive: true });
  const port = options.port || (await freePort());
  const child = spawn(
    options.binary,
    [
      '--handler=sqlite',
      `--sqlite-url=file:${options.dbDir.replace(/\/?$/, '/')}`,
      `--listen-addr=127.0.0.1:${port}`,
      `--state-dir=${options.stateDir}`,
      '--telemetry=disable',
      '--debug-addr=-',
      // Every driver disconnect logs a multi-line warning (endSessions is unsupported).
      '--log-level=error',
    ],
    { env: { ...process.env, DO_NOT_TRACK: '1' }, stdio: ['ignore', 'ignore', 'pipe'] },
  );
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr = (stderr + chunk.toString()).slice(-4000);
  });
  const exited = new Promise<never>((_, reject) =>
    child.once('exit', (code) => reject(new Error(`FerretDB exited during start-up (code ${code}): ${stderr.trim()}`))),
  );
  const uri = `mongodb://127.0.0.1:${port}/`;
  try {
    await Promise.race([waitForPing(uri, 30_000), exited]);
  } catch (error) {
    exited.catch(() => {});
    await stopChild(child);
    throw error;
  }
  child.removeAllListeners('exit');
  options.log.debug({ port, pid: child.pid }, 'FerretDB ready');
  return { uri, port, child };
}

/**
 * The embedded default: reuse a live server recorded in DATA_DIR, else start one. The
 * service (register) supervises it: a server that dies is started again on the same port
 * and data directory, so the driver reconnects by itself.
 */
export async function startEmbeddedMongo(opts: {
  dataDir: string;
  cacheDir: string;
  port: number;
  log: Logger;
  /** Record and supervise the server so later processes reuse it (the service does; the CLI does not). */
  register: boolean;
}): Promise<EmbeddedMongo> {
  const root = path.join(opts.dataDir, 'ferretdb');
  const recordFile = path.join(root, 'server.json');
  const existing = readRecord(recordFile);
  const log = opts.log.child({ component: 'embedded-ferretdb' });
  let binary: string | undefined;
  const start = async (port: number) => {
    binary ??= await ensureFerretDbBinary(opts.cacheDir, log);
    const started = await startFerretDb({ binary, dbDir: path.join(root, 'sqlite'), stateDir: path.join(root, 'state'), port, log });
    if (opts.register) fs.writeFileSync(recordFile, JSON.stringify({ pid: started.child.pid!, port: started.port } satisfies ServerRecord));
    return started;
  };

  if (existing && isProcessAlive(existing.pid)) {
    const uri = `mongodb://127.0.0.1:${existing.port}/`;
    if (await ping(uri, 2_000)) {
      log.info({ port: existing.port }, 'reusing the running embedded FerretDB');
      if (!opts.register) return { uri, stop: async () => {} };
      const supervisor = superviseFerretDb({ orphanPid: existing.pid }, () => start(existing.port).then((s) => s.child), log);
      // A reused server is not ours to stop; one this process restarted is.
      return { uri, stop: () => supervisor.stop() };
    }
  }
  log.info('starting the embedded FerretDB (first run builds it from the Go module proxy)');
  const { uri, port, child } = await start(opts.port);
  const supervisor = opts.register ? superviseFerretDb({ child }, () => start(port).then((s) => s.child), log) : null;
  return {
    uri,
    stop: async () => {
      if (supervisor) await supervisor.stop();
      else await stopChild(child);
      if (opts.register && !isProcessAlive(readRecord(recordFile)?.pid ?? -1)) fs.rmSync(recordFile, { force: true });
    },
  };
}

async function ping(uri: string, timeoutMs: number): Promise<boolean> {
  const client = new MongoClient(uri, { serverSelectionTimeoutMS: timeoutMs, connectTimeoutMS: timeoutMs });
  try {
    await client.connect();
    await client.db('admin').command({ ping: 1 });
    return true;
  } catch {
    return false;
  } finally {
    await client.close().catch(() => {});
  }
}

async function waitForPing(uri: string, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await ping(uri, 1_000)) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`FerretDB did not answer at ${uri} within ${timeoutMs} ms`);
}

function readRecord(file: string): ServerRecord | undefined {
  try {
    const parsed = JSON.parse(fs.readFileSync(file, 'utf8')) as ServerRecord;
    return Number.isInteger(parsed.pid) && Number.isInteger(parsed.port) ? parsed : undefined;
  } catch {
    return undefined;
  }
}
