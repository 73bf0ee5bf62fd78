// Keeps the embedded FerretDB running: when the process dies (crash, OOM kill, SIGKILL) it
// is started again on the same address and data directory, with exponential backoff between
// failed attempts. The driver reconnects by itself; meanwhile requests answer 503 and /ready
// reports the database as down. A stalled (stopped) process is left alone: it is alive, and
// requests are bounded by the driver's operation timeout until it continues.
import type { ChildProcess } from 'node:child_process';
import type { Logger } from '../../logger.js';
import { isProcessAlive, stopChild } from '../../processes.js';

const FIRST_DELAY_MS = 250;
const MAX_DELAY_MS = 10_000;
/** A server up this long counts as recovered: the next death starts the backoff afresh. */
const STABLE_MS = 30_000;
const ORPHAN_CHECK_MS = 1_000;

export interface FerretDbSupervisor {
  /** Stops supervising and stops the server if this process started it. */
  stop(): Promise<void>;
  readonly restarts: number;
}

export function superviseFerretDb(
  first: { child: ChildProcess } | { orphanPid: number },
  restart: () => Promise<ChildProcess>,
  log: Logger,
): FerretDbSupervisor {
  let child: ChildProcess | null = null;
  let stopping = false;
  let failures = 0;
  let restarts = 0;
  let timer: NodeJS.Timeout | undefined;
  let stableTimer: NodeJS.Timeout | undefined;
  let pending: Promise<void> | undefined;

  const scheduleRestart = () => {
    if (stopping) return;
    const delay = Math.min(FIRST_DELAY_MS * 2 ** failures, MAX_DELAY_MS);
    failures++;
    timer = setTimeout(() => (pending = attempt()), delay);
  };

  const attempt = async () => {
    if (stopping) return;
    try {
      const started = await restart();
      if (stopping) return void (await stopChild(started));
      restarts++;
      log.info({ pid: started.pid, restarts }, 'embedded FerretDB restarted');
      watch(started);
    } catch (error) {
      log.error({ err: error, attempt: failures }, 'restarting the embedded FerretDB failed; trying again');
      scheduleRestart();
    }
  };

  const watch = (started: ChildProcess) => {
    child = started;
    clearTimeout(stableTimer);
    stableTimer = setTimeout(() => (failures = 0), STABLE_MS);
    stableTimer.unref();
    started.once('exit', (code, signal) => {
      if (stopping || child !== started) return;
      child = null;
      clearTimeout(stableTimer);
      log.warn({ code, signal }, 'embedded FerretDB exited; restarting it');
      scheduleRestart();
    });
  };

  if ('child' in first) {
    watch(first.child);
  } else {
    // Started by an earlier instance of the service: not our child, so watch its pid.
    timer = setInterval(() => {
      if (isProcessAlive(first.orphanPid)) return;
      clearInterval(timer);
      log.warn({ pid: first.orphanPid }, 'the reused embedded FerretDB exited; starting it again');
      scheduleRestart();
    }, ORPHAN_CHECK_MS);
    timer.unref();
  }

  return {
    get restarts() {
      return restarts;
    },
    async stop() {
      stopping = true;
      clearTimeout(timer);
      clearInterval(timer);
      clearTimeout(stableTimer);
      await pending; // a restart under way stops what it started
      if (child) await stopChild(child);
    },
  };
}
