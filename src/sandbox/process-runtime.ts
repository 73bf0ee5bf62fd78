// The embedded default runtime: each sandbox is a local child process running the spec's
// command, with its own directory under DATA_DIR/sandboxes/<id> and a free loopback port,
// isolated by bubblewrap where the machine allows (src/sandbox/isolation.ts): its own uid,
// pid namespace and a filesystem view of its own directory and the read-only toolchain.
// What the service keeps about a sandbox (runtime.json, its log, its passwd file) lives in
// DATA_DIR/sandboxes/.state/<id>, out of the sandbox's reach: a sandbox that could write its
// runtime.json could make the service signal another sandbox's processes.
//
// - RUNNING only after GET /alive answers 200; a start that does not get there within the
//   start-up timeout ends in ERROR with the reason, and the process is stopped.
// - Pause stops the process group and keeps the directory; resume starts it again.
// - Processes run in their own process group and outlive a service restart; runtime.json
//   in the sandbox directory lets the next service instance find and adopt them.
// - The child gets a minimal environment: nothing of the service's own (database URI,
//   encryption key) leaks into agent code. Besides the agent server's port it gets two free
//   loopback worker ports (WORKER_1, WORKER_2) and, when its spec enables VS Code, a VS Code
//   port; VSCODE is exposed only once the agent server reports VS Code running.
// - Without isolation, sandboxes start for one user at a time (admit) unless the operator
//   declared the deployment single-user.
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { KeyedQueue } from '../keyed-queue.js';
import { AppError } from '../errors.js';
import type { Logger } from '../logger.js';
import { AGENT_SERVER_INSTALLING, AgentServerInstall } from './agent-server-setup.js';
import type { Isolation } from './isolation.js';
import { prepareCommand, unrunnable } from './process-command.js';
import { SandboxFolders } from './process-folders.js';
import { loadRuntimeRecord, saveRuntimeRecord, type Handle } from './process-handles.js';
import { fill, groupAlive, isHealthy, stopProcessGroup, tail, vscodeRunning } from './process-support.js';
import type { SandboxLaunch, SandboxRuntime, SandboxSpec, SandboxState } from './runtime.js';
import { exposedUrls } from './sandbox-ports.js';

export interface ProcessRuntimeOptions {
  rootDir: string;
  cacheDir: string;
  startupTimeoutMs: number;
  agentServerVersion: string;
  /** An interpreter >= 3.12 to use instead of probing PATH and pyenv. */
  agentServerPython?: string | undefined;
  isolation: Isolation;
  log: Logger;
}

const HEALTH_INTERVAL_MS = 250;
/** How long a start waits for a first-use install before answering STARTING and going on in the background. */
const FIRST_USE_WAIT_MS = 2_000;

export class ProcessSandboxRuntime implements SandboxRuntime {
  readonly kind = 'process' as const;
  private readonly handles = new Map<string, Handle>();
  /** The service is stopping: nothing is started or watched any more. */
  private closed = false;
  /** Per-sandbox operation queue: a resume racing a delete must not bring a process back. */
  private readonly locks = new KeyedQueue();
  /** One install per agent-server version (a spec may name its own: agent_server_version). */
  private readonly agentServers = new Map<string, AgentServerInstall>();

  constructor(private readonly options: ProcessRuntimeOptions) {
    this.folders = new SandboxFolders(options.rootDir, options.isolation, options.log);
  }

  private agentServerFor(spec: SandboxSpec): AgentServerInstall {
    const version = spec.agent_server_version ?? this.options.agentServerVersion;
    let install = this.agentServers.get(version);
    if (!install) this.agentServers.set(version, (install = new AgentServerInstall({ ...this.options, agentServerVersion: version })));
    return install;
  }

  private readonly folders: SandboxFolders;

  sandboxDir(sandboxId: string): string {
    return this.folders.sandboxDir(sandboxId);
  }

  private stateDir(sandboxId: string): string {
    return this.folders.stateDir(sandboxId);
  }

  admit(userId: string): Promise<void> {
    return this.folders.admit(userId);
  }

  workingDir(sandboxId: string, spec: SandboxSpec): string {
    return fill(spec.working_dir, { sandbox_dir: this.sandboxDir(sandboxId) });
  }

