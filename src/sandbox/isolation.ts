// Tenant isolation of the process runtime. Each sandbox runs inside bubblewrap (bwrap) with its
// own pid, ipc, uts and mount namespaces and, when the service runs as root, its own
// unprivileged uid. Its filesystem view holds the system's read-only toolchain (/usr, /etc),
// the read-only paths its spec needs (the agent-server venv and its Python) and its own
// directory, writable, mounted at the same path as outside. Never DATA_DIR, the encryption key,
// the database socket, other sandboxes' folders, the service's files or other processes.
//
// What it does not separate: the network. Sandboxes share the machine's loopback with each
// other and the service (their agent servers must be reachable, and agents need the internet),
// so nothing that listens on loopback may trust its callers: the embedded database listens on
// a Unix socket, agent servers require their session key. The Kubernetes runtime adds network
// policies; docs/sandboxes.md says what each runtime isolates.
//
// Without bubblewrap or namespaces the service cannot isolate: it then starts sandboxes for one
// user at a time unless the operator declares the deployment single-user (SANDBOX_ISOLATION=none).
import { execFile, spawn } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import type { Logger } from '../logger.js';
import { PACKAGE_ROOT } from '../processes.js';
import { MountPlan, systemView, writeIdentityFiles, type SandboxView } from './sandbox-view.js';

export type { SandboxView } from './sandbox-view.js';

export type IsolationMode = 'auto' | 'bubblewrap' | 'none';

export type Isolation =
  | {
      kind: 'bubblewrap';
      bwrap: string;
      /** Root creates the namespaces itself and drops to the sandbox's uid; others use a user namespace. */
      privileged: boolean;
    }
  | {
      kind: 'none';
      /** The operator said the deployment is single-user (SANDBOX_ISOLATION=none). */
      declaredSingleUser: boolean;
      /** Why there is no isolation, for the start-up warning and refusals. */
      reason: string;
    };

const SETPRIV = '/usr/bin/setpriv';
// Sandbox uids: one per sandbox, from its id, in a range no distribution hands out to users
// or to container sub-uids by default. Two sandboxes sharing a uid (1 in 10^8 per pair) still
// see neither each other's processes nor files.
const SANDBOX_UID_BASE = 500_000_000;
const SANDBOX_UID_RANGE = 100_000_000;
const PROBE_TIMEOUT_MS = 10_000;

export function sandboxUid(sandboxId: string): number {
  const digest = crypto.createHash('sha256').update(sandboxId).digest();
  return SANDBOX_UID_BASE + (digest.readUInt32BE(0) % SANDBOX_UID_RANGE);
}

const runningAsRoot = () => process.getuid?.() === 0;

/**
 * Decides the isolation at start-up: bubblewrap when it works here (found or fetched by
 * scripts/setup-bubblewrap.sh, then probed), else none. SANDBOX_ISOLATION=bubblewrap makes a
 * failure fatal; =none skips it all.
 */
export async function resolveIsolation(options: {
  mode: IsolationMode;
  cacheDir: string;
  bwrapPath: string | undefined;
}): Promise<Isolation> {
  if (options.mode === 'none') {
    return { kind: 'none', declaredSingleUser: true, reason: 'SANDBOX_ISOLATION=none (the operator declared the deployment single-user)' };
  }
  const outcome: { bwrap: string } | { reason: string } = await findBubblewrap(options).then(
    async (bwrap) => {
      const failure = await tryNamespaces(bwrap);
      return failure === null ? { bwrap } : { reason: failure };
    },
    (error: Error) => ({ reason: error.message }),
  );
  if ('bwrap' in outcome) return { kind: 'bubblewrap', bwrap: outcome.bwrap, privileged: runningAsRoot() };
  const failure = outcome;
  if (options.mode === 'bubblewrap') {
    throw new Error(`SANDBOX_ISOLATION=bubblewrap, but sandboxes cannot be isolated here: ${failure.reason}`);
  }
  return { kind: 'none', declaredSingleUser: false, reason: failure.reason };
}

