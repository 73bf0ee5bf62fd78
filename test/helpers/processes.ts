// Runs the service and the CLI as real child processes, the way an operator does: compiled by
// `npm start`'s build step (a child through tsx spent ~1 s of CPU more on each start, ~40 a run).
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { PACKAGE_ROOT } from '../../src/processes.js';
import { run, TEST_BUILD_STATE, withLock } from './build-cache.js';
import { LLM_TEST_ENV } from './llm-test-env.js';
import { sandboxHostPorts } from './sandbox-host-ports.js';

const BUILD_SCRIPT = path.join(PACKAGE_ROOT, 'scripts/build-if-changed.mjs');
let built: Promise<unknown> | undefined;

/** dist/ compiled from the checkout's sources by `npm start`'s build step, once per worker (the lock: one tsc at a time). */
export function ensureServiceBuilt(): Promise<unknown> {
  built ??= withLock(path.join(TEST_BUILD_STATE, 'service.lock'), () => run(process.execPath, [BUILD_SCRIPT], { cwd: PACKAGE_ROOT })).catch(
    (error: unknown) => {
      built = undefined; // the next caller tries again and fails with the compiler's message too
      throw error;
    },
  );
  return built;
}

/** The compiled entry point, built first if the sources changed. */
async function compiled(entry: 'main' | 'cli'): Promise<string> {
  await ensureServiceBuilt();
  return path.join(PACKAGE_ROOT, 'dist', 'src', `${entry}.js`);
}

/** Environment of a child: this process's, minus anything that would point it elsewhere. */
function childEnv(env: Record<string, string>): NodeJS.ProcessEnv {
  const base = { ...process.env };
  for (const name of ['MONGODB_URI', 'SESSION_API_KEY', 'ENCRYPTION_KEY', 'ENCRYPTION_KEY_PREVIOUS', 'DATA_DIR', 'PORT']) delete base[name];
  // No web UI unless a test asks for one: the default (Agent Canvas) is fetched at start.
  const ui = env.WEB_UI || env.WEB_UI_DIR || base.WEB_UI || base.WEB_UI_DIR ? {} : { WEB_UI: 'none' };
  return { ...base, LOG_LEVEL: 'info', ...ui, SANDBOX_HOST_PORTS: sandboxHostPorts(), ...LLM_TEST_ENV, ...env };
}

export async function runCli(args: string[], env: Record<string, string>): Promise<{ code: number; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, [await compiled('cli'), ...args], {
    env: childEnv(env),
    cwd: PACKAGE_ROOT,
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (c: Buffer) => (stdout += c));
  child.stderr.on('data', (c: Buffer) => (stderr += c));
  const code = await new Promise<number>((resolve) => child.on('exit', (c) => resolve(c ?? -1)));
  return { code, stdout, stderr };
}

export interface ServiceProcess {
  child: ChildProcess;
  url: string;
  stdout: () => string;
  /** Sends SIGTERM and resolves with the exit code. */
  stop(): Promise<number | null>;
  /** SIGKILL: a crash, with no chance to clean up. */
  kill(): Promise<void>;
}

/** Starts the compiled service (dist/src/main.js), or with other arguments (e.g. the Dockerfile's Node flags). */
export async function startServiceProcess(env: Record<string, string>, timeoutMs = 120_000, args?: string[]): Promise<ServiceProcess> {
  args ??= [await compiled('main')];
  const child = spawn(process.execPath, args, {
    env: childEnv({ PORT: '0', ...env }),
    cwd: PACKAGE_ROOT,
  });
  let stdout = '';
  child.stderr.on('data', (c: Buffer) => (stdout += c));
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`service did not start:\n${stdout}`)), timeoutMs);
    child.stdout.on('data', (c: Buffer) => {
      stdout += c;
      const match = /"url":"(http:\/\/[^"]+)".*"msg":"listening"/.exec(stdout);
      if (match) {
        clearTimeout(timer);
        resolve(match[1]!);
      }
    });
    child.on('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`service exited with ${code}:\n${stdout}`));
    });
  });
  child.removeAllListeners('exit');
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  return {
    child,
    url,
    stdout: () => stdout,
    stop: async () => {
      child.kill('SIGTERM');
      return exited;
    },
    kill: async () => {
      child.kill('SIGKILL');
      await exited;
    },
  };
}
