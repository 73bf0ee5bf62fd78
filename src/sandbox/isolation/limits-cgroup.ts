// One sandbox's cgroup, either version: its folders (v1: one per hierarchy, memory, pids and
// cpu; v2: one), the limits written into them, whether a limit was hit, and its end (kill what
// remains, rmdir). It does not decide which version this machine has: limits.ts does.
import fs from 'node:fs';
import path from 'node:path';
import type { SandboxLimits } from '../runtime.js';

/** A sandbox's cgroup: what limits.ts hands the runtime. */
export interface SandboxCgroup {
  /** Its folders: memory, pids and cpu hierarchies (v1), or the one folder (v2). */
  readonly dirs: readonly string[];
  /** Moves a running process in; what it forks afterwards is born inside, what it forked before is not. */
  add(pid: number): void;
  /**
   * A command prefix that moves itself in and then execs the rest (`[...enterPrefix(), cmd, ...args]`):
   * nothing is forked outside between the spawn and add().
   */
  enterPrefix(): string[];
  /** What a user should be told when a limit was hit since the cgroup was made; null when none was. */
  breach(): string | null;
  /** Kills every process in it and waits until they are gone. Idempotent. */
  kill(): Promise<void>;
  /** kill(), then removes its folders. Idempotent; a cgroup already gone is fine. */
  remove(): Promise<void>;
}

export type CgroupVersion = 1 | 2;

/** A sandbox's folder in each controller's hierarchy (the same folder three times on v2). */
export interface CgroupDirs {
  memory: string;
  pids: string;
  cpu: string;
}

const CPU_PERIOD_US = 100_000;
/** The kernel's smallest CFS quota. */
const MIN_QUOTA_US = 1_000;
/** How long kill() and remove() wait for killed processes to leave (the kernel takes milliseconds). */
const GONE_WAIT_MS = 10_000;
const POLL_MS = 10;

/** Files that say the same thing under each version. */
const FILES = {
  1: { memoryLimit: 'memory.limit_in_bytes', oomEvents: 'memory.oom_control' },
  2: { memoryLimit: 'memory.max', oomEvents: 'memory.events' },
} as const;

/** CPU time per period for a share of cores (1.5 cores: 150 ms per 100 ms). */
export function cpuQuotaUs(cpus: number): number {
  return Math.max(MIN_QUOTA_US, Math.round(cpus * CPU_PERIOD_US));
}

export class CgroupSet implements SandboxCgroup {
  readonly dirs: readonly string[];

  constructor(
    readonly version: CgroupVersion,
    private readonly at: CgroupDirs,
  ) {
    this.dirs = [...new Set([at.memory, at.pids, at.cpu])];
  }

  /** Makes the folders (kept when they exist: a restarted service finds its sandboxes' cgroups) and writes the limits. */
  apply(limits: SandboxLimits): void {
    for (const dir of this.dirs) fs.mkdirSync(dir, { recursive: true });
    const quota = cpuQuotaUs(limits.cpus);
    if (this.version === 1) {
      // memsw (memory + swap) may never be below the memory limit: lift it first, then match it (no swap).
      const memsw = path.join(this.at.memory, 'memory.memsw.limit_in_bytes');
      if (fs.existsSync(memsw)) fs.writeFileSync(memsw, '-1');
      write(this.at.memory, 'memory.limit_in_bytes', limits.memoryBytes);
      if (fs.existsSync(memsw)) fs.writeFileSync(memsw, String(limits.memoryBytes));
      write(this.at.pids, 'pids.max', limits.pids);
      write(this.at.cpu, 'cpu.cfs_period_us', CPU_PERIOD_US);
      write(this.at.cpu, 'cpu.cfs_quota_us', quota);
    } else {
      write(this.at.memory, 'memory.max', limits.memoryBytes);
      // Absent where swap is not accounted (no swap, or swapaccount=0).
      writeIfPresent(this.at.memory, 'memory.swap.max', 0);
      // An OOM kills the whole sandbox, not one process the agent server then waits on forever.
      writeIfPresent(this.at.memory, 'memory.oom.group', 1);
      write(this.at.pids, 'pids.max', limits.pids);
      write(this.at.cpu, 'cpu.max', `${quota} ${CPU_PERIOD_US}`);
    }
  }

