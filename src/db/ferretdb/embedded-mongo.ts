// The embedded default database: a local FerretDB v1 (SQLite backend) that the service
// builds on first use (scripts/build-ferretdb.sh, cached outside the work tree) and runs
// as a child process, with its data under DATA_DIR so it survives restarts.
//
// It listens on a Unix socket inside DATA_DIR and on no TCP port: FerretDB has no
// authentication, and a sandbox shares the machine's loopback network, so a port would let
// code in any sandbox read and write every user's records. Sandboxes never see DATA_DIR
// (src/sandbox/isolation/isolation.ts), so they cannot reach the socket.
//
// DATA_DIR/ferretdb/server.json records the running server (pid, socket). Whoever finds a
// live server there reuses it: the CLI works while the service runs, and a service that
// was killed with SIGKILL picks up its orphaned FerretDB instead of starting a second one.
import { spawn, execFile, type ChildProcess } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { MongoClient } from 'mongodb';
import type { Logger } from '../../logger.js';
import { freePort, isProcessAlive, PACKAGE_ROOT, stopChild } from '../../processes.js';
import { superviseFerretDb } from './ferretdb-supervisor.js';

export interface EmbeddedMongo {
  uri: string;
  /** Stops the server if this process started it; a reused server keeps running. */
  stop(): Promise<void>;
}

interface ServerRecord {
  pid: number;
  socket: string;
}

/** Where a FerretDB listens: a loopback TCP port (tests, the bench) or a Unix socket (the embedded default). */
export type FerretDbListen = { port?: number } | { socket: string };

/**
 * Builds FerretDB into the cache if needed and returns the binary path. A build (first start
 * on a machine) says once what it does and how long it takes, then how it went; the Go
 * toolchain's own lines only appear when it fails.
 */
export async function ensureFerretDbBinary(cacheDir: string, log: Logger): Promise<string> {
  const script = path.join(PACKAGE_ROOT, 'scripts', 'build-ferretdb.sh');
  const started = Date.now();
  let building = false;
  let stderr = '';
  return new Promise((resolve, reject) => {
    const child = execFile(
      'bash',
      [script],
      {
        env: { ...process.env, AGENT_CP_CACHE_DIR: cacheDir },
        maxBuffer: 1024 * 1024,
      },
      (error, stdout) => {
        const tail = stderr.trim().split('\n').slice(-5).join(' | ');
        if (error) return reject(new Error(`building FerretDB failed: ${error.message.split('\n')[0]}: ${tail}`));
        const binary = stdout.trim().split('\n').pop() ?? '';
        if (!fs.existsSync(binary)) return reject(new Error(`FerretDB build printed no binary path`));
        if (building) log.info({ seconds: Math.round((Date.now() - started) / 1000), binary }, 'built the embedded database');
        resolve(binary);
      },
    );
    child.stderr?.on('data', (chunk: Buffer) => {
      stderr = (stderr + chunk.toString()).slice(-8000);
      if (!building) {
        building = true;
        log.info('building the embedded database (FerretDB, from the Go module proxy) for the first start: about 1-3 minutes');
        log.flush();
      }
    });
  });
}

export interface StartOptions {
  binary: string;
  /** Directory holding the SQLite files (one per database). */
  dbDir: string;
  stateDir: string;
  /** Default: a free loopback port. */
  listen?: FerretDbListen;
  log: Logger;
  /** Go's GOGC for the server (default Go's 100): higher trades memory for less collector CPU. */
  goGc?: number;
}

/** Starts a FerretDB child process and waits until it answers a ping. */
export async function startFerretDb(options: StartOptions): Promise<{ uri: string; child: ChildProcess }> {
  fs.mkdirSync(options.dbDir, { recursive: true, mode: 0o700 });
  fs.mkdirSync(options.stateDir, { recursive: true, mode: 0o700 });
  const listen = options.listen ?? {};
  let listenArgs: string[];
  let uri: string;
  if ('socket' in listen) {
    // A socket left by a killed server would make the new one fail to listen (EADDRINUSE).
    fs.rmSync(listen.socket, { force: true });
    listenArgs = ['--listen-addr=', `--listen-unix=${listen.socket}`];
    uri = socketUri(listen.socket);
  } else {
    const port = listen.port || (await freePort());
    listenArgs = [`--listen-addr=127.0.0.1:${port}`];
    uri = `mongodb://127.0.0.1:${port}/`;
  }
  const child = spawn(
    options.binary,
    [
      '--handler=sqlite',
      `--sqlite-url=file:${options.dbDir.replace(/\/?$/, '/')}`,
      ...listenArgs,
      `--state-dir=${options.stateDir}`,
      '--telemetry=disable',
      '--debug-addr=-',
      // Every driver disconnect logs a multi-line warning (endSessions is unsupported).
      '--log-level=error',
    ],
    {
      env: { ...process.env, DO_NOT_TRACK: '1', ...(options.goGc ? { GOGC: String(options.goGc) } : {}) },
      stdio: ['ignore', 'ignore', 'pipe'],
    },
  );
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr = (stderr + chunk.toString()).slice(-4000);
  });
  const exited = new Promise<never>((_, reject) =>
    child.once('exit', (code) => reject(new Error(`FerretDB exited during start-up (code ${code}): ${stderr.trim()}`))),
  );
  try {
    await Promise.race([waitForPing(uri, 30_000), exited]);
  } catch (error) {
    exited.catch(() => {});
    await stopChild(child);
    throw error;
  }
  child.removeAllListeners('exit');
  options.log.debug({ listen, pid: child.pid }, 'FerretDB ready');
  return { uri, child };
}

