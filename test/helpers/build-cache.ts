// Slow builds the tests need (the client package, the example Next.js app) run once for a
// given content of their inputs: a stamp file records the key of the last build, and a lock
// directory makes test files in parallel workers wait for one build instead of racing. Their
// outputs are also kept outside the checkout (sharedBuild), so a fresh clone of the same
// sources copies them in instead of building again.
import { spawn } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { cacheRoot } from '../../src/config/config-values.js';
import { PACKAGE_ROOT } from '../../src/processes.js';

/** Stamps and locks of the tests' builds: per checkout, git-ignored, gone with `npm ci`. */
export const TEST_BUILD_STATE = path.join(PACKAGE_ROOT, 'node_modules', '.cache', 'agent-control-plane-tests');

const SKIPPED_DIRS = new Set(['node_modules', 'dist', '.next', '.next-test', '.git']);

/** SHA-256 over the paths and contents of the given files and folders (recursively), sorted. */
export function hashInputs(root: string, entries: string[]): string {
  const hash = crypto.createHash('sha256');
  const visit = (relative: string) => {
    const full = path.join(root, relative);
    if (!fs.existsSync(full)) return;
    if (fs.statSync(full).isDirectory()) {
      for (const name of fs.readdirSync(full).sort()) if (!SKIPPED_DIRS.has(name)) visit(path.join(relative, name));
      return;
    }
    hash.update(`${relative}\0`).update(fs.readFileSync(full)).update('\0');
  };
  for (const entry of [...entries].sort()) visit(entry);
  return hash.digest('hex');
}

export interface BuildOnceOptions {
  /** Folder created while a build runs (holds the builder's pid). */
  lockDir: string;
  /** File holding the key of the last successful build. */
  stampFile: string;
  key: string;
  /** What the build makes: a build whose output was removed since is not reused. */
  output: string;
  /** Identifies the output itself (e.g. Next.js's BUILD_ID), so a build made by hand is not taken for ours. */
  fingerprint?: () => string;
  /** Builds, or restores from the shared cache ('restored'). */
  build: () => Promise<'restored' | 'built' | void>;
}

/** Runs `build` unless the stamp already holds `key`; 'reused', 'restored' or 'built'. */
export async function buildOnce({
  lockDir,
  stampFile,
  key,
  output,
  fingerprint,
  build,
}: BuildOnceOptions): Promise<'reused' | 'restored' | 'built'> {
  const stamp = () => `${key} ${fingerprint?.() ?? ''}`;
  const current = () => fs.existsSync(stampFile) && fs.existsSync(output) && fs.readFileSync(stampFile, 'utf8') === stamp();
  if (current()) return 'reused';
  return withLock(lockDir, async () => {
    if (current()) return 'reused';
    fs.rmSync(stampFile, { force: true });
    const made = (await build()) ?? 'built';
    fs.mkdirSync(path.dirname(stampFile), { recursive: true });
    fs.writeFileSync(stampFile, stamp());
    return made;
  });
}

/** Runs `work` holding the lock directory: one holder at a time across test workers. */
export async function withLock<T>(lockDir: string, work: () => Promise<T>): Promise<T> {
  await acquire(lockDir);
  try {
    return await work();
  } finally {
    fs.rmSync(lockDir, { recursive: true, force: true });
  }
}

async function acquire(lockDir: string): Promise<void> {
  fs.mkdirSync(path.dirname(lockDir), { recursive: true });
  for (;;) {
    try {
      fs.mkdirSync(lockDir);
      fs.writeFileSync(path.join(lockDir, 'pid'), String(process.pid));
      return;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    }
    if (!holderAlive(lockDir)) fs.rmSync(lockDir, { recursive: true, force: true });
    else await sleep(500);
  }
}