/** Says at start what sandboxes are protected from, and what not. */
export function announceIsolation(isolation: Isolation, log: Logger): void {
  if (isolation.kind === 'bubblewrap') {
    log.info(
      { bwrap: isolation.bwrap, uidPerSandbox: isolation.privileged },
      'sandboxes run isolated (bubblewrap): each sees only its own folder and processes',
    );
  } else if (isolation.declaredSingleUser) {
    log.warn('SANDBOX_ISOLATION=none: sandboxes run unisolated as the service user and can read its files (single-user deployment)');
  } else {
    log.warn(
      { reason: isolation.reason },
      'sandboxes cannot be isolated here, so they start for one user at a time; install bubblewrap, or set SANDBOX_ISOLATION=none to declare a single-user deployment',
    );
  }
}

function findBubblewrap(options: { cacheDir: string; bwrapPath: string | undefined }): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(
      'bash',
      [path.join(PACKAGE_ROOT, 'scripts', 'setup-bubblewrap.sh')],
      {
        env: {
          PATH: process.env.PATH ?? '/usr/bin:/bin',
          HOME: process.env.HOME ?? '/',
          AGENT_CP_CACHE_DIR: options.cacheDir,
          ...(options.bwrapPath ? { BWRAP_PATH: options.bwrapPath } : {}),
        },
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
            ?.replace(/^setup-bubblewrap: (ERROR: )?/, '') || String(error?.message);
        reject(new Error(`bubblewrap is not available (${why})`));
      },
    );
  });
}

/** Runs `true` in a sandbox-like view; null when it works, else why not. */
async function tryNamespaces(bwrap: string): Promise<string | null> {
  const privileged = runningAsRoot();
  if (privileged && !fs.existsSync(SETPRIV)) return `${SETPRIV} (util-linux) is missing`;
  const args = [
    ...namespaceArgs(privileged),
    ...systemView(),
    '--',
    ...(privileged ? dropTo(sandboxUid('probe')) : []),
    '/usr/bin/env',
    'true',
  ];
  return new Promise((resolve) => {
    const child = spawn(bwrap, args, { stdio: ['ignore', 'ignore', 'pipe'], timeout: PROBE_TIMEOUT_MS });
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.on('error', (error) => resolve(`bwrap does not run: ${error.message}`));
    child.on('exit', (code) =>
      resolve(code === 0 ? null : `bwrap cannot create the sandbox namespaces here: ${stderr.trim().split('\n').pop() ?? `exit ${code}`}`),
    );
  });
}

/**
 * The command line that runs `command args` isolated. The caller spawns it as the service's
 * own user, detached (its own process group); bwrap forks the namespace's init, which runs the
 * command.
 */
export function wrapCommand(
  isolation: Extract<Isolation, { kind: 'bubblewrap' }>,
  view: SandboxView,
  command: string,
  args: string[],
): { command: string; args: string[] } {
  writeIdentityFiles(view);
  const mounts = new MountPlan();
  const wrapped = [
    ...namespaceArgs(isolation.privileged),
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
    ...mounts.readOnly(view.readOnlyPaths),
    ...mounts.writable(view.dir),
    // The d6 web UI asks the agent server about /workspace/project (a container's path); here
    // that is the built-in specs' working folder, <sandbox dir>/workspace/project.
    '--symlink',
    path.join(view.dir, 'workspace'),
    '/workspace',
    '--chdir',
    view.dir,
    '--',
    ...(isolation.privileged ? dropTo(view.uid) : []),
    command,
    ...args,
  ];
  return { command: isolation.bwrap, args: wrapped };
}

/**
 * Root needs no user namespace to create the others, and the command then runs as a real
 * unprivileged uid (setpriv below); bwrap always sets no_new_privs, so setuid programs in
 * /usr cannot raise it again. Anyone else gets a user namespace mapping only their own uid.
 */
function namespaceArgs(privileged: boolean): string[] {
  return privileged ? ['--unshare-pid', '--unshare-ipc', '--unshare-uts', '--unshare-cgroup-try'] : ['--unshare-all', '--share-net'];
}

function dropTo(uid: number): string[] {
  return [SETPRIV, `--reuid=${uid}`, `--regid=${uid}`, '--clear-groups', '--bounding-set=-all', '--inh-caps=-all', '--'];
}