/** The driver's address of a Unix socket: the path percent-encoded as the host. */
export function socketUri(socket: string): string {
  return `mongodb://${encodeURIComponent(socket)}/`;
}

// sun_path holds 108 bytes; a longer DATA_DIR path cannot hold the socket.
const MAX_SOCKET_PATH = 100;

/**
 * The embedded server's socket: in DATA_DIR/ferretdb, or, when that path is too long for a
 * socket, in an owner-only folder under the system's temporary directory named after DATA_DIR.
 */
export function embeddedSocketPath(root: string): string {
  const inside = path.join(root, 'ferretdb.sock');
  if (Buffer.byteLength(inside) <= MAX_SOCKET_PATH) return inside;
  const uid = process.getuid?.() ?? 0;
  const dir = path.join(os.tmpdir(), `acp-ferretdb-${uid}-${crypto.createHash('sha256').update(root).digest('hex').slice(0, 16)}`);
  fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
  const stat = fs.lstatSync(dir);
  // Someone else's folder (or a link) at that name could observe or replace the socket.
  if (!stat.isDirectory() || stat.uid !== uid || (stat.mode & 0o077) !== 0) {
    throw new Error(`${dir} is not an owner-only folder of this user; remove it or use a shorter DATA_DIR`);
  }
  return path.join(dir, 'ferretdb.sock');
}

/**
 * The embedded default: reuse a live server recorded in DATA_DIR, else start one. The
 * service (register) supervises it: a server that dies is started again on the same socket
 * and data directory, so the driver reconnects by itself.
 */
export async function startEmbeddedMongo(opts: {
  dataDir: string;
  cacheDir: string;
  log: Logger;
  /** Record and supervise the server so later processes reuse it (the service does; the CLI does not). */
  register: boolean;
}): Promise<EmbeddedMongo> {
  const root = path.join(opts.dataDir, 'ferretdb');
  fs.mkdirSync(root, { recursive: true, mode: 0o700 });
  fs.chmodSync(root, 0o700);
  const socket = embeddedSocketPath(root);
  const recordFile = path.join(root, 'server.json');
  const existing = readRecord(recordFile);
  const log = opts.log.child({ component: 'embedded-ferretdb' });
  let binary: string | undefined;
  const start = async () => {
    binary ??= await ensureFerretDbBinary(opts.cacheDir, log);
    const started = await startFerretDb({
      binary,
      dbDir: path.join(root, 'sqlite'),
      stateDir: path.join(root, 'state'),
      listen: { socket },
      log,
    });
    if (opts.register)
      fs.writeFileSync(recordFile, JSON.stringify({ pid: started.child.pid!, socket } satisfies ServerRecord), { mode: 0o600 });
    return started;
  };

  if (existing && isProcessAlive(existing.pid)) {
    const uri = socketUri(existing.socket);
    if (existing.socket === socket && (await ping(uri, 2_000))) {
      log.info({ socket }, 'reusing the running embedded FerretDB');
      if (!opts.register) return { uri, stop: async () => {} };
      const supervisor = superviseFerretDb({ orphanPid: existing.pid }, () => start().then((s) => s.child), log);
      // A reused server is not ours to stop; one this process restarted is.
      return { uri, stop: () => supervisor.stop() };
    }
  }
  await stopStaleServer(root, log);
  log.info('starting the embedded FerretDB (first run builds it from the Go module proxy)');
  const { uri, child } = await start();
  const supervisor = opts.register ? superviseFerretDb({ child }, () => start().then((s) => s.child), log) : null;
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
    return Number.isInteger(parsed.pid) && typeof parsed.socket === 'string' ? parsed : undefined;
  } catch {
    return undefined;
  }
}

/**
 * A server this data directory recorded that cannot be reused (one started by an earlier
 * version on a TCP port, or on another socket path) must not go on serving the same files
 * beside a new one: stop it first.
 */
async function stopStaleServer(root: string, log: Logger): Promise<void> {
  let pid: unknown;
  try {
    pid = (JSON.parse(fs.readFileSync(path.join(root, 'server.json'), 'utf8')) as { pid?: unknown }).pid;
  } catch {
    return;
  }
  if (typeof pid !== 'number' || !Number.isInteger(pid) || !isProcessAlive(pid)) return;
  const command = fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8');
  if (!command.includes('ferretdb') || !command.includes(root)) return; // the pid was reused by something else
  log.warn({ pid }, 'stopping the embedded FerretDB an earlier start left listening elsewhere');
  process.kill(pid, 'SIGTERM');
  const deadline = Date.now() + 10_000;
  while (isProcessAlive(pid) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
  if (isProcessAlive(pid)) process.kill(pid, 'SIGKILL');
}
