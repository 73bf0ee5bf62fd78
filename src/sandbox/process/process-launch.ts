// One launch of a process sandbox: its command prepared (process-command.ts), its cgroup made
// with its spec's limits, its process started isolated (isolated-launch.ts), and its Handle.
// The agent server's output goes to a log in the sandbox's own folder: it may print what the
// sandbox was handed (its LLM and MCP keys, its secrets), which belongs with the sandbox's own
// state, never in the service's files. An ERROR's reason quotes that log only for a process that
// ended before it ran (nothing had been handed to it yet).
import fs from 'node:fs';
import path from 'node:path';
import { AppError } from '../../errors.js';
import type { Logger } from '../../logger.js';
import { launchSandboxProcess, stopNetwork } from '../isolation/isolated-launch.js';
import type { Isolation } from '../isolation/isolation.js';
import type { LimitEnforcer } from '../isolation/limits.js';
import { prepareCommand, unrunnable } from './process-command.js';
import type { Handle } from './process-handles.js';
import { identify } from './process-identity.js';
import type { SandboxLaunch, SandboxLimits } from '../runtime.js';
import { resolveLimits } from '../spec-limits.js';

/** The agent server's output, in the sandbox's own folder. */
export const SANDBOX_LOG = '.agent-server.log';
const TAIL_BYTES = 600;

export interface LaunchContext {
  dir: string;
  stateDir: string;
  uid: number | null;
  isolation: Isolation;
  limits: { enforcer: LimitEnforcer; defaults: SandboxLimits };
  servicePort: number | null;
  hostPorts: number[];
  /** An automation run's tools (process-command.ts). */
  runTools: string[];
  /** The service is stopping: nothing more starts. */
  closed: () => boolean;
  /** Whether the handle is still the sandbox's current one when its process exits. */
  current: (handle: Handle) => boolean;
  log: Logger;
}

export async function spawnSandbox(
  launch: SandboxLaunch,
  extra: Record<string, string>,
  context: LaunchContext,
): Promise<{ handle: Handle; limits: SandboxLimits }> {
  const { sandboxId } = launch;
  const { dir, stateDir } = context;
  const run = await prepareCommand(launch, extra, context, context);
  // A stopping service starts nothing: the sandbox would be watched by nothing, and no shutdown would list it.
  if (context.closed()) throw new AppError('SERVICE_UNAVAILABLE', 'The service is shutting down', { retryAfterSeconds: 5 });
  const limits = resolveLimits(launch.spec, context.limits.defaults);
  const cgroup = await context.limits.enforcer.create(sandboxId, limits);
  const output = openLog(dir, context.uid);
  let launched;
  try {
    launched = await launchSandboxProcess({
      command: run.command,
      args: run.args,
      env: run.env,
      cwd: dir,
      output,
      isolation: context.isolation,
      network: run.network,
      stateDir,
      prefix: [...(cgroup?.enterPrefix() ?? []), ...context.limits.enforcer.commandPrefix(limits)],
    });
  } catch (error) {
    await cgroup?.remove().catch(() => undefined);
    if ((error as NodeJS.ErrnoException).code)
      throw unrunnable(`Cannot run the sandbox command "${run.name}": ${(error as Error).message}`);
    context.log.warn({ sandboxId, err: error }, 'sandbox network could not be set up');
    throw new AppError('SERVICE_UNAVAILABLE', `The sandbox's network could not be set up: ${(error as Error).message}`, {
      reason: 'sandbox_runtime_unavailable',
      retryAfterSeconds: 5,
    });
  } finally {
    fs.closeSync(output);
  }
  const { child } = launched;
  const pid = child.pid ?? -1;
  const handle: Handle = {
    child,
    pid,
    leader: identify(pid),
    ports: run.ports,
    insidePorts: run.insidePorts,
    nsPid: launched.nsPid,
    network: launched.network,
    cgroup,
    vscode: false,
    phase: 'STARTING',
    reason: null,
  };
  const exited = (code: number | null, signal: NodeJS.Signals | null) => {
    clearTimeout(handle.healthTimer);
    stopNetwork(handle.network);
    // Paused or removed on purpose, or already failed (a timed-out start is stopped by us).
    if (!context.current(handle) || handle.phase === 'ERROR') return;
    const started = handle.phase === 'RUNNING';
    handle.phase = 'ERROR';
    const exit = `The sandbox process exited (${signal ?? `code ${code}`})`;
    handle.reason =
      cgroup?.breach() ??
      (started ? `${exit}; its output is in ${SANDBOX_LOG} in the sandbox's folder` : `${exit}; last output: ${logTail(dir)}`);
    context.log.warn({ sandboxId, code, signal }, 'sandbox process exited');
  };
  // An exit while the network was joined went by before anyone listened: it counts all the same.
  if (child.exitCode !== null || child.signalCode !== null) setImmediate(() => exited(child.exitCode, child.signalCode));
  else child.once('exit', exited);
  return { handle, limits };
}

/**
 * The log in a folder the sandbox writes: never through a link it planted (O_NOFOLLOW: the
 * service would append where the link points), never a FIFO (O_NONBLOCK, then a regular file
 * only), owned by the sandbox's uid like the rest of its folder.
 */
function openLog(dir: string, uid: number | null): number {
  const { O_WRONLY, O_APPEND, O_CREAT, O_NOFOLLOW, O_NONBLOCK } = fs.constants;
  const file = path.join(dir, SANDBOX_LOG);
  let fd: number;
  try {
    fd = fs.openSync(file, O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_NONBLOCK, 0o600);
  } catch (error) {
    throw unrunnable(`The sandbox's log ${SANDBOX_LOG} cannot be written: ${(error as NodeJS.ErrnoException).code}`);
  }
  if (!fs.fstatSync(fd).isFile()) {
    fs.closeSync(fd);
    throw unrunnable(`The sandbox's log ${SANDBOX_LOG} is not a regular file`);
  }
  if (uid !== null) fs.fchownSync(fd, uid, uid);
  return fd;
}

/** The last bytes of the sandbox's log, read as safely as it was opened. */
export function logTail(dir: string): string {
  const { O_RDONLY, O_NOFOLLOW, O_NONBLOCK } = fs.constants;
  let fd: number | null = null;
  try {
    fd = fs.openSync(path.join(dir, SANDBOX_LOG), O_RDONLY | O_NOFOLLOW | O_NONBLOCK);
    const stat = fs.fstatSync(fd);
    if (!stat.isFile()) return '(none)';
    const length = Math.min(TAIL_BYTES, stat.size);
    const buffer = Buffer.alloc(length);
    fs.readSync(fd, buffer, 0, length, stat.size - length);
    return buffer.toString('utf8').trim() || '(none)';
  } catch {
    return '(none)';
  } finally {
    if (fd !== null) fs.closeSync(fd);
  }
}
