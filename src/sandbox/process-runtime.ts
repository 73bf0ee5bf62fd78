// The embedded default runtime: each sandbox is a local child process running the spec's
// command, with its own directory under DATA_DIR/sandboxes/<id> and a free loopback port.
//
// - RUNNING only after GET /alive answers 200; a start that does not get there within the
//   start-up timeout ends in ERROR with the reason, and the process is stopped.
// - Pause stops the process group and keeps the directory; resume starts it again.
// - Processes run in their own process group and outlive a service restart; runtime.json
//   in the sandbox directory lets the next service instance find and adopt them.
// - The child gets a minimal environment: nothing of the service's own (database URI,
//   encryption key) leaks into agent code.
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { freePort, isProcessAlive } from '../processes.js';
import { AppError } from '../errors.js';
import type { Logger } from '../logger.js';
import { AGENT_SERVER_INSTALLING, AgentServerInstall } from './agent-server-setup.js';
import { fill, isHealthy, stopHandle, tail } from './process-support.js';
import { corsEnv, type SandboxLaunch, type SandboxRuntime, type SandboxSpec, type SandboxState } from './runtime.js';

interface Handle {
  child: ChildProcess | null; // null when adopted after a service restart
  pid: number;
  port: number;
  phase: 'STARTING' | 'RUNNING' | 'ERROR';
  reason: string | null;
  healthTimer?: NodeJS.Timeout;
  /** A start waiting for the first-use agent-server install: no process yet. */
  installing?: true;
}

interface RuntimeRecord {
  pid: number;
  port: number;
}

export interface ProcessRuntimeOptions {
  rootDir: string;
  cacheDir: string;
  startupTimeoutMs: number;
  agentServerVersion: string;
  /** An interpreter >= 3.12 to use instead of probing PATH and pyenv. */
  agentServerPython?: string | undefined;
  log: Logger;
}

const HEALTH_INTERVAL_MS = 250;
/** How long a start waits for a first-use install before answering STARTING and going on in the background. */
const FIRST_USE_WAIT_MS = 2_000;
const SANDBOX_ID = /^[a-z0-9-]+$/;

export class ProcessSandboxRuntime implements SandboxRuntime {
  readonly kind = 'process' as const;
  private readonly handles = new Map<string, Handle>();
  /** Per-sandbox operation queue: a resume racing a delete must not bring a process back. */
  private readonly locks = new Map<string, Promise<unknown>>();
  private readonly agentServer: AgentServerInstall;

  constructor(private readonly options: ProcessRuntimeOptions) {
    fs.mkdirSync(options.rootDir, { recursive: true, mode: 0o700 });
    this.agentServer = new AgentServerInstall(options);
  }

  sandboxDir(sandboxId: string): string {
    if (!SANDBOX_ID.test(sandboxId)) throw new Error(`invalid sandbox id ${sandboxId}`);
    return path.join(this.options.rootDir, sandboxId);
  }

  workingDir(sandboxId: string, spec: SandboxSpec): string {
    return fill(spec.working_dir, { sandbox_dir: this.sandboxDir(sandboxId) });
  }

  private serialised<T>(sandboxId: string, operation: () => Promise<T>): Promise<T> {
    const previous = this.locks.get(sandboxId) ?? Promise.resolve();
    const next = previous.catch(() => {}).then(operation);
    this.locks.set(sandboxId, next);
    void next
      .finally(() => {
        if (this.locks.get(sandboxId) === next) this.locks.delete(sandboxId);
      })
      .catch(() => {});
    return next;
  }

  start(launch: SandboxLaunch): Promise<void> {
    return this.serialised(launch.sandboxId, () => this.startNow(launch));
  }

  private async startNow(launch: SandboxLaunch): Promise<void> {
    const dir = this.sandboxDir(launch.sandboxId);
    fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
    try {
      await this.launch(launch);
    } catch (error) {
      await this.removeNow(launch.sandboxId);
      throw error;
    }
  }

  resume(launch: SandboxLaunch): Promise<void> {
    return this.serialised(launch.sandboxId, () => this.resumeNow(launch));
  }

  private async resumeNow(launch: SandboxLaunch): Promise<void> {
    const current = await this.state(launch.sandboxId, 'running');
    if (current.status === 'RUNNING' || current.status === 'STARTING') return;
    if (!fs.existsSync(this.sandboxDir(launch.sandboxId))) {
      throw new AppError('NOT_FOUND', 'Sandbox workspace is gone', { reason: 'sandbox_workspace_gone' });
    }
    await this.launch(launch);
  }

