// The ports a sandbox exposes besides its agent server, shared by both runtimes: VS Code
// (when the spec leaves it enabled) and two worker ports for web apps the agent runs. The
// agent server learns them from its environment, as the reference's Docker sandboxes do:
// one variable per exposed name holding the port (WORKER_1, WORKER_2, VSCODE), plus the
// agent server's own OH_VSCODE_PORT.
import type { SandboxSpec } from './runtime.js';

export const AGENT_SERVER = 'AGENT_SERVER';
export const VSCODE = 'VSCODE';
export const WORKERS = ['WORKER_1', 'WORKER_2'] as const;

/** The ports of one sandbox, as the processes inside it listen. */
export interface SandboxPorts {
  agentServer: number;
  vscode: number | null;
  workers: number[];
}

/** The agent server starts VS Code unless the spec turns it off (its own default is on). */
export function vscodeEnabled(spec: SandboxSpec): boolean {
  const value = spec.initial_env.OH_ENABLE_VSCODE?.trim().toLowerCase();
  return !(value === 'false' || value === '0' || value === 'no');
}

/** Environment naming the extra ports. */
export function exposureEnv(ports: SandboxPorts): Record<string, string> {
  // Where code in the sandbox finds its agent server (the SDK's cloud workspace in local mode, as automation runs use it).
  const env: Record<string, string> = { AGENT_SERVER_PORT: String(ports.agentServer) };
  WORKERS.forEach((name, i) => {
    if (ports.workers[i] !== undefined) env[name] = String(ports.workers[i]);
  });
  if (ports.vscode !== null) {
    env[VSCODE] = String(ports.vscode);
    env.OH_VSCODE_PORT = String(ports.vscode);
  }
  return env;
}

/** The exposed URLs of a running sandbox, AGENT_SERVER first; `url(port, name)` builds each. */
export function exposedUrls(ports: SandboxPorts, url: (port: number, name: string) => string) {
  return [
    { name: AGENT_SERVER, url: url(ports.agentServer, AGENT_SERVER), port: ports.agentServer },
    ...(ports.vscode !== null ? [{ name: VSCODE, url: url(ports.vscode, VSCODE), port: ports.vscode }] : []),
    ...ports.workers.map((port, i) => ({ name: WORKERS[i]!, url: url(port, WORKERS[i]!), port })),
  ];
}

/** The exposed URLs of a process sandbox: each the host's end of a forward, `port` what listens inside. */
export function forwardedUrls(ports: SandboxPorts, insidePorts: SandboxPorts) {
  const inside = exposedUrls(insidePorts, () => '');
  return exposedUrls(ports, (port) => `http://127.0.0.1:${port}`).map((u) => ({
    ...u,
    port: inside.find((i) => i.name === u.name)?.port ?? u.port,
  }));
}
