// Starting a sandbox's process, isolated or not. Isolated, bwrap reports its first process in
// the new namespaces (info fd), loads the seccomp filter (seccomp fd) and waits (block fd) while
// the service joins pasta to the namespace and sets its routes; only then does the sandbox's
// command run, so it never sees a moment without its network's rules. The same steps, with a
// `true`, are the start-up trial that decides whether this machine can isolate at all.
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Readable, Writable } from 'node:stream';
import { LAUNCH_FDS, trialCommand, type Isolated, type Isolation } from './isolation.js';
import { signalIfSame, type ProcessIdentity } from '../process/process-identity.js';
import { seccompFilter } from './seccomp.js';
import { attachNetwork, type NetworkPlan } from './sandbox-network.js';

const INFO_TIMEOUT_MS = 10_000;

export interface LaunchedProcess {
  child: ChildProcess;
  /** bwrap's first process inside the namespaces (null without isolation). */
  nsPid: number | null;
  /** pasta, serving the sandbox's network (null without isolation). */
  network: ProcessIdentity | null;
}

export interface LaunchOptions {
  command: string;
  args: string[];
  env: Record<string, string>;
  cwd: string;
  /** stdout and stderr of the sandbox ('ignore' for the trial). */
  output: number | 'ignore';
  isolation: Isolation;
  network: NetworkPlan | null;
  /** The service's own folder about the sandbox (pasta's pid file). */
  stateDir: string;
  /** Run before the command, in the same process (a cgroup's entry, prlimit). */
  prefix: string[];
}

/** Spawns the sandbox detached (its own process group); rejects with why it could not start. */
export async function launchSandboxProcess(options: LaunchOptions): Promise<LaunchedProcess> {
  const [command, ...args] = [...options.prefix, options.command, ...options.args] as [string, ...string[]];
  const isolation = options.isolation;
  const isolated = isolation.kind === 'bubblewrap' && options.network !== null;
  const io = isolated
    ? (['ignore', options.output, options.output, 'pipe', 'pipe', 'pipe'] as const)
    : (['ignore', options.output, options.output] as const);
  const child = spawn(command, args, { cwd: options.cwd, env: options.env, detached: true, stdio: [...io] });
  const spawned = await new Promise<Error | null>((resolve) => {
    child.once('spawn', () => resolve(null));
    child.once('error', (error) => resolve(error));
  });
  if (spawned) throw spawned;
  if (!isolated) return { child, nsPid: null, network: null };
  // bwrap closes its ends when it is done with them (or exits): a reset then is no error of ours.
  for (const fd of Object.values(LAUNCH_FDS)) stdio(child)[fd]?.on('error', () => undefined);
  try {
    (stdio(child)[LAUNCH_FDS.seccomp] as Writable).end(seccompFilter());
    const nsPid = await firstProcess(child);
    // bwrap's first process adds 127.0.0.1 to its loopback exclusively once released; pasta brings
    // the loopback up too, and the kernel then adds it first: bwrap would exit. So pasta waits.
    await loopbackReady(child, nsPid);
    const network = await attachNetwork({
      pasta: isolation.pasta,
      ip: isolation.ip,
      nsPid,
      privileged: isolation.privileged,
      plan: options.network!,
      stateDir: options.stateDir,
    });
    (stdio(child)[LAUNCH_FDS.block] as Writable).end('go');
    return { child, nsPid, network };
  } catch (error) {
    killGroup(child);
    throw error;
  }
}

/** How long a network has after SIGTERM before SIGKILL. */
const NETWORK_GRACE_MS = 2_000;

/**
 * Ends the sandbox's network (pasta outlives the namespace it served): SIGTERM, then SIGKILL if
 * that same process still runs after a grace (strays were seen ignoring SIGTERM). Returns at once.
 */
export function stopNetwork(network: ProcessIdentity | null | undefined): void {
  if (!signalIfSame(network, 'SIGTERM')) return;
  setTimeout(() => signalIfSame(network, 'SIGKILL'), NETWORK_GRACE_MS).unref();
}

/**
 * Ends a pasta that outlived what recorded it (a start cut short by the service's stop leaves
 * no runtime record naming its network): `<stateDir>/network.pid` names it, and only a process
 * whose command line names that same file is signalled (a reused pid is left alone). SIGKILL:
 * it runs as root, and such a stray one was seen ignoring SIGTERM. True when one was ended.
 */