  async state(sandboxId: string, desired: 'running' | 'paused'): Promise<SandboxState> {
    const handle = this.currentHandle(sandboxId) ?? (await this.adopt(sandboxId));
    if (!handle) {
      const exists = fs.existsSync(this.sandboxDir(sandboxId));
      if (!exists) return { status: 'MISSING', exposedUrls: null, reason: 'The sandbox directory no longer exists' };
      if (desired === 'paused') return { status: 'PAUSED', exposedUrls: null, reason: null };
      return { status: 'MISSING', exposedUrls: null, reason: 'The sandbox process is not running' };
    }
    if (handle.phase === 'RUNNING') {
      const url = `http://127.0.0.1:${handle.port}`;
      return { status: 'RUNNING', exposedUrls: [{ name: 'AGENT_SERVER', url }], reason: null, internalUrl: url };
    }
    return { status: handle.phase, exposedUrls: null, reason: handle.reason };
  }

  pause(sandboxId: string): Promise<void> {
    return this.serialised(sandboxId, () => this.pauseNow(sandboxId));
  }

  remove(sandboxId: string): Promise<void> {
    return this.serialised(sandboxId, () => this.removeNow(sandboxId));
  }

  private async pauseNow(sandboxId: string): Promise<void> {
    const handle = this.handles.get(sandboxId) ?? (await this.adopt(sandboxId));
    this.handles.delete(sandboxId);
    if (handle) await stopHandle(handle);
    fs.rmSync(path.join(this.sandboxDir(sandboxId), 'runtime.json'), { force: true });
  }

  private async removeNow(sandboxId: string): Promise<void> {
    await this.pauseNow(sandboxId);
    fs.rmSync(this.sandboxDir(sandboxId), { recursive: true, force: true });
  }

  async list(): Promise<string[]> {
    const entries = await fs.promises.readdir(this.options.rootDir, { withFileTypes: true });
    return entries.filter((e) => e.isDirectory() && SANDBOX_ID.test(e.name)).map((e) => e.name);
  }

  async close(): Promise<void> {
    // Sandboxes keep running across service restarts; only stop watching them.
    for (const handle of this.handles.values()) clearTimeout(handle.healthTimer);
    this.handles.clear();
  }

  /**
   * Starts the spec's process. A spec that runs the agent server installs it on first use;
   * an install that fails at once (no Python) fails the start, and one that takes longer
   * goes on in the background with the sandbox STARTING (then launched, or ERROR with why).
   */
  private async launch(launch: SandboxLaunch): Promise<void> {
    const needsPython = [...(launch.spec.command ?? []), ...Object.values(launch.spec.initial_env)].some((s) =>
      s.includes('{agent_server_python}'),
    );
    if (!needsPython) return this.spawn(launch, {});
    const install = this.agentServer.ensure();
    const python = await this.agentServer.within(install, FIRST_USE_WAIT_MS);
    if (python !== null) return this.spawn(launch, { agent_server_python: python });

    const pending: Handle = { child: null, pid: -1, port: 0, phase: 'STARTING', reason: AGENT_SERVER_INSTALLING, installing: true };
    this.handles.set(launch.sandboxId, pending);
    const current = () => this.handles.get(launch.sandboxId) === pending; // not paused or removed meanwhile
    install
      .then((installed) =>
        this.serialised(launch.sandboxId, async () => (current() ? this.spawn(launch, { agent_server_python: installed }) : undefined)),
      )
      .catch((error: unknown) => {
        if (!current()) return;
        pending.phase = 'ERROR';
        pending.reason = error instanceof AppError ? error.message : 'Starting the sandbox failed';
        this.options.log.warn(
          { sandboxId: launch.sandboxId, reason: pending.reason },
          'sandbox start failed after the agent-server install',
        );
      });
  }