  add(pid: number): void {
    for (const dir of this.dirs) fs.writeFileSync(path.join(dir, 'cgroup.procs'), String(pid));
  }

  enterPrefix(): string[] {
    // $$ is the shell's pid, which exec hands to the command.
    const script = 'for f in "$@"; do [ "$f" = -- ] && break; echo $$ > "$f" || exit 125; shift; done; shift; exec "$@"';
    return ['/bin/sh', '-c', script, 'cgroup-enter', ...this.dirs.map((dir) => path.join(dir, 'cgroup.procs')), '--'];
  }

  breach(): string | null {
    const files = FILES[this.version];
    if (counter(path.join(this.at.memory, files.oomEvents), 'oom_kill') > 0) {
      const limit = formatBytes(readText(path.join(this.at.memory, files.memoryLimit)));
      const group = this.version === 2 && readText(path.join(this.at.memory, 'memory.oom.group')) === '1';
      return `The sandbox reached its memory limit (${limit}): ${group ? 'its processes were killed' : 'a process was killed'}`;
    }
    if (counter(path.join(this.at.pids, 'pids.events'), 'max') > 0) {
      const limit = readText(path.join(this.at.pids, 'pids.max'));
      return `The sandbox reached its process limit (${limit}): a new process or thread was refused`;
    }
    return null;
  }

  async kill(): Promise<void> {
    // v2 (Linux 5.14+) kills the whole cgroup at once, forks in flight included.
    if (this.version === 2) writeIfPresent(this.at.pids, 'cgroup.kill', 1);
    const deadline = Date.now() + GONE_WAIT_MS;
    for (;;) {
      const pids = this.pids();
      if (pids.length === 0) return;
      // v1 has no cgroup.kill: signal every member, again until none is left (a fork can race a round).
      for (const pid of pids) signalKill(pid);
      if (Date.now() > deadline) throw new Error(`${pids.length} processes in ${this.dirs[0]} did not end`);
      await sleep(POLL_MS);
    }
  }

  async remove(): Promise<void> {
    await this.kill();
    const deadline = Date.now() + GONE_WAIT_MS;
    for (const dir of this.dirs) {
      for (;;) {
        try {
          fs.rmdirSync(dir);
          break;
        } catch (error) {
          const code = (error as NodeJS.ErrnoException).code;
          if (code === 'ENOENT') break;
          // EBUSY while the last killed processes are still leaving.
          if (code !== 'EBUSY' || Date.now() > deadline) throw error;
          await sleep(POLL_MS);
        }
      }
    }
  }

  private pids(): number[] {
    const all = new Set<number>();
    for (const dir of this.dirs) {
      for (const line of readText(path.join(dir, 'cgroup.procs')).split('\n')) if (line) all.add(Number(line));
    }
    return [...all];
  }
}

/** "4 GiB", "64 MiB", "1.5 GiB"; a value that is not a count of bytes as it is ("max"). */
export function formatBytes(value: string | number): string {
  const bytes = Number(value);
  if (!Number.isFinite(bytes) || String(value).trim() === '') return String(value);
  for (const [unit, size] of [
    ['TiB', 2 ** 40],
    ['GiB', 2 ** 30],
    ['MiB', 2 ** 20],
    ['KiB', 2 ** 10],
  ] as const) {
    if (bytes >= size) return `${Number((bytes / size).toFixed(1))} ${unit}`;
  }
  return `${bytes} bytes`;
}

function write(dir: string, file: string, value: string | number): void {
  fs.writeFileSync(path.join(dir, file), String(value));
}

function writeIfPresent(dir: string, file: string, value: string | number): void {
  if (fs.existsSync(path.join(dir, file))) write(dir, file, value);
}

/** The file's text, trimmed; '' when it (or its cgroup) is gone. */
function readText(file: string): string {
  try {
    return fs.readFileSync(file, 'utf8').trim();
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return '';
    throw error;
  }
}

/** The number after `key` in a flat-keyed file ("oom_kill 1", "max 3"); 0 when absent. */
function counter(file: string, key: string): number {
  const line = readText(file)
    .split('\n')
    .find((l) => l.startsWith(key + ' '));
  return line ? Number(line.slice(key.length + 1)) || 0 : 0;
}

function signalKill(pid: number): void {
  try {
    process.kill(pid, 'SIGKILL');
  } catch {
    // already gone
  }
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
