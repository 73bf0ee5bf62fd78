// Where sandboxes' cgroups go on this machine, found at start-up: under the service's own
// cgroup (read from /proc/self/cgroup and /proc/self/mountinfo), in a folder `sandboxes`, so a
// restarted service finds them again. Each finder answers a place, or why there is none.
import fs from 'node:fs';
import path from 'node:path';
import type { CgroupDirs, CgroupVersion } from './limits-cgroup.js';

export interface CgroupPlace {
  version: CgroupVersion;
  /** The sandbox's folders (made later, by CgroupSet.apply). */
  dirsFor(sandboxId: string): CgroupDirs;
  /** Where, for the start-up log. */
  where: string;
}

const CONTROLLERS = ['memory', 'pids', 'cpu'] as const;
/** The leaf the service's own processes move into on v2 (a cgroup with children's controllers holds no processes). */
export const SERVICE_LEAF = 'service';

interface CgroupMount {
  fsType: 'cgroup' | 'cgroup2';
  /** The cgroup path this mount shows at its mount point ("/" unless a container mounts its own). */
  root: string;
  mountPoint: string;
  options: string[];
}

/** The process's cgroup per v1 controller, and '' for its v2 cgroup. */
export function ownCgroups(procSelfCgroup: string): Map<string, string> {
  const own = new Map<string, string>();
  for (const line of procSelfCgroup.split('\n')) {
    const match = /^\d+:([^:]*):(.*)$/.exec(line);
    if (!match) continue;
    for (const controller of match[1] === '' ? [''] : match[1]!.split(',')) own.set(controller, match[2]!);
  }
  return own;
}

export function cgroupMounts(mountinfo: string): CgroupMount[] {
  const mounts: CgroupMount[] = [];
  for (const line of mountinfo.split('\n')) {
    const [before, after] = line.split(' - ');
    if (!before || !after) continue;
    const fields = before.split(' ');
    const [fsType, , superOptions] = after.split(' ');
    if (fsType !== 'cgroup' && fsType !== 'cgroup2') continue;
    mounts.push({ fsType, root: unescape(fields[3]!), mountPoint: unescape(fields[4]!), options: (superOptions ?? '').split(',') });
  }
  return mounts;
}

/** The folder of a cgroup path under a mount; null when the mount does not show it. */
function folderOf(mount: CgroupMount, cgroupPath: string): string | null {
  if (mount.root === '/') return path.join(mount.mountPoint, cgroupPath);
  if (cgroupPath !== mount.root && !cgroupPath.startsWith(mount.root + '/')) return null;
  return path.join(mount.mountPoint, cgroupPath.slice(mount.root.length));
}

/** The service's own cgroup2 folder, or why there is none. */
export function ownCgroupV2Dir(mountinfo: string, procSelfCgroup: string): string | { reason: string } {
  const mount = cgroupMounts(mountinfo).find((m) => m.fsType === 'cgroup2');
  const own = ownCgroups(procSelfCgroup).get('');
  if (!mount || own === undefined) return { reason: 'no cgroup2 hierarchy is mounted' };
  return folderOf(mount, own) ?? { reason: `the service's cgroup2 (${own}) is outside the mounted hierarchy` };
}

/**
 * cgroup v2 under the service's own cgroup: needs memory, pids and cpu in its cgroup.controllers
 * and the right to write there (root, or a delegated cgroup: systemd's Delegate=yes). Children
 * get controllers only from a cgroup without processes of its own (the hierarchy's root aside),
 * so the service's processes move into `<own>/service` first, then `<own>` and
 * `<own>/sandboxes` enable the controllers.
 * A restarted service finds itself in `<own>/service` and uses `<own>` again.
 */
