// Memory, process, CPU and disk limits of process sandboxes, enforced by what this machine
// allows, decided once at start-up:
// - cgroup v2, where the service's cgroup has the memory, pids and cpu controllers and may make
//   children: memory.max (no swap), memory.oom.group, pids.max, cpu.max per sandbox;
// - cgroup v1 (memory, pids and cpu hierarchies writable by the service): memory.limit_in_bytes
//   (memsw the same: no swap), pids.max, cpu.cfs_quota_us;
// - else resource limits only: RLIMIT_AS (address space, not memory in use: a rough stand-in)
//   and RLIMIT_NPROC (counted per uid: each sandbox has its own uid when the service is root,
//   otherwise all sandboxes and the service share one count), and no CPU limit at all.
// In every mode RLIMIT_FSIZE (no file larger than the disk limit) and RLIMIT_CORE 0, set by
// util-linux prlimit in front of the command; the disk as a whole is measured (diskUsage) for
// the runtime to act on. The cgroup files themselves: limits-cgroup.ts; where they go:
// limits-places.ts.
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import type { Logger } from '../../logger.js';
import { CgroupSet, type SandboxCgroup } from './limits-cgroup.js';
import { cgroupV1Place, cgroupV2Place, ownCgroupV2Dir, type CgroupPlace } from './limits-places.js';
import type { SandboxLimits } from '../runtime.js';

export type { SandboxCgroup } from './limits-cgroup.js';

export type LimitEnforcerKind = 'cgroup-v2' | 'cgroup-v1' | 'rlimits';

export interface LimitEnforcer {
  readonly kind: LimitEnforcerKind;
  /** What was found, and why no better kind (for the start-up log and docs). */
  readonly reason: string;
  /** prlimit and its limits, to put in front of the sandbox's command (after a cgroup's enterPrefix). */
  commandPrefix(limits: SandboxLimits): string[];
  /** Makes the sandbox's cgroup (or finds it) with these limits; null without cgroups. */
  create(sandboxId: string, limits: SandboxLimits): Promise<SandboxCgroup | null>;
  /** The sandbox's cgroup made earlier (by this service or the one before a restart); null when there is none. */
  find(sandboxId: string): SandboxCgroup | null;
}

export interface DetectOptions {
  /** The cgroup versions to try, in order (default both); [] leaves resource limits only. Tests force a kind with it. */
  cgroups?: ('cgroup-v2' | 'cgroup-v1')[];
  /** The folder under the service's cgroup that holds sandboxes' cgroups (default `sandboxes`). */
  group?: string;
  /** The service's own cgroup2 folder, instead of the one /proc says (a test's stand-in hierarchy). */
  cgroupV2Dir?: string;
}

export const PRLIMIT = '/usr/bin/prlimit';
const DU_TIMEOUT_MS = 60_000;

/** Picks the best enforcer this machine allows and logs which, and why. */
export async function detectLimitEnforcer(log: Logger, options: DetectOptions = {}): Promise<LimitEnforcer> {
  const group = options.group ?? 'sandboxes';
  const [mountinfo, procSelfCgroup] = ['/proc/self/mountinfo', '/proc/self/cgroup'].map((f) => readOrEmpty(f)) as [string, string];
  const reasons: string[] = [];
  for (const kind of options.cgroups ?? ['cgroup-v2', 'cgroup-v1']) {
    let place: CgroupPlace | { reason: string };
    if (kind === 'cgroup-v2') {
      const own = options.cgroupV2Dir ?? ownCgroupV2Dir(mountinfo, procSelfCgroup);
      place = typeof own === 'string' ? cgroupV2Place(own, group) : { reason: `cgroup v2: ${own.reason}` };
    } else {
      place = cgroupV1Place(mountinfo, procSelfCgroup, group);
    }
    if ('reason' in place) {
      reasons.push(place.reason);
      continue;
    }
    const enforcer = new Enforcer(kind, [`${kind} at ${place.where}`, ...reasons].join('; '), place);
    log.info({ kind, at: place.where, passedOver: reasons }, 'sandbox limits: memory, processes and CPU by cgroup; file size by rlimit');
    return enforcer;
  }
  if (!fs.existsSync(PRLIMIT)) reasons.push(`${PRLIMIT} (util-linux) is missing: no limits at all`);
  const enforcer = new Enforcer('rlimits', reasons.join('; ') || 'cgroups not tried', null);
  log.warn(
    { reasons },
    'sandbox limits: no cgroups here, so resource limits only (address space, processes per uid, file size); no CPU limit',
  );
  return enforcer;
}

class Enforcer implements LimitEnforcer {
  constructor(
    readonly kind: LimitEnforcerKind,
    readonly reason: string,
    private readonly place: CgroupPlace | null,
  ) {}

  commandPrefix(limits: SandboxLimits): string[] {
    if (!fs.existsSync(PRLIMIT)) return [];
    const args = [`--fsize=${limits.diskBytes}`, '--core=0'];
    if (this.kind === 'rlimits') args.unshift(`--as=${limits.memoryBytes}`, `--nproc=${limits.pids}`);
    return [PRLIMIT, ...args, '--'];
  }

  async create(sandboxId: string, limits: SandboxLimits): Promise<SandboxCgroup | null> {
    if (!this.place) return null;
    const dirs = this.place.dirsFor(sandboxId);
    const existed = fs.existsSync(dirs.memory);
    const cgroup = new CgroupSet(this.place.version, dirs);
    try {
      cgroup.apply(limits);
    } catch (error) {
      // One made just now goes again; one that was there may hold the sandbox's processes.
      if (!existed) await cgroup.remove().catch(() => undefined);
      throw error;
    }
    return cgroup;
  }

  find(sandboxId: string): SandboxCgroup | null {
    if (!this.place) return null;
    const dirs = this.place.dirsFor(sandboxId);
    return fs.existsSync(dirs.memory) ? new CgroupSet(this.place.version, dirs) : null;
  }
}

/**
 * Bytes the folder takes on disk (allocated blocks, not apparent sizes: a sparse file costs what
 * it holds), counting each hard-linked file once, staying on its file system and never following
 * symlinks. du runs in a child process, killed after timeoutMs (millions of small files take
 * long). Files vanishing during the count are skipped (du still prints the total).
 */
export function diskUsage(dir: string, timeoutMs = DU_TIMEOUT_MS): Promise<number> {
  return new Promise((resolve, reject) => {
    execFile(
      'du',
      ['-s', '-x', '--block-size=1', '--', dir],
      { timeout: timeoutMs, killSignal: 'SIGKILL', env: { PATH: '/usr/bin:/bin', LC_ALL: 'C' } },
      (error, stdout, stderr) => {
        const bytes = /^(\d+)\s/.exec(stdout)?.[1];
        if (error?.killed) return reject(new Error(`du of ${dir} took longer than ${timeoutMs} ms`));
        if (bytes === undefined) return reject(new Error(`du of ${dir} failed: ${stderr.trim() || error?.message}`));
        resolve(Number(bytes));
      },
    );
  });
}

function readOrEmpty(file: string): string {
  try {
    return fs.readFileSync(file, 'utf8');
  } catch {
    return '';
  }
}
