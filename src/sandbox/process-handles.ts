// A process sandbox as the runtime tracks it, and runtime.json: what the next service
// instance needs to adopt the process after a restart.
import type { ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import type { SandboxPorts } from './sandbox-ports.js';

export interface Handle {
  child: ChildProcess | null; // null when adopted after a service restart
  pid: number;
  ports: SandboxPorts;
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
  port: number;
  workers?: number[];
  vscodePort?: number | null;
  vscode?: boolean;
}

export function saveRuntimeRecord(dir: string, handle: Handle): void {
  const record: RuntimeRecord = {
    pid: handle.pid,
    port: handle.ports.agentServer,
    workers: handle.ports.workers,
    vscodePort: handle.ports.vscode,
    vscode: handle.vscode,
  };
  fs.writeFileSync(path.join(dir, 'runtime.json'), JSON.stringify(record));
}

/** The recorded process of a sandbox directory, if any (the process may have died since). */
export function loadRuntimeRecord(dir: string): { pid: number; ports: SandboxPorts; vscode: boolean } | undefined {
  let record: RuntimeRecord;
  try {
    record = JSON.parse(fs.readFileSync(path.join(dir, 'runtime.json'), 'utf8')) as RuntimeRecord;
  } catch {
    return undefined;
  }
  return {
    pid: record.pid,
    ports: { agentServer: record.port, workers: record.workers ?? [], vscode: record.vscodePort ?? null },
    vscode: record.vscode === true,
  };
}