/** A lock whose builder died (a killed test run) is stale; one without a pid yet is being taken. */
function holderAlive(lockDir: string): boolean {
  let pid: number;
  try {
    pid = Number(fs.readFileSync(path.join(lockDir, 'pid'), 'utf8'));
  } catch {
    return true;
  }
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Runs a command; resolves with its output, rejects with it on a non-zero exit. */
export function run(
  command: string,
  args: string[],
  options: { cwd: string; env?: NodeJS.ProcessEnv },
): Promise<{ stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd: options.cwd, env: options.env ?? process.env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c));
    child.stderr.on('data', (c: Buffer) => (stderr += c));
    child.on('error', reject);
    child.on('exit', (code) =>
      code === 0
        ? resolve({ stdout, stderr })
        : reject(new Error(`${command} ${args.join(' ')} exited with ${code}\n${stdout}\n${stderr}`)),
    );
  });
}

/** Builds kept across checkouts, by name and key (in the tools' cache root): a fresh clone with the same inputs reuses them. */
export const SHARED_BUILDS = path.join(cacheRoot(), 'test-builds');
/** Builds kept per name: the current one and the one before (another branch's). */
const SHARED_KEEP = 2;

export interface SharedBuildOptions {
  /** Which build (a folder prefix in the shared cache). */
  name: string;
  key: string;
  /** Where the build runs; `entries` are relative to it. */
  root: string;
  /** What the build makes (folders or files) and what is kept of it. */
  entries: string[];
  /** Of those, what nothing writes to after the build (node_modules): hard-linked, not copied. */
  readOnly?: string[];
  build: () => Promise<void>;
  /** Where the cache lives (SHARED_BUILDS unless a test says otherwise). */
  cacheDir?: string;
}

/**
 * Copies `entries` into `root` from the shared cache entry of `key`, or runs `build` and keeps
 * them there. An entry is stored whole or not at all (written beside, then renamed), and only
 * the newest SHARED_KEEP builds of a name are kept. Callers hold the build's lock.
 */
export async function sharedBuild({
  name,
  key,
  root,
  entries,
  readOnly = [],
  build,
  cacheDir = SHARED_BUILDS,
}: SharedBuildOptions): Promise<'restored' | 'built'> {
  const copy = (entry: string, from: string, to: string) =>
    copyTree(path.join(from, entry), path.join(to, entry), readOnly.includes(entry));
  const digest = crypto.createHash('sha256').update(key).digest('hex').slice(0, 32);
  const stored = path.join(cacheDir, `${name}-${digest}`);
  for (const entry of entries) fs.rmSync(path.join(root, entry), { recursive: true, force: true });
  if (fs.existsSync(stored)) {
    for (const entry of entries) await copy(entry, stored, root);
    fs.utimesSync(stored, new Date(), new Date()); // recently used: kept by the pruning
    return 'restored';
  }
  await build();
  const partial = `${stored}.partial-${process.pid}`;
  fs.rmSync(partial, { recursive: true, force: true });
  fs.mkdirSync(partial, { recursive: true });
  for (const entry of entries) await copy(entry, root, partial);
  fs.renameSync(partial, stored);
  prune(cacheDir, name);
  return 'built';
}

/** A copy (symlinks as they are); hard links for read-only trees where the file system allows. */
async function copyTree(from: string, to: string, link: boolean): Promise<void> {
  fs.mkdirSync(path.dirname(to), { recursive: true });
  if (link) {
    try {
      return void (await run('cp', ['-a', '--link', from, to], { cwd: path.dirname(to) }));
    } catch {
      fs.rmSync(to, { recursive: true, force: true }); // another file system: copied below
    }
  }
  await run('cp', ['-a', from, to], { cwd: path.dirname(to) });
}

function prune(cacheDir: string, name: string): void {
  const builds = fs
    .readdirSync(cacheDir)
    .filter((entry) => /^[0-9a-f]{32}$/.test(entry.slice(name.length + 1)) && entry.startsWith(`${name}-`))
    .map((entry) => ({ entry, used: fs.statSync(path.join(cacheDir, entry)).mtimeMs }))
    .sort((a, b) => b.used - a.used);
  for (const { entry } of builds.slice(SHARED_KEEP)) fs.rmSync(path.join(cacheDir, entry), { recursive: true, force: true });
}
