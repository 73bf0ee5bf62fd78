// Small pieces of the process runtime: spec placeholders, the health and VS Code probes over
// loopback and stopping a sandbox's process group.
import fs from 'node:fs';
import { identify, isSameProcess, type ProcessIdentity } from './process-identity.js';
import { readBounded } from '../../agent-server/bounded-read.js';

const STOP_GRACE_MS = 5_000;

/** Fills {port}, {sandbox_dir} and {agent_server_python} in a spec's command, env or working_dir. */
export function fill(template: string, values: Record<string, string>): string {
  return template.replace(/\{(port|sandbox_dir|agent_server_python)\}/g, (whole, name: string) => values[name] ?? whole);
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

/**
 * Stops a sandbox started as the leader of its own process group: SIGTERM to the group, a
 * grace time until every member but a namespace's init has exited, then SIGKILL to the group
 * and to the init of an isolated sandbox's pid namespace (bwrap's child), which ends whatever
 * escaped the group (a daemon that called setsid) with the namespace. When the leader was
 * recorded and its pid now names another process (reused after the sandbox died, an unrelated
 * process that made itself a group leader), nothing is signalled.
 */
export async function stopProcessGroup(pid: number, leader: ProcessIdentity | null = null): Promise<void> {
  if (!groupAlive(pid)) return;
  if (leader && identify(pid) && !isSameProcess(leader)) return;
  const inits = childrenOf(pid);
  signalGroup(pid, 'SIGTERM');
  const deadline = Date.now() + STOP_GRACE_MS;
  const working = () => groupMembers(pid).some((member) => !inits.includes(member));
  while (working() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
  for (const init of inits) signal(init, 'SIGKILL');
  signalGroup(pid, 'SIGKILL');
}

/** Whether any process of the group still runs. */
export function groupAlive(pgid: number): boolean {
  return groupMembers(pgid).length > 0;
}

function signalGroup(pgid: number, name: NodeJS.Signals): void {
  signal(-pgid, name);
}

function signal(pid: number, name: NodeJS.Signals): void {
  try {
    process.kill(pid, name);
  } catch {
    /* already gone */
  }
}

/** Live (not zombie) processes, from /proc: [pid, ppid, pgid]. */
function processTable(): [number, number, number][] {
  const table: [number, number, number][] = [];
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    let stat: string;
    try {
      stat = fs.readFileSync(`/proc/${entry}/stat`, 'utf8');
    } catch {
      continue; // exited meanwhile
    }
    // "pid (comm) state ppid pgrp …": comm may hold spaces and parentheses.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    if (fields[0] === 'Z') continue;
    table.push([Number(entry), Number(fields[1]), Number(fields[2])]);
  }
  return table;
}

function groupMembers(pgid: number): number[] {
  if (pgid <= 0) return [];
  return processTable()
    .filter(([, , group]) => group === pgid)
    .map(([pid]) => pid);
}

function childrenOf(pid: number): number[] {
  if (pid <= 0) return [];
  return processTable()
    .filter(([, parent]) => parent === pid)
    .map(([child]) => child);
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
    // {"running": …} is a few bytes: anything past 64 KiB is not that answer (and is not read).
    const body = await readBounded(response, 64 * 1024);
    return body !== null && (JSON.parse(body.toString('utf8')) as { running?: unknown }).running === true;
  } catch {
    return false;
  }
}
