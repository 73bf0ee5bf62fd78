// The processes the bench measures, each started the way it runs for real: the service as
// `npm start` runs it (compiled, NODE_ENV=production, logs at info to a file), the floor
// (bench/floor-server.mjs) and the reference server (bench/reference-server.ts). Plus what the
// bench reads about a process from /proc: CPU time and resident memory.
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { freePort, PACKAGE_ROOT, stopChild } from '../src/processes.js';

export interface Target {
  name: string;
  url: string;
  pid: number;
  stop(): Promise<void>;
}

/** Environment that turns the service's rate limits off: the bench is one user at one address (the report says so). */
export const RATE_LIMITS_OFF: Record<string, string> = { RATE_LIMIT_PER_USER: 'off', RATE_LIMIT_PER_IP: 'off' };

/** The node flags of `npm start` (package.json), so the bench runs exactly that command. */
export function startFlags(): string[] {
  const pkg = JSON.parse(fs.readFileSync(path.join(PACKAGE_ROOT, 'package.json'), 'utf8')) as { scripts: { start: string } };
  const words = pkg.scripts.start.split(/\s+/);
  return words.slice(
    1,
    words.findIndex((w) => w.endsWith('main.js')),
  );
}

export async function startService(opts: {
  mongoUri: string;
  encryptionKey: string;
  dataDir: string;
  logFile: string;
  profileDir?: string;
  env?: Record<string, string>;
  /** Node flags added to those of `npm start` (experiments). */
  nodeFlags?: string[];
}): Promise<Target> {
  const port = await freePort();
  const flags = [
    ...startFlags(),
    ...(opts.nodeFlags ?? []),
    ...(opts.profileDir ? ['--cpu-prof', `--cpu-prof-dir=${opts.profileDir}`] : []),
  ];
  const log = fs.openSync(opts.logFile, 'a');
  const child = spawn(process.execPath, [...flags, path.join(PACKAGE_ROOT, 'dist/src/main.js')], {
    env: {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      NODE_ENV: 'production',
      HOST: '127.0.0.1',
      PORT: String(port),
      DATA_DIR: opts.dataDir,
      MONGODB_URI: opts.mongoUri,
      ENCRYPTION_KEY: opts.encryptionKey,
      LOG_LEVEL: 'info',
      ...RATE_LIMITS_OFF,
      ...opts.env,
    },
    stdio: ['ignore', log, log],
  });
  fs.closeSync(log);
  const url = `http://127.0.0.1:${port}`;
  await waitForAlive(url, child, opts.logFile);
  return { name: 'service', url, pid: child.pid!, stop: () => stopChild(child, 10_000) };
}

/** profileDir: profile the floor as well, so its shares can be set beside the service's. */
export async function startFloor(mongoUri: string, userId: string, profileDir?: string): Promise<Target> {
  const port = await freePort();
  const child = spawn(
    process.execPath,
    [
      ...(profileDir ? ['--cpu-prof', `--cpu-prof-dir=${profileDir}`, '--cpu-prof-name=floor.cpuprofile'] : []),
      path.join(PACKAGE_ROOT, 'bench/floor-server.mjs'),
      ...['--port', String(port), '--mongo-uri', mongoUri, '--user', userId],
    ],
    {
      stdio: ['ignore', 'ignore', 'inherit'],
    },
  );
  const url = `http://127.0.0.1:${port}`;
  await waitForAlive(url, child);
  return { name: 'floor', url, pid: child.pid!, stop: () => stopChild(child) };
}

async function waitForAlive(url: string, child: ChildProcess, logFile?: string): Promise<void> {
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) {
      const tail = logFile ? fs.readFileSync(logFile, 'utf8').slice(-2000) : '';
      throw new Error(`${url} exited with ${child.exitCode} before answering\n${tail}`);
    }
    try {
      if ((await fetch(`${url}/alive`)).ok) return;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`${url} did not answer /alive within 60 s`);
}

const TICKS_PER_SECOND = 100; // USER_HZ on Linux

/** CPU seconds (user + system) a process has used so far. */
export function cpuSeconds(pid: number): number {
  const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / TICKS_PER_SECOND; // utime, stime
}

/** Busy CPU seconds of the whole machine so far (all cores). */
export function machineBusySeconds(): number {
  const [, ...ticks] = fs.readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/).map(Number);
  const idle = ticks[3]! + ticks[4]!; // idle, iowait
  return (ticks.reduce((a, b) => a + b, 0) - idle) / TICKS_PER_SECOND;
}

/** Resident and peak resident memory in MiB (VmRSS, VmHWM). */
export function memoryMiB(pid: number): { rss: number; peak: number } {
  const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
  const kib = (name: string) => Number(new RegExp(`^${name}:\\s+(\\d+)`, 'm').exec(status)?.[1] ?? NaN);
  return { rss: kib('VmRSS') / 1024, peak: kib('VmHWM') / 1024 };
}

/** Measures CPU of the given processes and of everything else on the machine over a period. */
export function cpuMeter(pids: number[]) {
  const self = () => {
    const usage = process.cpuUsage();
    return (usage.user + usage.system) / 1e6;
  };
  const own = () => pids.reduce((sum, pid) => sum + cpuSeconds(pid), 0) + self();
  const startWall = performance.now();
  const startOwn = own();
  const startSelf = self();
  const startMachine = machineBusySeconds();
  return () => {
    const seconds = (performance.now() - startWall) / 1000;
    const ownCores = (own() - startOwn) / seconds;
    const machineCores = (machineBusySeconds() - startMachine) / seconds;
    return { ownCores, otherCores: Math.max(0, machineCores - ownCores), selfCpuSeconds: self() - startSelf };
  };
}

/**
 * Deletes a sandbox through the service and waits until it is gone (its processes stopped) before
 * the service may stop: a deletion cut short by the stop left the sandbox's processes behind.
 */
export async function deleteSandbox(serviceUrl: string, headers: Record<string, string>, sandboxId: string): Promise<void> {
  await fetch(`${serviceUrl}/api/v1/sandboxes/${sandboxId}`, { method: 'DELETE', headers });
  for (const deadline = Date.now() + 30_000; Date.now() < deadline; await new Promise((r) => setTimeout(r, 200))) {
    const [found] = (await (await fetch(`${serviceUrl}/api/v1/sandboxes?id=${sandboxId}`, { headers })).json()) as unknown[];
    if (found === null) return;
  }
  process.stderr.write(`bench: sandbox ${sandboxId} still there after 30 s\n`);
}

/** A bench script of its own (node, no loader) that prints "<name>: ready <url>" once it listens. */
export async function startReadyScript(script: string, name: string) {
  const child = spawn(process.execPath, [path.join(PACKAGE_ROOT, script)], { stdio: ['ignore', 'pipe', 'inherit'] });
  const url = await new Promise<string>((resolve, reject) => {
    let seen = '';
    child.stdout!.on('data', (chunk: Buffer) => {
      seen += chunk.toString();
      const ready = new RegExp(`${name}: ready (\\S+)`).exec(seen);
      if (ready) resolve(ready[1]!);
    });
    child.once('exit', (code) => reject(new Error(`${script} exited (${code}): ${seen}`)));
  });
  return { url, pid: child.pid!, stop: () => stopChild(child) };
}

export { PACKAGE_ROOT };
