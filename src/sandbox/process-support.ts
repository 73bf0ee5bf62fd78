// Small pieces of the process runtime: spec placeholders, the health and VS Code probes over
// loopback, the log tail and stopping a sandbox's process group.
import fs from 'node:fs';
import { isProcessAlive } from '../processes.js';

const STOP_GRACE_MS = 5_000;

/** Fills {port}, {sandbox_dir} and {agent_server_python} in a spec's command, env or working_dir. */
export function fill(template: string, values: Record<string, string>): string {
  return template.replace(/\{(port|sandbox_dir|agent_server_python)\}/g, (whole, name: string) => values[name] ?? whole);
}

/** The last bytes of a sandbox log, for an ERROR reason. */
export function tail(file: string, bytes = 600): string {
  try {
    const content = fs.readFileSync(file, 'utf8');
    return content.slice(-bytes).trim() || '(none)';
  } catch {
    return '(none)';
  }
}

/** True when the agent server at the port answers GET /alive. */
export async function isHealthy(port: number): Promise<boolean> {
  try {
    const response = await fetch(`http://127.0.0.1:${port}/alive`, { signal: AbortSignal.timeout(1_000) });
    await response.body?.cancel();
    return response.ok;
  } catch {
    return false;
  }
}

/** SIGTERM to the sandbox's process group (the agent server's shells too), SIGKILL after the grace time. */
export async function stopProcessGroup(pid: number): Promise<void> {
  const signalGroup = (signal: NodeJS.Signals) => {
    try {
      process.kill(-pid, signal);
    } catch {
      /* already gone */
    }
  };
  if (!isProcessAlive(pid)) return;
  signalGroup('SIGTERM');
  const deadline = Date.now() + STOP_GRACE_MS;
  while (isProcessAlive(pid) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
  if (isProcessAlive(pid)) signalGroup('SIGKILL');
}

/** Whether the agent server runs VS Code (it needs openvscode-server, which a PyPI install lacks). */
export async function vscodeRunning(port: number, sessionKey: string): Promise<boolean> {
  try {
    const response = await fetch(`http://127.0.0.1:${port}/api/vscode/status`, {
      headers: { 'x-session-api-key': sessionKey },
      redirect: 'manual', // the key goes to the sandbox's own address only
      signal: AbortSignal.timeout(5_000),
    });
    if (!response.ok) return false;
    return ((await response.json()) as { running?: unknown }).running === true;
  } catch {
    return false;
  }
}
