// The embedded default runtime: each sandbox is a local process group running the spec's command
// in DATA_DIR/sandboxes/<id>, isolated where the machine allows (isolation.ts: its own uid,
// namespaces, network and limits; without isolation none starts unless the operator declared a
// single-user deployment). What the service keeps about a sandbox (runtime.json, its passwd and
// resolv.conf) lives in DATA_DIR/sandboxes/.state/<id>, out of its reach: a sandbox that could
// write its runtime.json could make the service signal another sandbox's processes.
// - RUNNING only once its own agent server answers (process-watch.ts), else ERROR with why.
// - Pause stops the process group and keeps the folder; resume starts it again.
// - Processes outlive a service restart; runtime.json lets the next instance adopt them.
import fs from 'node:fs';
import path from 'node:path';
import { KeyedQueue } from '../../keyed-queue.js';
import { AppError } from '../../errors.js';
import type { Logger } from '../../logger.js';
import { AGENT_SERVER_INSTALLING, AgentServerInstalls } from './agent-server-setup.js';
import { stopNetwork, stopStrayNetwork } from '../isolation/isolated-launch.js';
import type { Isolation } from '../isolation/isolation.js';
import type { LimitEnforcer } from '../isolation/limits.js';
import { SandboxFolders } from './process-folders.js';
import { installingHandle, loadRuntimeRecord, recordedHandle, saveRuntimeRecord, type Handle } from './process-handles.js';
import { spawnSandbox } from './process-launch.js';
import { fill, groupAlive, isHealthy, stopProcessGroup, vscodeRunning } from './process-support.js';
import { LimitsWatch, watchHealth } from './process-watch.js';
import type { SandboxLaunch, SandboxLimits, SandboxRuntime, SandboxSpec, SandboxState } from '../runtime.js';
import { CONTROL_PLANE_ORIGIN } from '../isolation/sandbox-network.js';
import { RunTools } from './run-tools.js';
import { forwardedUrls } from '../sandbox-ports.js';

export interface ProcessRuntimeOptions {
  rootDir: string;
  cacheDir: string;
  startupTimeoutMs: number;
  agentServerVersion: string;
  /** An interpreter >= 3.12 to use instead of probing PATH and pyenv. */
  agentServerPython?: string | undefined;
  isolation: Isolation;
  /** How this machine enforces limits, and the deployment's defaults (a spec may set its own). */
  limits: { enforcer: LimitEnforcer; defaults: SandboxLimits };
  /** The service's own port, which isolated sandboxes call back through; null before it listens. */
  servicePort: () => number | null;
  /** SANDBOX_HOST_PORTS: host loopback ports isolated sandboxes may reach. */
  hostPorts: number[];
  log: Logger;
}
/** How long a start waits for a first-use install before answering STARTING and going on in the background. */
const FIRST_USE_WAIT_MS = 2_000;

export class ProcessSandboxRuntime implements SandboxRuntime {
  readonly kind = 'process' as const;
  private readonly handles = new Map<string, Handle>();
  /** The service is stopping: nothing is started or watched any more. */
  private closed = false;
  /** Per-sandbox operation queue: a resume racing a delete must not bring a process back. */
  private readonly locks = new KeyedQueue();
  private readonly agentServers: AgentServerInstalls;
  private readonly runTools: RunTools;

  /** Each running sandbox's disk limit (from its spec), for the limits watch. */
  private readonly diskLimits = new Map<string, number>();
  private readonly limitsWatch: LimitsWatch;

  constructor(private readonly options: ProcessRuntimeOptions) {
    this.folders = new SandboxFolders(options.rootDir, options.isolation, options.log);
    this.agentServers = new AgentServerInstalls(options);
    this.runTools = new RunTools(options.cacheDir, options.log);
    this.limitsWatch = new LimitsWatch(
      () => this.handles.entries(),
      (id) => this.sandboxDir(id),
      (id) => this.diskLimits.get(id) ?? null,
      (id, handle, reason) => this.locks.run(id, () => this.endForLimit(id, handle, reason)),
      options.log,
    );
    this.limitsWatch.start();
    void this.sweepStrayNetworks();
  }

  /** Isolated sandboxes reach the service only through their network's one path. */
  callbackOrigin(): string | null {
    const isolation = this.options.isolation;
    return isolation.kind === 'bubblewrap' && isolation.network !== 'host' ? CONTROL_PLANE_ORIGIN : null;
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
      const urls = forwardedUrls(handle.vscode ? handle.ports : { ...handle.ports, vscode: null }, handle.insidePorts);
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
    const handle = this.handles.get(sandboxId) ?? (await this.adopt(sandboxId)) ?? recordedHandle(this.stateDir(sandboxId));
    this.handles.delete(sandboxId);
    this.diskLimits.delete(sandboxId);
    if (handle) await this.stopHandle(handle);
    if (!handle?.network && stopStrayNetwork(this.stateDir(sandboxId))) {
      this.options.log.warn({ sandboxId }, 'ended a sandbox network no record named');
    }
    const cgroup = this.options.limits.enforcer.find(sandboxId);
    if (cgroup) await cgroup.remove();
    fs.rmSync(path.join(this.stateDir(sandboxId), 'runtime.json'), { force: true });
  }