  private async spawn(launch: SandboxLaunch, extra: Record<string, string>): Promise<void> {
    const dir = this.sandboxDir(launch.sandboxId);
    const port = await freePort();
    const values: Record<string, string> = { port: String(port), sandbox_dir: dir, ...extra };
    const [command, ...args] = (launch.spec.command ?? []).map((part) => fill(part, values));
    if (!command) throw unrunnable(`Sandbox spec ${launch.spec.id} has no command for the process runtime`);
    const workingDir = fill(launch.spec.working_dir, values);
    fs.mkdirSync(workingDir, { recursive: true });

    const env: Record<string, string> = {
      PATH: process.env.PATH ?? '/usr/local/bin:/usr/bin:/bin',
      HOME: dir,
      LANG: process.env.LANG ?? 'C.UTF-8',
      TMPDIR: dir,
      ...Object.fromEntries(Object.entries(launch.spec.initial_env).map(([k, v]) => [k, fill(v, values)])),
      OH_SESSION_API_KEYS_0: launch.sessionApiKey,
      OH_SECRET_KEY: launch.sessionApiKey,
      OH_WEBHOOKS_0_BASE_URL: launch.webhookBaseUrl,
      ...corsEnv(launch.corsOrigins),
      SANDBOX_PORT: String(port),
    };
    const logFile = fs.openSync(path.join(dir, 'sandbox.log'), 'a', 0o600);
    let child: ChildProcess;
    try {
      child = spawn(command, args, { cwd: dir, env, detached: true, stdio: ['ignore', logFile, logFile] });
    } finally {
      fs.closeSync(logFile);
    }
    const handle: Handle = { child, pid: child.pid ?? -1, port, phase: 'STARTING', reason: null };
    const spawnError = await new Promise<Error | null>((resolve) => {
      child.once('spawn', () => resolve(null));
      child.once('error', (error) => resolve(error));
    });
    if (spawnError) {
      throw unrunnable(`Cannot run the sandbox command "${command}": ${spawnError.message}`);
    }
    this.handles.set(launch.sandboxId, handle);
    fs.writeFileSync(path.join(dir, 'runtime.json'), JSON.stringify({ pid: handle.pid, port } satisfies RuntimeRecord));
    child.once('exit', (code, signal) => {
      clearTimeout(handle.healthTimer);
      // Paused or removed on purpose, or already failed (a timed-out start is stopped by us).
      if (this.handles.get(launch.sandboxId) !== handle || handle.phase === 'ERROR') return;
      handle.phase = 'ERROR';
      handle.reason = `The sandbox process exited (${signal ?? `code ${code}`}); last output: ${tail(path.join(dir, 'sandbox.log'))}`;
      this.options.log.warn({ sandboxId: launch.sandboxId, code, signal }, 'sandbox process exited');
    });
    this.watchHealth(launch.sandboxId, handle, Date.now() + this.options.startupTimeoutMs);
  }

  private watchHealth(sandboxId: string, handle: Handle, deadline: number): void {
    const check = async () => {
      if (this.handles.get(sandboxId) !== handle || handle.phase !== 'STARTING') return;
      if (await isHealthy(handle.port)) {
        handle.phase = 'RUNNING';
        this.options.log.info({ sandboxId, port: handle.port }, 'sandbox running');
        return;
      }
      if (Date.now() > deadline) {
        handle.phase = 'ERROR';
        handle.reason = `The agent server did not become healthy within ${Math.round(this.options.startupTimeoutMs / 1000)} s`;
        this.options.log.warn({ sandboxId }, 'sandbox start timed out');
        await stopHandle(handle);
        return;
      }
      handle.healthTimer = setTimeout(check, HEALTH_INTERVAL_MS);
    };
    handle.healthTimer = setTimeout(check, 0);
  }

  /**
   * The cached handle, unless it is stale: another instance sharing DATA_DIR (a replica) paused
   * or removed the sandbox (runtime.json is gone), or an adopted process has died.
   */
  private currentHandle(sandboxId: string): Handle | undefined {
    const handle = this.handles.get(sandboxId);
    if (!handle) return undefined;
    if (handle.installing) return handle; // no process yet: the first-use install runs
    const paused = !fs.existsSync(path.join(this.sandboxDir(sandboxId), 'runtime.json'));
    if (!paused && (handle.child || isProcessAlive(handle.pid))) return handle;
    clearTimeout(handle.healthTimer);
    this.handles.delete(sandboxId);
    return undefined;
  }

  /** Finds a sandbox process started by an earlier service instance. */
  private async adopt(sandboxId: string): Promise<Handle | undefined> {
    let record: RuntimeRecord;
    try {
      record = JSON.parse(fs.readFileSync(path.join(this.sandboxDir(sandboxId), 'runtime.json'), 'utf8')) as RuntimeRecord;
    } catch {
      return undefined;
    }
    if (!isProcessAlive(record.pid)) return undefined;
    const healthy = await isHealthy(record.port);
    // A live process that is not healthy yet is still ours: adopt it as STARTING and keep
    // checking it (its start-up deadline restarts from now), so it can be stopped and removed.
    const handle: Handle = { child: null, pid: record.pid, port: record.port, phase: healthy ? 'RUNNING' : 'STARTING', reason: null };
    this.handles.set(sandboxId, handle);
    if (!healthy) this.watchHealth(sandboxId, handle, Date.now() + this.options.startupTimeoutMs);
    return handle;
  }
}

/** The spec cannot run here (no command, or the command does not start). */
const unrunnable = (message: string) => new AppError('BAD_REQUEST', message, { reason: 'sandbox_spec_unrunnable' });
