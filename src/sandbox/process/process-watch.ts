// Watching process sandboxes: a start until its agent server is healthy and proven (the listener
// on its port is the sandbox's own process, holding the key it was given: listener-proof.ts),
// and every live sandbox against its limits: a cgroup that reports a breach (memory, processes)
// or a folder past its disk limit ends that sandbox with the reason, never the service.
import type { Logger } from '../../logger.js';
import { diskUsage } from '../isolation/limits.js';
import { proveListener } from '../isolation/listener-proof.js';
import type { Handle } from './process-handles.js';
import { isHealthy } from './process-support.js';

const HEALTH_INTERVAL_MS = 250;
/** Checked more often while a fast agent server may be answering already (the fake's first /alive comes within half a second). */
const EARLY_HEALTH_INTERVAL_MS = 50;
const EARLY_MS = 3_000;
const LIMITS_INTERVAL_MS = 2_000;
const DISK_INTERVAL_MS = 60_000;

export interface HealthWatch {
  sandboxId: string;
  handle: Handle;
  deadline: number;
  /** The start-up timeout, for the reason. */
  timeoutMs: number;
  /** The key the agent server was started with; undefined for one adopted mid-start (then membership proves it). */
  sessionKey: string | undefined;
  /** Whether the handle is still the sandbox's current one (not paused, removed or replaced). */
  current: () => boolean;
  /** The agent server answered and is proven: find VS Code, record, log. */
  onRunning: () => Promise<void>;
  /** Not healthy and proven by the deadline: stop it. */
  onTimeout: (reason: string) => Promise<void>;
  log: Logger;
}

export function watchHealth(watch: HealthWatch): void {
  const { handle } = watch;
  const since = Date.now();
  let squatted = false;
  /** /alive answered, but nothing of the sandbox listened on the port (the tables, read as root). */
  let unproven = false;
  const check = async () => {
    if (!watch.current() || handle.phase !== 'STARTING') return;
    if (await isHealthy(handle.ports.agentServer)) {
      const proof = proveListener({
        port: handle.insidePorts.agentServer,
        namespacePid: handle.nsPid,
        groupPid: handle.pid,
        sessionKey: watch.sessionKey ?? null,
      });
      if (proof === 'proven') return watch.onRunning();
      unproven = proof === 'nobody';
      if (proof === 'foreign' && !squatted) {
        squatted = true;
        watch.log.warn({ sandboxId: watch.sandboxId }, 'another process answers on the sandbox’s agent-server port: not trusted');
      }
    }
    if (Date.now() > watch.deadline) {
      return watch.onTimeout(
        squatted
          ? 'Another process held the agent server’s port, so the sandbox was not trusted with its keys'
          : unproven
            ? `The agent server answered, but no process of the sandbox was found listening on its port within ${Math.round(watch.timeoutMs / 1000)} s`
            : `The agent server did not become healthy within ${Math.round(watch.timeoutMs / 1000)} s`,
      );
    }
    handle.healthTimer = setTimeout(watched, Date.now() - since < EARLY_MS ? EARLY_HEALTH_INTERVAL_MS : HEALTH_INTERVAL_MS);
  };
  // A timer's callback must not reject (the process would end): a failed check (its state folder
  // removed by another replica meanwhile) ends the watch, logged.
  const watched = () =>
    void check().catch((error: unknown) => watch.log.warn({ sandboxId: watch.sandboxId, err: error }, 'sandbox health check failed'));
  handle.healthTimer = setTimeout(watched, 0);
}

/**
 * One timer for all live sandboxes of the runtime: cgroup breaches every 2 s, disk use every
 * minute (du in a child process, one sandbox at a time). `end` stops the sandbox with the reason.
 */
export class LimitsWatch {
  private timer: NodeJS.Timeout | undefined;
  private lastDisk = 0;
  private measuring = false;

  constructor(
    private readonly live: () => Iterable<[string, Handle]>,
    private readonly folderOf: (sandboxId: string) => string,
    private readonly diskLimitOf: (sandboxId: string) => number | null,
    private readonly end: (sandboxId: string, handle: Handle, reason: string) => Promise<void>,
    private readonly log: Logger,
  ) {}

  start(): void {
    this.timer = setInterval(
      () => void this.pass().catch((err: unknown) => this.log.warn({ err }, 'sandbox limits check failed')),
      LIMITS_INTERVAL_MS,
    );
    this.timer.unref();
  }

  stop(): void {
    clearInterval(this.timer);
  }

  private async pass(): Promise<void> {
    const live = [...this.live()].filter(([, h]) => h.phase !== 'ERROR' && !h.installing);
    for (const [sandboxId, handle] of live) {
      const breach = handle.cgroup?.breach();
      if (breach) await this.end(sandboxId, handle, breach);
    }
    if (this.measuring || Date.now() - this.lastDisk < DISK_INTERVAL_MS) return;
    this.lastDisk = Date.now();
    this.measuring = true;
    try {
      for (const [sandboxId, handle] of live) {
        const limit = this.diskLimitOf(sandboxId);
        if (limit === null) continue;
        const used = await diskUsage(this.folderOf(sandboxId)).catch(() => null);
        if (used !== null && used > limit && handle.phase !== 'ERROR') {
          await this.end(sandboxId, handle, `The sandbox reached its disk limit (${gib(limit)}): it uses ${gib(used)}`);
        }
      }
    } finally {
      this.measuring = false;
    }
  }
}

const gib = (bytes: number) => `${(bytes / 2 ** 30).toFixed(bytes < 2 ** 30 ? 2 : 1)} GiB`;
