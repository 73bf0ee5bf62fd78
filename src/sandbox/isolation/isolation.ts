// Tenant isolation of the process runtime. Each sandbox runs inside bubblewrap (bwrap) with its
// own pid, ipc, uts, mount and network namespaces and, when the service runs as root, its own
// unprivileged uid. Its filesystem view holds the system's read-only toolchain (/usr, /etc),
// the read-only paths its spec needs (the agent-server venv and its Python) and its own
// directory, writable, mounted at the same path as outside. Never DATA_DIR, the encryption key,
// the database socket, other sandboxes' folders, the service's files or other processes. Its
// network is its own: pasta joins the namespace before the command runs (sandbox-network.ts),
// and a seccomp filter (seccomp.ts) refuses the calls that reach past the namespaces.
//
// Without bubblewrap, pasta or namespaces the service cannot isolate: sandboxes then do not
// start (503) unless the operator declares the deployment single-user (SANDBOX_ISOLATION=none).
import { execFile } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import type { Logger } from '../../logger.js';
import { PACKAGE_ROOT } from '../../processes.js';
import { findIp } from './sandbox-network.js';
import { MountPlan, systemView, writeIdentityFiles, type SandboxView } from './sandbox-view.js';

export type { SandboxView } from './sandbox-view.js';

export type IsolationMode = 'auto' | 'bubblewrap' | 'none';

export type Isolation =
  | {
      kind: 'bubblewrap';
      bwrap: string;
      /** The user-mode network stack each sandbox's namespace is joined to. */
      pasta: string;
      /** iproute2's ip: the routing rules inside each namespace. */
      ip: string;
      /** Root creates the namespaces itself and drops to the sandbox's uid; others use a user namespace. */
      privileged: boolean;
      /**
       * 'host': the isolation of earlier releases, sharing the host's network, without seccomp:
       * never configured, only the bench's baseline (bench/sandbox-start.ts).
       */
      network?: 'own' | 'host';
    }
  | {
      kind: 'none';
      /** The operator said the deployment is single-user (SANDBOX_ISOLATION=none). */
      declaredSingleUser: boolean;
      /** Why there is no isolation, for the start-up warning and refusals. */
      reason: string;
    };

export type Isolated = Extract<Isolation, { kind: 'bubblewrap' }>;

/** The descriptors of an isolated launch (isolated-launch.ts passes them; wrapCommand names them). */
export const LAUNCH_FDS = { info: 3, block: 4, seccomp: 5 } as const;

const SETPRIV = '/usr/bin/setpriv';
// Sandbox uids: one per sandbox, from its id, in a range no distribution hands out to users
// or to container sub-uids by default. Two sandboxes sharing a uid (1 in 10^8 per pair) still
// see neither each other's processes nor files.
const SANDBOX_UID_BASE = 500_000_000;
const SANDBOX_UID_RANGE = 100_000_000;

export function sandboxUid(sandboxId: string): number {
  const digest = crypto.createHash('sha256').update(sandboxId).digest();
  return SANDBOX_UID_BASE + (digest.readUInt32BE(0) % SANDBOX_UID_RANGE);
}

const runningAsRoot = () => process.getuid?.() === 0;

/**
 * Finds what isolation needs (bwrap and pasta: found or fetched by scripts/setup-debian-tool.sh;
 * ip; setpriv as root), else none. `trial` then runs a real isolated `true` with its network
 * (isolated-launch.ts), so a machine that refuses namespaces or tun devices is found at start.
 * SANDBOX_ISOLATION=bubblewrap makes a failure fatal; =none skips it all.
 */
export async function resolveIsolation(options: {
  mode: IsolationMode;
  cacheDir: string;
  bwrapPath: string | undefined;
  pastaPath: string | undefined;
  trial: (isolation: Isolated) => Promise<string | null>;
}): Promise<Isolation> {
  if (options.mode === 'none') {
    return { kind: 'none', declaredSingleUser: true, reason: 'SANDBOX_ISOLATION=none (the operator declared the deployment single-user)' };
  }
  const outcome = await findTools(options).then(
    async (isolation) => {
      const failure = await options.trial(isolation);
      return failure === null ? isolation : { reason: failure };
    },
    (error: Error) => ({ reason: error.message }),
  );
  if ('bwrap' in outcome) return outcome;
  if (options.mode === 'bubblewrap') {
    throw new Error(`SANDBOX_ISOLATION=bubblewrap, but sandboxes cannot be isolated here: ${outcome.reason}`);
  }
  return { kind: 'none', declaredSingleUser: false, reason: outcome.reason };
}

async function findTools(options: { cacheDir: string; bwrapPath: string | undefined; pastaPath: string | undefined }): Promise<Isolated> {
  const privileged = runningAsRoot();
  if (privileged && !fs.existsSync(SETPRIV)) throw new Error(`${SETPRIV} (util-linux) is missing`);
  const ip = findIp(process.env.PATH ?? '');
  if (!ip) throw new Error('the ip program (iproute2) is missing: it sets each sandbox network’s routes');
  const [bwrap, pasta] = await Promise.all([
    findDebianTool('bubblewrap', 'bwrap', options.cacheDir, options.bwrapPath ? { BWRAP_PATH: options.bwrapPath } : {}),
    findDebianTool('passt', 'pasta', options.cacheDir, options.pastaPath ? { PASTA_PATH: options.pastaPath } : {}),
  ]);
  return { kind: 'bubblewrap', bwrap, pasta, ip, privileged };
}

