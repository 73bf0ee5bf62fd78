// Small pieces of the process runtime: spec placeholders, the health probe and the log tail.
import fs from 'node:fs';

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
