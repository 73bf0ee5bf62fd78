// Low-level control of a sandbox process for the process runtime: liveness, health and the
// VS Code check over loopback, stopping its process group, and the tail of its log.
import fs from 'node:fs';
import { isProcessAlive as isAlive } from '../processes.js';

const STOP_GRACE_MS = 5_000;

export async function isHealthy(port: number): Promise<boolean> {
  try {
    const response = await fetch(`http://127.0.0.1:${port}/alive`, { signal: AbortSignal.timeout(1_000) });
    await response.body?.cancel();
    return response.ok;
  } catch {
    return false;
  }
}

/** Whether the agent server runs VS Code (it needs openvscode-server, which a PyPI install lacks). */
export async function vscodeRunning(port: number, sessionKey: string): Promise<boolean> {
  try {
    const response = await fetch(`http://127.0.0.1:${port}/api/vscode/status`, {
      headers: { 'x-session-api-key': sessionKey },
      signal: AbortSignal.timeout(5_000),
    });
    if (!response.ok) return false;
    return ((await response.json()) as { running?: unknown }).running === true;
  } catch {
    return false;
  }
}

/** SIGTERM to the whole process group (the agent server's shells too), SIGKILL after a grace period. */
export async function stopProcessGroup(pid: number): Promise<void> {
  const signalGroup = (signal: NodeJS.Signals) => {
    try {
      process.kill(-pid, signal);
    } catch {
      /* already gone */
    }
  };
  if (!isAlive(pid)) return;
  signalGroup('SIGTERM');
  const deadline = Date.now() + STOP_GRACE_MS;
  while (isAlive(pid) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
  if (isAlive(pid)) signalGroup('SIGKILL');
}

export function tail(file: string, bytes = 600): string {
  try {
    const content = fs.readFileSync(file, 'utf8');
    return content.slice(-bytes).trim() || '(none)';
  } catch {
    return '(none)';
  }
}