  start(launch: SandboxLaunch): Promise<void> {
    return this.locks.run(launch.sandboxId, () => this.startNow(launch));
  }

  private async startNow(launch: SandboxLaunch): Promise<void> {
    const dir = this.sandboxDir(launch.sandboxId);
    fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
    fs.mkdirSync(this.stateDir(launch.sandboxId), { recursive: true, mode: 0o700 });
    try {
      await this.launch(launch);
    } catch (error) {
      await this.removeNow(launch.sandboxId);
      throw error;
    }
  }

  resume(launch: SandboxLaunch): Promise<void> {
    return this.locks.run(launch.sandboxId, () => this.resumeNow(launch));
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
      const ports = handle.vscode ? handle.ports : { ...handle.ports, vscode: null };
      const urls = exposedUrls(ports, (port) => `http://127.0.0.1:${port}`);
      return { status: 'RUNNING', exposedUrls: urls, reason: null, internalUrl: urls[0]!.url };
    }
    return { status: handle.phase, exposedUrls: null, reason: handle.reason };
  }

  pause(sandboxId: string): Promise<void> {
    return this.locks.run(sandboxId, () => this.pauseNow(sandboxId));
  }

  remove(sandboxId: string): Promise<void> {
    return this.locks.run(sandboxId, () => this.removeNow(sandboxId));
  }

  private async pauseNow(sandboxId: string): Promise<void> {
    const handle = this.handles.get(sandboxId) ?? (await this.adopt(sandboxId));
    this.handles.delete(sandboxId);
    if (handle) {
      clearTimeout(handle.healthTimer);
      await stopProcessGroup(handle.pid);
    }
    fs.rmSync(path.join(this.stateDir(sandboxId), 'runtime.json'), { force: true });
  }

  private async removeNow(sandboxId: string): Promise<void> {
    await this.pauseNow(sandboxId);
    this.folders.remove(sandboxId);
  }

  list(): Promise<string[]> {
    return this.folders.list();
  }

  async close(): Promise<void> {
    // Sandboxes keep running across service restarts; only stop watching them.
    this.closed = true;
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
    const agentServer = this.agentServerFor(launch.spec);
    const install = agentServer.ensure();
    const python = await agentServer.within(install, FIRST_USE_WAIT_MS);
    if (python !== null) return this.spawn(launch, { agent_server_python: python });

    const pending: Handle = {
      child: null,
      pid: -1,
      ports: { agentServer: 0, workers: [], vscode: null },
      vscode: false,
      phase: 'STARTING',
      reason: AGENT_SERVER_INSTALLING,
      installing: true,
    };
    this.handles.set(launch.sandboxId, pending);
    const current = () => this.handles.get(launch.sandboxId) === pending; // not paused or removed meanwhile
    install
      .then((installed) =>
        this.locks.run(launch.sandboxId, async () => (current() ? this.spawn(launch, { agent_server_python: installed }) : undefined)),
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
    const stateDir = this.stateDir(launch.sandboxId);
    const run = await prepareCommand(launch, extra, { dir, stateDir, uid: this.folders.uidOf(launch.sandboxId) }, this.options.isolation);
    const { env, ports } = run;
    // A stopping service starts nothing: the sandbox would be watched by nothing, and no shutdown would list it.
    if (this.closed) throw new AppError('SERVICE_UNAVAILABLE', 'The service is shutting down', { retryAfterSeconds: 5 });
    const logFile = fs.openSync(path.join(stateDir, 'sandbox.log'), 'a', 0o600);
    let child: ChildProcess;
    try {
      child = spawn(run.command, run.args, { cwd: dir, env, detached: true, stdio: ['ignore', logFile, logFile] });
    } finally {
      fs.closeSync(logFile);
    }
    const handle: Handle = { child, pid: child.pid ?? -1, ports, vscode: false, phase: 'STARTING', reason: null };
    const spawnError = await new Promise<Error | null>((resolve) => {
      child.once('spawn', () => resolve(null));
      child.once('error', (error) => resolve(error));
    });
    if (spawnError) {
      throw unrunnable(`Cannot run the sandbox command "${run.name}": ${spawnError.message}`);
    }
    this.handles.set(launch.sandboxId, handle);
    this.record(launch.sandboxId, handle);
    child.once('exit', (code, signal) => {
      clearTimeout(handle.healthTimer);
      // Paused or removed on purpose, or already failed (a timed-out start is stopped by us).
      if (this.handles.get(launch.sandboxId) !== handle || handle.phase === 'ERROR') return;
      handle.phase = 'ERROR';
      handle.reason = `The sandbox process exited (${signal ?? `code ${code}`}); last output: ${tail(path.join(stateDir, 'sandbox.log'))}`;
      this.options.log.warn({ sandboxId: launch.sandboxId, code, signal }, 'sandbox process exited');
    });
    this.watchHealth(launch.sandboxId, handle, Date.now() + this.options.startupTimeoutMs, launch.sessionApiKey);
  }

  private record(sandboxId: string, handle: Handle): void {
    saveRuntimeRecord(this.stateDir(sandboxId), handle);
  }

  /** sessionKey: to ask the agent server whether VS Code runs (unknown for an adopted process that is still starting). */
  private watchHealth(sandboxId: string, handle: Handle, deadline: number, sessionKey?: string): void {
    const check = async () => {
      if (this.closed || this.handles.get(sandboxId) !== handle || handle.phase !== 'STARTING') return;
      if (await isHealthy(handle.ports.agentServer)) {
        if (handle.ports.vscode !== null && sessionKey) {
          handle.vscode = await vscodeRunning(handle.ports.agentServer, sessionKey);
          if (this.handles.get(sandboxId) === handle) this.record(sandboxId, handle);
        }
        handle.phase = 'RUNNING';
        this.options.log.info({ sandboxId, port: handle.ports.agentServer, vscode: handle.vscode }, 'sandbox running');
        return;
      }
      if (Date.now() > deadline) {
        handle.phase = 'ERROR';
        handle.reason = `The agent server did not become healthy within ${Math.round(this.options.startupTimeoutMs / 1000)} s`;
        this.options.log.warn({ sandboxId }, 'sandbox start timed out');
        await stopProcessGroup(handle.pid);
        return;
      }
      handle.healthTimer = setTimeout(watched, HEALTH_INTERVAL_MS);
    };
    // A timer's callback must not reject (the process would end): a failed check (its state folder
    // removed by another replica meanwhile) ends the watch, logged.
    const watched = () =>
      void check().catch((error: unknown) => this.options.log.warn({ sandboxId, err: error }, 'sandbox health check failed'));
    handle.healthTimer = setTimeout(watched, 0);
  }

  /**
   * The cached handle, unless it is stale: another instance sharing DATA_DIR (a replica) paused
   * or removed the sandbox (runtime.json is gone), or an adopted process has died.
   */
  private currentHandle(sandboxId: string): Handle | undefined {
    const handle = this.handles.get(sandboxId);
    if (!handle) return undefined;
    if (handle.installing) return handle; // no process yet: the first-use install runs
    const paused = !fs.existsSync(path.join(this.stateDir(sandboxId), 'runtime.json'));
    if (!paused && (handle.child || groupAlive(handle.pid))) return handle;
    clearTimeout(handle.healthTimer);
    this.handles.delete(sandboxId);
    return undefined;
  }

  /** Finds a sandbox process started by an earlier service instance. */
  private async adopt(sandboxId: string): Promise<Handle | undefined> {
    await this.folders.migrateLegacyRecord(sandboxId);
    const record = loadRuntimeRecord(this.stateDir(sandboxId));
    if (!record) return undefined;
    if (!groupAlive(record.pid)) return undefined;
    const healthy = await isHealthy(record.ports.agentServer);
    // A live process that is not healthy yet is still ours: adopt it as STARTING and keep
    // checking it (its start-up deadline restarts from now), so it can be stopped and removed.
    const phase = healthy ? 'RUNNING' : 'STARTING';
    const handle: Handle = { child: null, pid: record.pid, ports: record.ports, vscode: record.vscode, phase, reason: null };
    this.handles.set(sandboxId, handle);
    if (!healthy) this.watchHealth(sandboxId, handle, Date.now() + this.options.startupTimeoutMs);
    return handle;
  }
}