  /** Stops the sandbox's processes, its network and what remains in its cgroup. */
  private async stopHandle(handle: Handle): Promise<void> {
    clearTimeout(handle.healthTimer);
    if (handle.pid > 0) await stopProcessGroup(handle.pid, handle.leader);
    stopNetwork(handle.network);
    await handle.cgroup?.kill();
  }

  /** A limit was hit: the sandbox ends (ERROR, with the reason), its workspace kept. */
  private async endForLimit(sandboxId: string, handle: Handle, reason: string): Promise<void> {
    if (this.handles.get(sandboxId) !== handle || handle.phase === 'ERROR') return;
    handle.phase = 'ERROR';
    handle.reason = reason;
    this.options.log.warn({ sandboxId, reason }, 'sandbox ended at a limit');
    await this.stopHandle(handle);
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
    this.limitsWatch.stop();
    for (const handle of this.handles.values()) clearTimeout(handle.healthTimer);
    this.handles.clear();
  }

  /**
   * Starts the spec's process. A spec that runs the agent server installs it on first use;
   * an install that fails at once (no Python) fails the start, and one that takes longer
   * goes on in the background with the sandbox STARTING (then launched, or ERROR with why).
   */
  private async launch(launch: SandboxLaunch): Promise<void> {
    this.folders.refuseUnisolated();
    const needsPython = [...(launch.spec.command ?? []), ...Object.values(launch.spec.initial_env)].some((s) =>
      s.includes('{agent_server_python}'),
    );
    if (!needsPython) return this.spawn(launch, {});
    const agentServer = this.agentServers.for(launch.spec.agent_server_version ?? this.options.agentServerVersion);
    const install = agentServer.ensure();
    const python = await agentServer.within(install, FIRST_USE_WAIT_MS);
    if (python !== null) return this.spawn(launch, { agent_server_python: python });

    const pending = installingHandle(AGENT_SERVER_INSTALLING);
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
    const { sandboxId } = launch;
    const { handle, limits } = await spawnSandbox(launch, extra, {
      dir: this.sandboxDir(sandboxId),
      stateDir: this.stateDir(sandboxId),
      uid: this.folders.uidOf(sandboxId),
      isolation: this.options.isolation,
      limits: this.options.limits,
      servicePort: this.options.servicePort(),
      hostPorts: this.options.hostPorts,
      runTools: launch.automationRun ? await this.runTools.dirs() : [],
      closed: () => this.closed,
      current: (h) => this.handles.get(sandboxId) === h,
      log: this.options.log,
    });
    this.handles.set(sandboxId, handle);
    this.diskLimits.set(sandboxId, limits.diskBytes);
    this.record(sandboxId, handle);
    this.watchStart(sandboxId, handle, launch.sessionApiKey);
  }

  private record(sandboxId: string, handle: Handle): void {
    saveRuntimeRecord(this.stateDir(sandboxId), handle);
  }

  /** sessionKey: to prove the listener and ask whether VS Code runs (unknown for a process adopted while still starting). */
  private watchStart(sandboxId: string, handle: Handle, sessionKey?: string): void {
    watchHealth({
      sandboxId,
      handle,
      deadline: Date.now() + this.options.startupTimeoutMs,
      timeoutMs: this.options.startupTimeoutMs,
      sessionKey,
      current: () => !this.closed && this.handles.get(sandboxId) === handle,
      onRunning: async () => {
        if (handle.ports.vscode !== null && sessionKey) {
          handle.vscode = await vscodeRunning(handle.ports.agentServer, sessionKey);
          if (this.handles.get(sandboxId) === handle) this.record(sandboxId, handle);
        }
        handle.phase = 'RUNNING';
        this.options.log.info({ sandboxId, port: handle.ports.agentServer, vscode: handle.vscode }, 'sandbox running');
      },
      onTimeout: async (reason) => {
        handle.phase = 'ERROR';
        handle.reason = reason;
        this.options.log.warn({ sandboxId, reason }, 'sandbox start failed');
        await this.stopHandle(handle);
      },
      log: this.options.log,
    });
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

  /**
   * At start-up, the networks of sandboxes whose process is gone (a start cut short by the
   * service's stop, a sandbox that ended while it was down) are ended: pasta runs on by itself,
   * and a resume starts a new one.
   */
  private async sweepStrayNetworks(): Promise<void> {
    for (const sandboxId of await this.folders.list().catch(() => [])) {
      await this.locks.run(sandboxId, async () => {
        const record = loadRuntimeRecord(this.stateDir(sandboxId));
        if (this.handles.has(sandboxId) || (record && groupAlive(record.pid))) return;
        if (stopStrayNetwork(this.stateDir(sandboxId)))
          this.options.log.warn({ sandboxId }, 'ended the network of a sandbox that had ended');
      });
    }
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
    const cgroup = this.options.limits.enforcer.find(sandboxId);
    const handle: Handle = { ...record, child: null, cgroup, phase, reason: null };
    this.handles.set(sandboxId, handle);
    if (!healthy) this.watchStart(sandboxId, handle);
    return handle;
  }
}
