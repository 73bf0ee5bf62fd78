// Slow builds the tests need (the client package, the example Next.js app) run once for a
// given content of their inputs: a stamp file records the key of the last build, and a lock
// directory makes test files in parallel workers wait for one build instead of racing.
import { spawn } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';

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
  build: () => Promise<void>;
}

/** Runs `build` unless the stamp already holds `key`; 'reused' or 'built'. */
export async function buildOnce({ lockDir, stampFile, key, output, fingerprint, build }: BuildOnceOptions): Promise<'reused' | 'built'> {
  const stamp = () => `${key} ${fingerprint?.() ?? ''}`;
  const current = () => fs.existsSync(stampFile) && fs.existsSync(output) && fs.readFileSync(stampFile, 'utf8') === stamp();
  if (current()) return 'reused';
  await acquire(lockDir);
  try {
    if (current()) return 'reused';
    fs.rmSync(stampFile, { force: true });
    await build();
    fs.mkdirSync(path.dirname(stampFile), { recursive: true });
    fs.writeFileSync(stampFile, stamp());
    return 'built';
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
