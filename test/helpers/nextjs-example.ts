// The example Next.js app (examples/nextjs) for browser tests: installed and built in its own
// folder, each step redone only when its inputs changed (`next build` takes about half a
// minute on two busy cores) and copied in from the shared build cache when another checkout
// made it from the same inputs, then run with `next start` against a test service.
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { freePort, PACKAGE_ROOT } from '../../src/processes.js';
import { buildOnce, hashInputs, run, sharedBuild, TEST_BUILD_STATE } from './build-cache.js';
import { clientBuildKey, ensureClientBuilt } from './client-package.js';

export const EXAMPLE_DIR = path.join(PACKAGE_ROOT, 'examples', 'nextjs');
const NEXT_BIN = path.join(EXAMPLE_DIR, 'node_modules', 'next', 'dist', 'bin', 'next');
const ENV = { ...process.env, NEXT_TELEMETRY_DISABLED: '1' };

type Outcome = 'reused' | 'restored' | 'built';

export interface ExampleBuild {
  client: Outcome;
  install: Outcome;
  build: Outcome;
  /** Milliseconds each step took (a reused step costs a hash of its inputs). */
  ms: { client: number; install: number; build: number };
}

/** Builds the client, installs the example's packages (npm ci) and runs `next build`, as needed. */
export async function ensureExampleBuilt(): Promise<ExampleBuild> {
  const client = await ensureClientBuilt();
  let started = Date.now();
  // npm ci copies the client package in (install-links), so a new client build means a new install.
  const installKey = `${hashInputs(EXAMPLE_DIR, ['package.json', 'package-lock.json', '.npmrc'])}-${clientBuildKey()}`;
  const install = await buildOnce({
    lockDir: path.join(TEST_BUILD_STATE, 'nextjs-example-install.lock'),
    stampFile: path.join(TEST_BUILD_STATE, 'nextjs-example-install.key'),
    key: installKey,
    output: NEXT_BIN,
    build: () =>
      sharedBuild({
        name: 'nextjs-example-modules',
        key: installKey,
        root: EXAMPLE_DIR,
        entries: ['node_modules'],
        readOnly: ['node_modules'],
        build: async () => {
          await run('npm', ['ci', '--prefer-offline', '--no-audit', '--no-fund', '--loglevel=error'], { cwd: EXAMPLE_DIR, env: ENV });
        },
      }),
  });
  const installMs = Date.now() - started;
  started = Date.now();
  const buildIdFile = path.join(EXAMPLE_DIR, '.next', 'BUILD_ID');
  const buildKey = `${installKey}-${hashInputs(EXAMPLE_DIR, sourceEntries())}`;
  const build = await buildOnce({
    lockDir: path.join(TEST_BUILD_STATE, 'nextjs-example-build.lock'),
    stampFile: path.join(TEST_BUILD_STATE, 'nextjs-example-build.key'),
    key: buildKey,
    output: buildIdFile,
    fingerprint: () => (fs.existsSync(buildIdFile) ? fs.readFileSync(buildIdFile, 'utf8') : ''),
    build: () =>
      sharedBuild({
        name: 'nextjs-example-build',
        key: buildKey,
        root: EXAMPLE_DIR,
        entries: ['.next'],
        build: async () => {
          await run(process.execPath, [NEXT_BIN, 'build'], { cwd: EXAMPLE_DIR, env: ENV });
        },
      }),
  });
  return { client: client.outcome, install, build, ms: { client: client.ms, install: installMs, build: Date.now() - started } };
}

/** The example's own files (what `next build` compiles), without generated ones. */
function sourceEntries(): string[] {
  const generated = new Set(['node_modules', '.next', 'next-env.d.ts', 'tsconfig.tsbuildinfo']);
  return fs.readdirSync(EXAMPLE_DIR).filter((name) => !generated.has(name));
}

export interface RunningExample {
  url: string;
  output: () => string;
  stop(): Promise<void>;
}

/** `next start` on a free loopback port (or `port`), talking to the service at serviceUrl. */
export async function startExampleApp(serviceUrl: string, env: Record<string, string> = {}, port?: number): Promise<RunningExample> {
  const listenPort = port ?? (await freePort());
  const url = `http://127.0.0.1:${listenPort}`;
  const child: ChildProcess = spawn(process.execPath, [NEXT_BIN, 'start', '--port', String(listenPort), '--hostname', '127.0.0.1'], {
    cwd: EXAMPLE_DIR,
    env: { ...ENV, ACP_SERVICE_URL: serviceUrl, APP_ORIGIN: url, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout!.on('data', (c: Buffer) => (output += c));
  child.stderr!.on('data', (c: Buffer) => (output += c));
  const exited = new Promise<void>((resolve) => child.on('exit', () => resolve()));
  const deadline = Date.now() + 60_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`next start exited with ${child.exitCode}:\n${output}`);
    const up = await fetch(`${url}/signin`).then(
      (r) => r.ok,
      () => false,
    );
    if (up) break;
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`next start did not answer within 60 s:\n${output}`);
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  return {
    url,
    output: () => output,
    stop: async () => {
      if (child.exitCode === null) child.kill('SIGTERM');
      await exited;
    },
  };
}