export function cgroupV2Place(ownDir: string, group: string): CgroupPlace | { reason: string } {
  const base =
    path.basename(ownDir) === SERVICE_LEAF && fs.existsSync(path.join(path.dirname(ownDir), group)) ? path.dirname(ownDir) : ownDir;
  const available = readWords(path.join(base, 'cgroup.controllers'));
  const missing = CONTROLLERS.filter((c) => !available.includes(c));
  if (missing.length > 0) {
    return {
      reason: `cgroup v2: the service's cgroup ${base} lacks the ${missing.join(', ')} controller(s) (it has: ${available.join(' ') || 'none'})`,
    };
  }
  const enable = CONTROLLERS.map((c) => `+${c}`).join(' ');
  try {
    const enabled = readWords(path.join(base, 'cgroup.subtree_control')).map((w) => w.replace(/^\+/, ''));
    if (!CONTROLLERS.every((c) => enabled.includes(c))) {
      // The hierarchy's root (no cgroup.type) may hold processes and still give controllers.
      const root = !fs.existsSync(path.join(base, 'cgroup.type'));
      // Processes forked meanwhile land in <own> again (EBUSY): move them too, a few rounds.
      for (let round = 0; ; round++) {
        if (!root) moveProcesses(base, path.join(base, SERVICE_LEAF));
        try {
          fs.writeFileSync(path.join(base, 'cgroup.subtree_control'), enable);
          break;
        } catch (error) {
          if ((error as NodeJS.ErrnoException).code !== 'EBUSY' || root || round === 3) throw error;
        }
      }
    }
    fs.mkdirSync(path.join(base, group), { recursive: true });
    fs.writeFileSync(path.join(base, group, 'cgroup.subtree_control'), enable);
  } catch (error) {
    return { reason: `cgroup v2: cannot create cgroups under ${base} (${(error as Error).message})` };
  }
  return {
    version: 2,
    where: path.join(base, group),
    dirsFor: (sandboxId) => {
      const dir = path.join(base, group, checkedName(sandboxId));
      return { memory: dir, pids: dir, cpu: dir };
    },
  };
}

/** cgroup v1: a memory, a pids and a cpu hierarchy, each with the service's cgroup writable. */
export function cgroupV1Place(mountinfo: string, procSelfCgroup: string, group: string): CgroupPlace | { reason: string } {
  const mounts = cgroupMounts(mountinfo).filter((m) => m.fsType === 'cgroup');
  const own = ownCgroups(procSelfCgroup);
  const bases: Partial<Record<(typeof CONTROLLERS)[number], string>> = {};
  for (const controller of CONTROLLERS) {
    const mount = mounts.find((m) => m.options.includes(controller));
    const ownPath = own.get(controller);
    const folder = mount && ownPath !== undefined ? folderOf(mount, ownPath) : null;
    if (!folder) return { reason: `cgroup v1: no ${controller} hierarchy holding the service's cgroup is mounted` };
    bases[controller] = path.join(folder, group);
  }
  try {
    for (const base of Object.values(bases)) fs.mkdirSync(base, { recursive: true });
  } catch (error) {
    return { reason: `cgroup v1: cannot create cgroups (${(error as Error).message})` };
  }
  const { memory, pids, cpu } = bases as Record<(typeof CONTROLLERS)[number], string>;
  return {
    version: 1,
    where: [memory, pids, cpu].join(', '),
    dirsFor: (sandboxId) => {
      const name = checkedName(sandboxId);
      return { memory: path.join(memory, name), pids: path.join(pids, name), cpu: path.join(cpu, name) };
    },
  };
}

/** Writes every pid of from/cgroup.procs into to/cgroup.procs (one per write, as the kernel takes them). */
function moveProcesses(from: string, to: string): void {
  fs.mkdirSync(to, { recursive: true });
  for (const pid of readWords(path.join(from, 'cgroup.procs'))) {
    try {
      fs.writeFileSync(path.join(to, 'cgroup.procs'), pid);
    } catch (error) {
      // ESRCH: it ended meanwhile.
      if ((error as NodeJS.ErrnoException).code !== 'ESRCH') throw error;
    }
  }
}

function readWords(file: string): string[] {
  try {
    return fs.readFileSync(file, 'utf8').split(/\s+/).filter(Boolean);
  } catch {
    return [];
  }
}

/** A sandbox id as a folder name: never a path. */
function checkedName(sandboxId: string): string {
  if (!/^[A-Za-z0-9_-][A-Za-z0-9._-]{0,127}$/.test(sandboxId)) throw new Error(`not a sandbox id: ${JSON.stringify(sandboxId)}`);
  return sandboxId;
}

/** mountinfo escapes space, tab, newline and backslash as octal. */
function unescape(field: string): string {
  return field.replace(/\\([0-7]{3})/g, (_, octal: string) => String.fromCharCode(parseInt(octal, 8)));
}
