// What an isolated process sandbox sees (src/sandbox/isolation/isolation.ts wraps its command): the
// system's toolchain read-only, private /proc, /dev and /tmp, the read-only folders its command
// needs, its own folder writable at the same path, a passwd file naming its uid and a resolv.conf
// naming its network's resolver; and the ownership of that folder.
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { resolvConf } from './sandbox-network.js';

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

/** /usr, the top-level links or folders of a merged or split /usr, /etc, and private /proc, /dev and /tmp. */
export function systemView(): string[] {
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
export class MountPlan {
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

  /** One host file at another path (a file of the service's over the host's, such as resolv.conf). */
  readOnlyAt(source: string, target: string): string[] {
    return [...this.parents(target), '--ro-bind', source, target];
  }

  writable(dir: string): string[] {
    return this.writableAt(dir, dir);
  }

  /** A host folder at another path, writable (the sandbox's workspace at /workspace). */
  writableAt(source: string, target: string): string[] {
    const args = [...this.parents(target), '--bind', source, target];
    this.made.add(target);
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

export function writeIdentityFiles(view: SandboxView): void {
  fs.mkdirSync(view.stateDir, { recursive: true, mode: 0o700 });
  const uid = view.uid;
  fs.writeFileSync(
    path.join(view.stateDir, 'passwd'),
    `root:x:0:0:root:/root:/usr/sbin/nologin\nsandbox:x:${uid}:${uid}:sandbox:${view.dir}:/bin/bash\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n`,
  );
  fs.writeFileSync(path.join(view.stateDir, 'group'), `root:x:0:\nsandbox:x:${uid}:\nnogroup:x:65534:\n`);
  let host = '';
  try {
    host = fs.readFileSync('/etc/resolv.conf', 'utf8');
  } catch {
    // no resolver configured: the relay alone
  }
  fs.writeFileSync(path.join(view.stateDir, 'resolv.conf'), resolvConf(host));
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

/**
 * mkdir -p of a folder in the sandbox's own, giving what it creates to the uid. The sandbox has
 * written in its folder before (a resume): a link it planted on the way could otherwise make the
 * service create and chown folders anywhere, so a path through anything but a real folder is
 * refused, and nothing is chowned through a link (lchown). A folder outside the sandbox's
 * (a spec's working_dir elsewhere, the operator's choice) is made as it is, owned by no sandbox.
 */
export function mkdirOwned(sandboxDir: string, dir: string, uid: number | null): void {
  const relative = path.relative(sandboxDir, dir);
  if (relative.startsWith('..') || path.isAbsolute(relative)) {
    fs.mkdirSync(dir, { recursive: true });
    return;
  }
  let current = sandboxDir;
  for (const part of relative.split(path.sep).filter(Boolean)) {
    current = path.join(current, part);
    let stat: fs.Stats | null = null;
    try {
      stat = fs.lstatSync(current);
    } catch {
      // missing: made below (mkdir fails on anything planted meanwhile, link included)
    }
    if (stat && !stat.isDirectory())
      throw new Error(`${current} is not a folder (a link or a file): the sandbox's working folder cannot be made there`);
    if (stat) continue;
    fs.mkdirSync(current, { mode: 0o755 });
    if (uid !== null) fs.lchownSync(current, uid, uid);
  }
}

function realpathOrNull(p: string): string | null {
  try {
    return fs.realpathSync(p);
  } catch {
    return null;
  }
}
