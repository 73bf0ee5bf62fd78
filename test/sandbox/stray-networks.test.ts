// A sandbox's network (pasta) runs on by itself, as root. When nothing records it — a start cut
// short by the service's stop, a sandbox that ended while the service was down — the process
// runtime ends it: at start-up for every sandbox whose process is gone, and when such a sandbox
// is paused or deleted. Only a process whose command line names the sandbox's own network.pid
// is signalled. Stand-ins here: processes that ignore SIGTERM, as a stray pasta was seen to.
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/config.js';
import { createLogger } from '../../src/logger.js';
import { stopNetwork, stopStrayNetwork } from '../../src/sandbox/isolation/isolated-launch.js';
import { identify } from '../../src/sandbox/process/process-identity.js';
import { detectLimitEnforcer } from '../../src/sandbox/isolation/limits.js';
import { ProcessSandboxRuntime } from '../../src/sandbox/process/process-runtime.js';
import { eventually } from '../helpers/eventually.js';

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'acp-stray-'));
const started: ChildProcess[] = [];

afterAll(() => {
  for (const child of started) child.kill('SIGKILL');
  fs.rmSync(tmp, { recursive: true, force: true });
});

/** A detached process that ignores SIGTERM (once it has said so on stdout); `args` end up in its command line. */
function decoy(args: string[]): ChildProcess {
  const script = 'process.on("SIGTERM", () => {}); process.stdout.write("ready\\n"); setInterval(() => {}, 1000)';
  const child = spawn(process.execPath, ['-e', script, '--', ...args], { detached: true, stdio: ['ignore', 'pipe', 'ignore'] });
  started.push(child);
  return child;
}

/** Once the stand-in ignores SIGTERM. */
const ignoring = (child: ChildProcess) => new Promise<void>((resolve) => child.stdout!.once('data', () => resolve()));

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

/** A sandbox folder with its state: network.pid naming a pasta stand-in, and optionally a runtime record. */
function sandboxWithNetwork(rootDir: string, sandboxId: string, record?: { pid: number }): ChildProcess {
  const stateDir = path.join(rootDir, '.state', sandboxId);
  fs.mkdirSync(path.join(rootDir, sandboxId), { recursive: true });
  fs.mkdirSync(stateDir, { recursive: true });
  const network = decoy(['--pid', path.join(stateDir, 'network.pid')]);
  fs.writeFileSync(path.join(stateDir, 'network.pid'), `${network.pid}\n`);
  if (record) fs.writeFileSync(path.join(stateDir, 'runtime.json'), JSON.stringify({ pid: record.pid, port: 1 }));
  return network;
}

async function runtimeOver(rootDir: string) {
  return new ProcessSandboxRuntime({
    rootDir,
    cacheDir: tmp,
    startupTimeoutMs: 5_000,
    agentServerVersion: '1.58.0',
    isolation: { kind: 'none', declaredSingleUser: true, reason: 'not isolated (test)' },
    limits: { enforcer: await detectLimitEnforcer(createLogger('silent'), { cgroups: [] }), defaults: loadConfig({}).sandbox.limits },
    servicePort: () => null,
    hostPorts: [],
    log: createLogger('silent'),
  });
}

describe('networks nothing records', () => {
  it('ends a network named by its pid file, and leaves a process that only reuses the pid alone', () => {
    const dir = fs.mkdtempSync(path.join(tmp, 'unit-'));
    const named = decoy(['--pid', path.join(dir, 'network.pid')]);
    fs.writeFileSync(path.join(dir, 'network.pid'), String(named.pid));
    expect(stopStrayNetwork(dir)).toBe(true);
    const other = decoy(['--pid', '/elsewhere/network.pid']);
    fs.writeFileSync(path.join(dir, 'network.pid'), String(other.pid));
    expect(stopStrayNetwork(dir)).toBe(false);
    expect(alive(other.pid!)).toBe(true);
    fs.rmSync(path.join(dir, 'network.pid'));
    expect(stopStrayNetwork(dir)).toBe(false);
    return eventually('the named one to end', async () => !alive(named.pid!));
  });

  it('ends a recorded network that ignores SIGTERM, by SIGKILL after a grace', async () => {
    const network = decoy(['--pid', '/nowhere/network.pid']);
    await ignoring(network);
    const ended = new Promise((resolve) => network.once('exit', (_code, signal) => resolve(signal)));
    stopNetwork(identify(network.pid!));
    expect(await ended).toBe('SIGKILL');
  });

  it('at start-up ends the networks of sandboxes whose process is gone, and keeps a running one’s', async () => {
    const rootDir = fs.mkdtempSync(path.join(tmp, 'root-'));
    const cutShort = sandboxWithNetwork(rootDir, 'a1b2'); // no record: its start was cut short
    const ended = sandboxWithNetwork(rootDir, 'c3d4', { pid: 2 ** 22 - 7 }); // recorded, its process gone
    const sandboxProcess = decoy([]); // a running sandbox's process group
    const running = sandboxWithNetwork(rootDir, 'e5f6', { pid: sandboxProcess.pid! });
    const runtime = await runtimeOver(rootDir);
    try {
      await eventually('the stray networks to end', async () => !alive(cutShort.pid!) && !alive(ended.pid!));
      expect(alive(running.pid!)).toBe(true);
    } finally {
      await runtime.close();
    }
  });

  it('ends such a network when its sandbox is deleted', async () => {
    const rootDir = fs.mkdtempSync(path.join(tmp, 'delete-'));
    const runtime = await runtimeOver(rootDir);
    try {
      // Left after the runtime started (its sweep is done): a start another instance cut short.
      await new Promise((resolve) => setTimeout(resolve, 200));
      const network = sandboxWithNetwork(rootDir, 'a7b8');
      await runtime.remove('a7b8');
      await eventually('the network to end', async () => !alive(network.pid!));
      expect(fs.existsSync(path.join(rootDir, 'a7b8'))).toBe(false);
    } finally {
      await runtime.close();
    }
  });
});