export function stopStrayNetwork(stateDir: string): boolean {
  const pidFile = path.join(stateDir, 'network.pid');
  try {
    const pid = Number(fs.readFileSync(pidFile, 'utf8').trim());
    if (!Number.isInteger(pid) || pid <= 1) return false;
    if (!fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').includes(pidFile)) return false;
    process.kill(pid, 'SIGKILL');
    return true;
  } catch {
    return false; // no file, no such process: nothing astray
  }
}

/**
 * The start-up trial: an isolated `true` with a network, as a sandbox would start. Null when it
 * works; else why not, in words for the operator.
 */
export async function trialIsolation(isolation: Isolated): Promise<string | null> {
  const stateDir = fs.mkdtempSync(path.join(os.tmpdir(), 'acp-isolation-trial-'));
  let network: ProcessIdentity | null = null;
  try {
    const { command, args } = trialCommand(isolation);
    const launched = await launchSandboxProcess({
      command,
      args,
      env: { PATH: '/usr/bin:/bin' },
      cwd: '/',
      output: 'ignore',
      isolation,
      network: { inbound: [], outbound: [] },
      stateDir,
      prefix: [],
    });
    network = launched.network;
    const code = await new Promise<number | null>((resolve) => launched.child.once('exit', (c) => resolve(c)));
    return code === 0 ? null : `an isolated trial process exited with code ${code}`;
  } catch (error) {
    return `sandboxes cannot be given namespaces and a network here: ${(error as Error).message}`;
  } finally {
    stopNetwork(network);
    fs.rmSync(stateDir, { recursive: true, force: true });
  }
}

/**
 * Reads bwrap's JSON report of its first process inside the namespaces, to its end: bwrap writes
 * the namespaces' ids after the pid and closes it then (closed early, its write would kill it).
 */
function firstProcess(child: ChildProcess): Promise<number> {
  return new Promise((resolve, reject) => {
    const info = stdio(child)[LAUNCH_FDS.info] as Readable;
    let text = '';
    const done = (error: Error | null) => {
      clearTimeout(timer);
      info.removeAllListeners('data').removeAllListeners('end');
      child.removeListener('exit', exited);
      const pid = /"child-pid"\s*:\s*(\d+)/.exec(text)?.[1];
      if (error) reject(error);
      else if (pid) resolve(Number(pid));
      else reject(new Error('bwrap reported no process'));
    };
    const exited = (code: number | null, signal: string | null) =>
      done(new Error(`bwrap exited before the sandbox started (${signal ?? `code ${code}`})`));
    const timer = setTimeout(() => done(new Error('bwrap did not report the sandbox’s namespaces in time')), INFO_TIMEOUT_MS);
    child.once('exit', exited);
    info.on('data', (chunk: Buffer) => (text += chunk.toString()));
    info.once('end', () => done(null));
  });
}

/** Until the namespace's loopback holds 127.0.0.0/8 (bwrap's first process set it up), or bwrap fails. */
async function loopbackReady(child: ChildProcess, nsPid: number): Promise<void> {
  const deadline = Date.now() + INFO_TIMEOUT_MS;
  for (;;) {
    if (child.exitCode !== null || child.signalCode !== null) {
      throw new Error(`bwrap exited before the sandbox started (${child.signalCode ?? `code ${child.exitCode}`})`);
    }
    let routes = '';
    try {
      routes = fs.readFileSync(`/proc/${nsPid}/net/fib_trie`, 'utf8');
    } catch {
      // the process is going: the check above says how
    }
    if (/\/8 host LOCAL/.test(routes)) return;
    if (Date.now() > deadline) throw new Error('the sandbox’s loopback did not come up in time');
    await new Promise((resolve) => setTimeout(resolve, 1));
  }
}

/** The child's descriptors beyond stdio (Node's types know only the first five). */
const stdio = (child: ChildProcess) => child.stdio as unknown as (Readable | Writable | null)[];

function killGroup(child: ChildProcess): void {
  try {
    if (child.pid) process.kill(-child.pid, 'SIGKILL');
  } catch {
    // gone already
  }
}
