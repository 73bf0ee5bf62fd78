// A process sandbox as the runtime tracks it, and runtime.json: what the next service
// instance needs to adopt the process after a restart.
import type { ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import type { SandboxCgroup } from '../isolation/limits.js';
import type { ProcessIdentity } from './process-identity.js';
import type { SandboxPorts } from '../sandbox-ports.js';

export interface Handle {
  child: ChildProcess | null; // null when adopted after a service restart
  /** The launcher, leader of the sandbox's process group. */
  pid: number;
  /** The launcher as started (pid and start time): nothing is signalled once the pid names another process. */
  leader: ProcessIdentity | null;
  /** Where the service and the owner's browser reach the sandbox (host loopback). */
  ports: SandboxPorts;
  /** The same ports inside the sandbox (its own network's, when isolated). */
  insidePorts: SandboxPorts;
  /** A process inside the sandbox's namespaces (isolated), whose network tables prove its listener. */
  nsPid: number | null;
  /** pasta, serving the sandbox's network (isolated). */
  network: ProcessIdentity | null;
  /** The sandbox's cgroup (limits.ts), when this machine gives cgroups. */
  cgroup: SandboxCgroup | null;
  /** Set once the agent server reported VS Code running on ports.vscode. */
  vscode: boolean;
  phase: 'STARTING' | 'RUNNING' | 'ERROR';
  reason: string | null;
  healthTimer?: NodeJS.Timeout;
  /** A start waiting for the first-use agent-server install: no process yet. */
  installing?: true;
}

/** runtime.json: what the next service instance needs to adopt the process. */
interface RuntimeRecord {
  pid: number;
  leaderStart?: number;
  port: number;
  workers?: number[];
  vscodePort?: number | null;
  vscode?: boolean;
  inside?: SandboxPorts;
  nsPid?: number | null;
  network?: ProcessIdentity | null;
}

export type RecordedSandbox = Pick<Handle, 'pid' | 'leader' | 'ports' | 'insidePorts' | 'nsPid' | 'network' | 'vscode'>;

export function saveRuntimeRecord(dir: string, handle: Handle): void {
  const record: RuntimeRecord = {
    pid: handle.pid,
    leaderStart: handle.leader?.startTime,
    port: handle.ports.agentServer,
    workers: handle.ports.workers,
    vscodePort: handle.ports.vscode,
    vscode: handle.vscode,
    inside: handle.insidePorts,
    nsPid: handle.nsPid,
    network: handle.network,
  };
  fs.writeFileSync(path.join(dir, 'runtime.json'), JSON.stringify(record));
}

/** The recorded process of a sandbox directory, if any (the process may have died since). */
export function loadRuntimeRecord(dir: string): RecordedSandbox | undefined {
  let record: RuntimeRecord;
  try {
    record = JSON.parse(fs.readFileSync(path.join(dir, 'runtime.json'), 'utf8')) as RuntimeRecord;
  } catch {
    return undefined;
  }
  const ports = { agentServer: record.port, workers: record.workers ?? [], vscode: record.vscodePort ?? null };
  return {
    pid: record.pid,
    // Records of earlier versions have no start time: their pid is trusted as before.
    leader: record.leaderStart === undefined ? null : { pid: record.pid, startTime: record.leaderStart },
    ports,
    insidePorts: record.inside ?? ports,
    nsPid: record.nsPid ?? null,
    network: record.network ?? null,
    vscode: record.vscode === true,
  };
}

/** A start waiting for the first-use agent-server install: no process yet. */
export function installingHandle(reason: string): Handle {
  const none = { agentServer: 0, workers: [], vscode: null };
  return {
    child: null,
    pid: -1,
    leader: null,
    ports: none,
    insidePorts: none,
    nsPid: null,
    network: null,
    cgroup: null,
    vscode: false,
    phase: 'STARTING',
    reason,
    installing: true,
  };
}

/** A recorded sandbox whose launcher is gone (its network may still run): what is left to stop. */
export function recordedHandle(stateDir: string): Handle | undefined {
  const record = loadRuntimeRecord(stateDir);
  return record && { ...record, child: null, cgroup: null, phase: 'ERROR', reason: null };
}
