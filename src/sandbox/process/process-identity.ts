// A process as the service recorded it: its pid and the kernel's start time of that pid. A pid
// alone may name another process once the first has exited and the number is reused (across a
// service restart, runtime.json outlives the processes it names), so nothing is signalled by a
// recorded pid unless the start time still matches.
import fs from 'node:fs';

export interface ProcessIdentity {
  pid: number;
  /** Field 22 of /proc/<pid>/stat: clock ticks after boot at which the process started. */
  startTime: number;
}

/** The identity of a live process, or null when it is gone (or only a zombie). */
export function identify(pid: number): ProcessIdentity | null {
  if (!Number.isInteger(pid) || pid <= 0) return null;
  let stat: string;
  try {
    stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return null;
  }
  // "pid (comm) state ppid …": comm may hold spaces and parentheses; fields resume after the last ')'.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  if (fields[0] === 'Z') return null;
  return { pid, startTime: Number(fields[19]) };
}

/** Whether the recorded process still runs as that same process. */
export function isSameProcess(recorded: ProcessIdentity | null | undefined): boolean {
  if (!recorded) return false;
  return identify(recorded.pid)?.startTime === recorded.startTime;
}

/** Sends a signal to the recorded process only if it is still that process. */
export function signalIfSame(recorded: ProcessIdentity | null | undefined, signal: NodeJS.Signals): boolean {
  if (!recorded || !isSameProcess(recorded)) return false;
  try {
    process.kill(recorded.pid, signal);
    return true;
  } catch {
    return false;
  }
}
