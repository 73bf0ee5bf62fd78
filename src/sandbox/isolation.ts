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
// policies; see the README.
//
// Without bubblewrap or namespaces the service cannot isolate: it then starts sandboxes for one
// user at a time unless the operator declares the deployment single-user (SANDBOX_ISOLATION=none).
import { execFile, spawn } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import type { Logger } from '../logger.js';
import { PACKAGE_ROOT } from '../processes.js';

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

/** What a wrapped command sees besides the system's toolchain. */
export interface SandboxView {
  /** The sandbox's own directory: writable, the working directory. */
  dir: string;
  /** Host paths mounted read-only at the same path (the agent-server venv, its Python, a spec's files). */
  readOnlyPaths: string[];
  /** The sandbox's uid (and gid) when the service runs as root. */
  uid: number;
  /** A folder of the service's own (not visible to the sandbox) for the generated passwd and group files. */
  stateDir: string;
}

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

/** /usr, the top-level links or folders of a merged or split /usr, /etc, and private /proc, /dev and /tmp. */
function systemView(): string[] {
  const args = ['--ro-bind', '/usr', '/usr'];
  for (const top of ['/bin', '/sbin', '/lib', '/lib32', '/lib64', '/libx32']) {
    let stat: fs.Stats;
    try {
      stat = fs.lstatSync(top);
    } catch {
      continue;
    }
    if (stat.isSymbolicLink()) args.push('--symlink', fs.readlinkSync(top), top);
    else if (stat.isDirectory()) args.push('--ro-bind', top, top);
  }
  args.push('--ro-bind', '/etc', '/etc');
  // A resolv.conf that links into /run (systemd-resolved) would dangle without its target.
  const resolv = realpathOrNull('/etc/resolv.conf');
  if (resolv && !resolv.startsWith('/etc/') && !resolv.startsWith('/usr/')) args.push('--ro-bind-try', resolv, resolv);
  args.push('--proc', '/proc', '--dev', '/dev', '--perms', '1777', '--tmpfs', '/tmp');
  return args;
}

/**
 * Where a sandbox's command will be found: an absolute path, or the first match on PATH; null
 * when it is missing or not executable here, or, when isolated, outside what the sandbox sees.
 */
export function locateCommand(command: string, searchPath: string, visible: ((file: string) => boolean) | null): string | null {
  const candidates = command.includes('/')
    ? [path.resolve(command)]
    : searchPath
        .split(':')
        .filter(Boolean)
        .map((d) => path.join(d, command));
  for (const candidate of candidates) {
    try {
      fs.accessSync(candidate, fs.constants.X_OK);
      if (!fs.statSync(candidate).isFile()) continue;
    } catch {
      continue;
    }
    if (visible && !visible(fs.realpathSync(candidate))) continue;
    return candidate;
  }
  return null;
}

/** Whether a host path is inside the isolated view of a sandbox (its toolchain, read-only paths or folder). */
export function insideView(view: Pick<SandboxView, 'dir' | 'readOnlyPaths'>): (file: string) => boolean {
  const roots = ['/usr', '/etc', view.dir, ...view.readOnlyPaths].map((p) => path.resolve(p));
  return (file) => roots.some((root) => file === root || file.startsWith(root + '/'));
}

/** Binds with their parent folders created world-traversable (bwrap would make them 0700). */
class MountPlan {
  private readonly made = new Set<string>(['/', '/usr', '/etc', '/proc', '/dev', '/tmp']);

  readOnly(paths: string[]): string[] {
    const args: string[] = [];
    // Parents first: a folder bound after one inside it would hide that mount.
    const ordered = [...new Set(paths.map((p) => path.resolve(p)))].sort((a, b) => a.split('/').length - b.split('/').length);
    for (const p of ordered) {
      if (this.covered(p) || !fs.existsSync(p)) continue;
      args.push(...this.parents(p), '--ro-bind', p, p);
      this.made.add(p);
    }
    return args;
  }

  writable(dir: string): string[] {
    const args = [...this.parents(dir), '--bind', dir, dir];
    this.made.add(dir);
    return args;
  }

  private covered(p: string): boolean {
    return ['/usr', '/etc'].some((root) => p === root || p.startsWith(root + '/'));
  }

  private parents(p: string): string[] {
    const args: string[] = [];
    const parts = p.split('/').filter(Boolean);
    for (let i = 1; i < parts.length; i++) {
      const parent = '/' + parts.slice(0, i).join('/');
      if (this.made.has(parent)) continue;
      args.push('--perms', '0755', '--dir', parent);
      this.made.add(parent);
    }
    return args;
  }
}

function writeIdentityFiles(view: SandboxView): void {
  fs.mkdirSync(view.stateDir, { recursive: true, mode: 0o700 });
  const uid = view.uid;
  fs.writeFileSync(
    path.join(view.stateDir, 'passwd'),
    `root:x:0:0:root:/root:/usr/sbin/nologin\nsandbox:x:${uid}:${uid}:sandbox:${view.dir}:/bin/bash\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n`,
  );
  fs.writeFileSync(path.join(view.stateDir, 'group'), `root:x:0:\nsandbox:x:${uid}:\nnogroup:x:65534:\n`);
}

/**
 * The host folders a Python interpreter needs: a venv's own folder and the installation its
 * pyvenv.cfg names (pyenv keeps it under the root's 0700 home, which the sandbox cannot read).
 */
export function pythonPaths(python: string): string[] {
  const venv = path.dirname(path.dirname(python));
  const paths = [venv];
  try {
    const home = /^home\s*=\s*(.+)$/m.exec(fs.readFileSync(path.join(venv, 'pyvenv.cfg'), 'utf8'))?.[1]?.trim();
    if (home) paths.push(path.dirname(home));
  } catch {
    // not a venv: the interpreter's own installation
  }
  const real = realpathOrNull(python);
  if (real) paths.push(path.dirname(path.dirname(real)));
  return paths;
}

/**
 * Makes the sandbox's folder (and what the service created in it) the sandbox uid's. A folder
 * from before isolation, or of another uid, is handed over whole once.
 */
export async function ownTree(dir: string, uid: number): Promise<void> {
  if (fs.statSync(dir).uid === uid) return;
  await new Promise<void>((resolve, reject) =>
    execFile('chown', ['-R', '--no-dereference', `${uid}:${uid}`, dir], (error) => (error ? reject(error) : resolve())),
  );
}

/** mkdir -p, giving what it creates to the uid. */
export function mkdirOwned(dir: string, uid: number | null): void {
  const first = fs.mkdirSync(dir, { recursive: true });
  if (first === undefined || uid === null) return;
  for (let current = dir; ; current = path.dirname(current)) {
    fs.chownSync(current, uid, uid);
    if (current === first) break;
  }
}

function realpathOrNull(p: string): string | null {
  try {
    return fs.realpathSync(p);
  } catch {
    return null;
  }
}
