// General process helpers: the package root, a free loopback port, whether a process runs,
// running a setup script, and stopping a child process (used by the embedded FerretDB, the process sandbox runtime, the bench and tests).
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** The directory holding package.json (the repository, or /app in the image). */
export const PACKAGE_ROOT = findPackageRoot(path.dirname(fileURLToPath(import.meta.url)));

export interface SetupResult {
  /** The script's last line of stdout (what it provides), or null when it failed. */
  provided: string | null;
  /** Its last `ERROR: …` line on stderr (or its exit code) when it failed. */
  failure: string | null;
}

/**
 * Runs one of scripts/setup-*.sh, which print what they provide as their last line of stdout
 * and their progress on stderr. `onWork` is called once, when stderr first matches `work`
 * (the script fetching or installing: worth a log line; a cached run says nothing).
 */
export function runSetupScript(
  script: string,
  args: string[],
  env: NodeJS.ProcessEnv,
  progress: { work: RegExp; onWork: () => void } | null = null,
): Promise<SetupResult> {
  return new Promise((resolve) => {
    const child = spawn('bash', [path.join(PACKAGE_ROOT, 'scripts', script), ...args], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    let working = false;
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk));
    child.stderr.on('data', (chunk: Buffer) => {
      stderr = (stderr + chunk.toString()).slice(-8000);
      if (progress && !working && progress.work.test(stderr)) {
        working = true;
        progress.onWork();
      }
    });
    child.once('error', (error) => resolve({ provided: null, failure: error.message }));
    child.once('exit', (code) => {
      if (code === 0) return resolve({ provided: stdout.trim().split('\n').pop() ?? '', failure: null });
      // The script's own last error line: what went wrong, without a tool's stack.
      const said = stderr
        .match(/ERROR: (.*)/g)
        ?.pop()
        ?.slice(7);
      resolve({ provided: null, failure: said ?? `${script} exited ${code}` });
    });
  });
}

const FIRST_RESTART_DELAY_MS = 1_000;
const MAX_RESTART_DELAY_MS = 60_000;

export interface Supervised {
  stop(): Promise<void>;
}

/**
 * Keeps a child process running: `start` spawns it (null: not possible now, tried again later),
 * and whenever it exits it is started again with backoff (1 s doubling to a minute; a run of a
 * minute or more starts the backoff afresh). `exited` is told each unplanned exit and its last
 * stderr line. stop() ends it with `stopSignal`, then SIGKILL after `graceMs`.
 */
export function supervise(options: {
  start: () => Promise<ChildProcess | null>;
  exited: (code: number | null, signal: NodeJS.Signals | null, lastLine: string) => void;
  stopSignal?: NodeJS.Signals;
  graceMs?: number;
}): Supervised {
  let child: ChildProcess | null = null;
  let stopping = false;
  let failures = 0;
  let timer: NodeJS.Timeout | undefined;
  const retry = () => {
    if (stopping) return;
    timer = setTimeout(() => void run(), Math.min(FIRST_RESTART_DELAY_MS * 2 ** failures++, MAX_RESTART_DELAY_MS));
  };
  const run = async () => {
    if (stopping) return;
    const started = Date.now();
    const mine = await options.start().catch(() => null);
    if (stopping) return void (mine && (await stopChild(mine, options.graceMs, options.stopSignal)));
    if (!mine) return retry();
    child = mine;
    let lastLine = '';
    mine.stderr?.on('data', (chunk: Buffer) => {
      const lines = chunk.toString().trim().split('\n');
      lastLine = lines[lines.length - 1] || lastLine;
    });
    const ended = (code: number | null, signal: NodeJS.Signals | null, said: string) => {
      if (child !== mine) return;
      child = null;
      if (stopping) return;
      if (Date.now() - started > MAX_RESTART_DELAY_MS) failures = 0;
      options.exited(code, signal, said);
      retry();
    };
    mine.once('exit', (code, signal) => ended(code, signal, lastLine));
    // A spawn that failed (no such program) says so here, with no exit.
    mine.once('error', (error) => ended(null, null, error.message));
  };
  void run();
  return {
    async stop() {
      stopping = true;
      clearTimeout(timer);
      if (child) await stopChild(child, options.graceMs, options.stopSignal);
    },
  };
}

/** `signal` (SIGTERM), then SIGKILL after graceMs; resolves once the child has exited. */
export async function stopChild(child: ChildProcess, graceMs = 5_000, signal: NodeJS.Signals = 'SIGTERM'): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill(signal);
  const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
  await exited;
  clearTimeout(timer);
}

/** Whether a process runs (a zombie, exited but not yet reaped, does not count). */
export function isProcessAlive(pid: number): boolean {
  if (pid <= 0) return false;
  try {
    process.kill(pid, 0);
    // A zombie (exited, not yet reaped) still answers kill(0); check its state.
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    return !/^\d+ \(.*\) Z/.test(stat);
  } catch {
    return false;
  }
}

/** A port free on 127.0.0.1 at the time of asking. */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.unref();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

/** n distinct ports free on 127.0.0.1 at the time of asking. */
export async function freePorts(n: number): Promise<number[]> {
  const ports = new Set<number>();
  while (ports.size < n) ports.add(await freePort());
  return [...ports];
}

function findPackageRoot(start: string): string {
  let dir = start;
  while (!fs.existsSync(path.join(dir, 'package.json'))) {
    const parent = path.dirname(dir);
    if (parent === dir) throw new Error('package.json not found above ' + start);
    dir = parent;
  }
  return dir;
}
