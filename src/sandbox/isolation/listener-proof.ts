// Whom the service is about to trust with a session key. An agent server counts as started only
// once the process listening on its port is one of the sandbox's own and carries, in the
// environment the service started it with, the session key it was given. Anything else on that
// port — a squatter that bound it first, with SANDBOX_ISOLATION=none or on the host side of the
// forward — is never sent the key, the git token or the secrets that the start sends next.
import fs from 'node:fs';

export type ListenerProof = 'proven' | 'nobody' | 'foreign';

export interface ListenerCheck {
  port: number;
  /** A process inside the sandbox's network namespace (isolated), or null: the host's tables. */
  namespacePid: number | null;
  /** The sandbox's process group (its launcher is the group's leader). */
  groupPid: number;
  /** The session key the agent server was started with; null for one adopted mid-start after a restart. */
  sessionKey: string | null;
}

export function proveListener(check: ListenerCheck): ListenerProof {
  const tables = check.namespacePid === null ? '/proc/net' : `/proc/${check.namespacePid}/net`;
  const listening = listeningInodes(tables, check.port);
  if (listening.size === 0) return 'nobody';
  const sandbox = check.namespacePid === null ? inGroup(check.groupPid) : inNamespaceOf(check.namespacePid);
  const holders = new Map<string, number>();
  for (const pid of processes()) {
    if (!sandbox(pid)) continue;
    for (const inode of socketInodes(pid)) if (listening.has(inode)) holders.set(inode, pid);
  }
  for (const inode of listening) {
    const holder = holders.get(inode);
    if (holder === undefined) return 'foreign';
    if (check.sessionKey !== null && !carriesKey(holder, check.sessionKey)) return 'foreign';
  }
  return 'proven';
}

/** Socket inodes listening on the port (any address), from the tcp and tcp6 tables. */
function listeningInodes(tables: string, port: number): Set<string> {
  const inodes = new Set<string>();
  const hexPort = port.toString(16).toUpperCase().padStart(4, '0');
  for (const table of ['tcp', 'tcp6']) {
    let text: string;
    try {
      text = fs.readFileSync(`${tables}/${table}`, 'utf8');
    } catch {
      continue;
    }
    for (const line of text.split('\n').slice(1)) {
      const fields = line.trim().split(/\s+/);
      if (fields[3] === '0A' && fields[1]?.endsWith(`:${hexPort}`)) inodes.add(fields[9]!);
    }
  }
  return inodes;
}

function processes(): number[] {
  return fs
    .readdirSync('/proc')
    .filter((entry) => /^\d+$/.test(entry))
    .map(Number);
}

function socketInodes(pid: number): string[] {
  let fds: string[];
  try {
    fds = fs.readdirSync(`/proc/${pid}/fd`);
  } catch {
    return [];
  }
  const inodes: string[] = [];
  for (const fd of fds) {
    try {
      const match = /^socket:\[(\d+)\]$/.exec(fs.readlinkSync(`/proc/${pid}/fd/${fd}`));
      if (match) inodes.push(match[1]!);
    } catch {
      // closed meanwhile
    }
  }
  return inodes;
}

function inNamespaceOf(namespacePid: number): (pid: number) => boolean {
  const namespace = readLink(`/proc/${namespacePid}/ns/net`);
  return (pid) => namespace !== null && readLink(`/proc/${pid}/ns/net`) === namespace;
}

function inGroup(groupPid: number): (pid: number) => boolean {
  return (pid) => {
    try {
      const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
      return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[2]) === groupPid;
    } catch {
      return false;
    }
  };
}

function carriesKey(pid: number, key: string): boolean {
  try {
    return fs.readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0').includes(`OH_SESSION_API_KEYS_0=${key}`);
  } catch {
    return false;
  }
}

function readLink(file: string): string | null {
  try {
    return fs.readlinkSync(file);
  } catch {
    return null;
  }
}