/** Says at start what sandboxes are protected from, and what not. */
export function announceIsolation(isolation: Isolation, log: Logger): void {
  if (isolation.kind === 'bubblewrap') {
    log.info(
      { bwrap: isolation.bwrap, pasta: isolation.pasta, uidPerSandbox: isolation.privileged },
      'sandboxes run isolated (bubblewrap, a network of their own by pasta): each sees only its own folder, processes and network',
    );
  } else if (isolation.declaredSingleUser) {
    log.warn(
      'SANDBOX_ISOLATION=none: sandboxes run unisolated as the service user, share its network and can read its files (single-user deployment)',
    );
  } else {
    log.warn(
      { reason: isolation.reason },
      'sandboxes cannot be isolated here, so none will start; install bubblewrap and passt, or set SANDBOX_ISOLATION=none to declare a single-user deployment',
    );
  }
}

function findDebianTool(pkg: string, program: string, cacheDir: string, override: Record<string, string>): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(
      'bash',
      [path.join(PACKAGE_ROOT, 'scripts', 'setup-debian-tool.sh'), pkg, program],
      {
        env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: process.env.HOME ?? '/', AGENT_CP_CACHE_DIR: cacheDir, ...override },
        timeout: 120_000,
      },
      (error, stdout, stderr) => {
        const found = stdout.trim().split('\n').pop() ?? '';
        if (!error && found) return resolve(found);
        const why =
          stderr
            .trim()
            .split('\n')
            .pop()
            ?.replace(/^setup-[a-z]+: (ERROR: )?/, '') || String(error?.message);
        reject(new Error(`${program} is not available (${why})`));
      },
    );
  });
}

/**
 * The command line that runs `command args` isolated. The caller spawns it as the service's
 * own user, detached (its own process group), with the LAUNCH_FDS open: bwrap reports its first
 * process on `info` (whose namespaces the network joins), waits on `block` until the network is
 * up, and loads the seccomp filter from `seccomp`.
 */
export function wrapCommand(isolation: Isolated, view: SandboxView, command: string, args: string[]): { command: string; args: string[] } {
  writeIdentityFiles(view);
  const mounts = new MountPlan();
  const wrapped = [
    ...namespaceArgs(isolation),
    '--hostname',
    'sandbox',
    ...systemView(),
    // getpwuid() must know the sandbox's uid (Python, git and ssh ask for the user's name and home).
    '--ro-bind',
    path.join(view.stateDir, 'passwd'),
    '/etc/passwd',
    '--ro-bind',
    path.join(view.stateDir, 'group'),
    '/etc/group',
    ...resolverBind(view.stateDir, mounts),
    ...mounts.readOnly(view.readOnlyPaths),
    ...mounts.writable(view.dir),
    // The d6 web UI asks the agent server about /workspace/project (a container's path); here
    // that is the built-in specs' working folder, <sandbox dir>/workspace/project, mounted there
    // as a directory (a symlink showed the host's path to `ls -la /workspace`). A spec working
    // elsewhere has no such folder, and no /workspace.
    ...(fs.existsSync(path.join(view.dir, 'workspace')) ? mounts.writableAt(path.join(view.dir, 'workspace'), '/workspace') : []),
    '--chdir',
    view.dir,
    ...(isolation.network === 'host' ? [] : launchFdArgs()),
    '--',
    ...(isolation.privileged ? dropTo(view.uid) : []),
    command,
    ...args,
  ];
  return { command: isolation.bwrap, args: wrapped };
}

/** A `true` in a sandbox-like view: the start-up trial of isolated-launch.ts. */
export function trialCommand(isolation: Isolated): { command: string; args: string[] } {
  return {
    command: isolation.bwrap,
    args: [
      ...namespaceArgs(isolation),
      ...systemView(),
      ...launchFdArgs(),
      '--',
      ...(isolation.privileged ? dropTo(sandboxUid('probe')) : []),
      '/usr/bin/env',
      'true',
    ],
  };
}

function launchFdArgs(): string[] {
  return ['--info-fd', String(LAUNCH_FDS.info), '--block-fd', String(LAUNCH_FDS.block), '--seccomp', String(LAUNCH_FDS.seccomp)];
}

/**
 * The sandbox's resolv.conf (sandbox-network.ts: pasta's relay) over the host's, bound at the
 * file the host's /etc/resolv.conf resolves to (a systemd-resolved link into /run included).
 */
function resolverBind(stateDir: string, mounts: MountPlan): string[] {
  let target: string;
  try {
    target = fs.realpathSync('/etc/resolv.conf');
  } catch {
    target = '/etc/resolv.conf';
  }
  return mounts.readOnlyAt(path.join(stateDir, 'resolv.conf'), target);
}

/**
 * Root needs no user namespace to create the others, and the command then runs as a real
 * unprivileged uid (setpriv below); bwrap always sets no_new_privs, so setuid programs in
 * /usr cannot raise it again. Anyone else gets a user namespace mapping only their own uid,
 * which pasta joins too (it owns the network namespace then).
 */
function namespaceArgs(isolation: Isolated): string[] {
  const own = isolation.network !== 'host';
  return isolation.privileged
    ? ['--unshare-pid', '--unshare-ipc', '--unshare-uts', ...(own ? ['--unshare-net'] : []), '--unshare-cgroup-try']
    : [
        '--unshare-user',
        '--unshare-pid',
        '--unshare-ipc',
        '--unshare-uts',
        ...(own ? ['--unshare-net'] : []),
        '--unshare-cgroup-try',
        '--disable-userns',
      ];
}

function dropTo(uid: number): string[] {
  return [SETPRIV, `--reuid=${uid}`, `--regid=${uid}`, '--clear-groups', '--bounding-set=-all', '--inh-caps=-all', '--'];
}
