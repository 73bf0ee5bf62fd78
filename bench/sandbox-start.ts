// What a sandbox's own network costs its start (the acceptance: at most +100 ms p50).
// Two process runtimes side by side, built as the service builds its own (src/sandbox/machine.ts:
// the isolation resolved and tried, limits as detected, a service port): one gives each sandbox
// a network of its own (bwrap --unshare-net, pasta, routes, seccomp), the other the same
// isolation with the host's network and no seccomp (`network: 'host'`, the isolation of earlier
// releases: never configurable, only this baseline). Starts alternate between them, so noise
// hits both; each is timed from runtime.start() being called until state() reads RUNNING, then
// removed. Where the time goes comes from the helpers the runtime spawns (bwrap, pasta, nsenter
// running ip), timed by wrapping child_process.spawn, and from a probe of the agent server's
// /alive beside the runtime's own health check (every 50 ms for a start's first 3 s, then every
// 250 ms, so RUNNING moves in steps of 250 ms once the agent server's start is longer).
import type { ChildProcess } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import { createRequire, syncBuiltinESMExports } from 'node:module';
import path from 'node:path';
import { loadConfig } from '../src/config/config.js';
import { createLogger } from '../src/logger.js';
import { freePort } from '../src/processes.js';
import { installAgentServer } from '../src/sandbox/process/agent-server-setup.js';
import { resolveSandboxMachine } from '../src/sandbox/machine.js';
import type { Isolated } from '../src/sandbox/isolation/isolation.js';
import { logTail } from '../src/sandbox/process/process-launch.js';
import { ProcessSandboxRuntime } from '../src/sandbox/process/process-runtime.js';
import type { SandboxSpec } from '../src/sandbox/runtime.js';
import { defaultSpecs } from '../src/sandbox/service/sandbox-specs.service.js';
import type { Results } from './report.js';
import { FAKE_SPEC } from './starts.js';

type Agent = 'real' | 'fake';
type Mode = 'own' | 'host';

const POLL_MS = 10;
/** A start not RUNNING by then failed (the real agent server takes 6–15 s here; the service waits 120 s). */
const STARTUP_TIMEOUT_MS = 60_000;
/** Between a removal and the next start, so what the removal signalled (pasta) is gone too. */
const SETTLE_MS = 200;
const MODES: Mode[] = ['own', 'host'];
const MODE_NAME: Record<Mode, string> = { own: 'own network', host: 'the host’s' };
const agentName = (agent: Agent) => (agent === 'real' ? 'real agent server' : 'fake agent server');
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const median = (xs: number[]) => {
  const sorted = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
};
const ms = (x: number) => x.toFixed(0);
const signed = (x: number) => `${x >= 0 ? '+' : '−'}${Math.abs(x).toFixed(0)}`;

/** Milliseconds from runtime.start() being called to each moment of one start (absent: not met). */
interface Moments {
  /** The sandbox's process spawned (bwrap, behind the cgroup's and prlimit's prefixes). */
  spawned?: number;
  /** pasta spawned: bwrap has reported its namespaces and the service opened them. */
  pasta?: number;
  /** pasta's launcher exited: the network is attached, pasta serving it in the background. */
  pastaDone?: number;
  ip?: number;
  ipDone?: number;
  /** runtime.start() resolved: the process is released (block fd) and recorded. */
  returned?: number;
  /** The agent server first answered /alive (this bench's own probe). */
  alive?: number;
  running: number;
}

/** One start as it is traced: its moments so far, and the host port of its agent server once known. */
interface Traced {
  mode: Mode;
  t0: number;
  moments: Partial<Moments>;
  port?: number;
}

/** The parts of a start, in order, each from one moment to the next (ms). */
const PARTS: { name: string; from: keyof Moments | 'called'; to: keyof Moments }[] = [
  { name: 'prepare (ports, folders, cgroup)', from: 'called', to: 'spawned' },
  { name: 'bwrap reports its namespaces', from: 'spawned', to: 'pasta' },
  { name: 'pasta attach', from: 'pasta', to: 'pastaDone' },
  { name: 'routes (nsenter ip)', from: 'ip', to: 'ipDone' },
  { name: 'start() returned', from: 'called', to: 'returned' },
  { name: 'first /alive', from: 'called', to: 'alive' },
  { name: 'RUNNING', from: 'called', to: 'running' },
];

/**
 * Times the helpers the runtime spawns while one start runs (starts here run one at a time).
 * The runtime imports spawn by name; syncBuiltinESMExports makes that binding the wrapper.
 */
class SpawnTrace {
  private readonly cp = createRequire(import.meta.url)('node:child_process') as typeof import('node:child_process');
  private readonly original = this.cp.spawn;
  private current: Traced | null = null;

  constructor(private readonly bwrap: string) {
    const original = this.original;
    const trace = this;
    this.cp.spawn = function (this: unknown, ...args: unknown[]) {
      const child = (original as (...a: unknown[]) => ChildProcess).apply(this, args);
      trace.saw(args[0] as string, Array.isArray(args[1]) ? (args[1] as string[]) : [], args[2] ?? args[1], child);
      return child;
    } as typeof original;
    syncBuiltinESMExports();
  }

  begin(mode: Mode): Traced {
    this.current = { mode, t0: performance.now(), moments: {} };
    return this.current;
  }

  end(): void {
    this.current = null;
  }

  restore(): void {
    this.cp.spawn = this.original;
    syncBuiltinESMExports();
  }

  private saw(command: string, args: string[], options: unknown, child: ChildProcess): void {
    const start = this.current;
    if (!start) return;
    const at = () => performance.now() - start.t0;
    const exited = (key: 'pastaDone' | 'ipDone') => child.once('exit', () => (start.moments[key] ??= at()));
    const name = path.basename(command);
    if (name === 'pasta' || command.endsWith('/pasta')) {
      start.moments.pasta ??= at();
      exited('pastaDone');
      // -t 127.0.0.1/<host port>:8000: the agent server's forward.
      const forward = args.map((a) => /^127\.0\.0\.1\/(\d+):8000$/.exec(a)?.[1]).find(Boolean);
      if (forward) start.port = Number(forward);
    } else if (name === 'nsenter') {
      start.moments.ip ??= at();
      exited('ipDone');
    } else if (command === this.bwrap || args.includes(this.bwrap)) {
      start.moments.spawned ??= at();
      // The host's network: the agent server listens on the host port itself.
      const env = (options as { env?: Record<string, string> } | undefined)?.env;
      if (start.mode === 'host' && env?.SANDBOX_PORT) start.port = Number(env.SANDBOX_PORT);
    }
  }
}

/** Polls the agent server's /alive (once its port is known) until it answers or `stop` is set. */
async function probeAlive(start: Traced, stop: { done: boolean }): Promise<void> {
  while (!stop.done && start.moments.alive === undefined) {
    if (start.port !== undefined) {
      try {
        const answer = await fetch(`http://127.0.0.1:${start.port}/alive`, { signal: AbortSignal.timeout(1_000) });
        await answer.body?.cancel();
        if (answer.ok) start.moments.alive = performance.now() - start.t0;
      } catch {
        // not listening yet
      }
    }
    await sleep(POLL_MS);
  }
}

export async function sandboxStarts(opts: { agents: Agent[]; runs: number; dir: string; results: Results }): Promise<void> {
  const { results } = opts;
  const log = createLogger('warn', process.stderr);
  const config = loadConfig(process.env);
  const machine = await resolveSandboxMachine(config, log).catch((error: Error) => error);
  if (machine instanceof Error || machine.isolation.kind !== 'bubblewrap') {
    const why = machine instanceof Error ? machine.message : machine.isolation.kind === 'none' ? machine.isolation.reason : '';
    results.notes.push('', `Process sandbox start → RUNNING, own network against the host's: not measured (${why}).`);
    return;
  }
  const { isolation, enforcer } = machine;
  const servicePort = await freePort();
  const runtimes = Object.fromEntries(
    MODES.map((mode) => {
      const rootDir = path.join(opts.dir, mode);
      fs.mkdirSync(rootDir, { recursive: true });
      const modeIsolation: Isolated = mode === 'own' ? isolation : { ...isolation, network: 'host' };
      const runtime = new ProcessSandboxRuntime({
        rootDir,
        cacheDir: config.cacheDir,
        startupTimeoutMs: STARTUP_TIMEOUT_MS,
        agentServerVersion: config.sandbox.agentServerVersion,
        agentServerPython: config.sandbox.agentServerPython,
        isolation: modeIsolation,
        limits: { enforcer, defaults: config.sandbox.limits },
        servicePort: () => servicePort,
        hostPorts: config.sandbox.hostPorts,
        log,
      });
      return [mode, runtime];
    }),
  ) as Record<Mode, ProcessSandboxRuntime>;
  const trace = new SpawnTrace(isolation.bwrap);
  const measured: Measured[] = [];
  let sequence = 0;

  const startOnce = async (mode: Mode, spec: SandboxSpec): Promise<Moments> => {
    const runtime = runtimes[mode];
    const sandboxId = `bench-${mode}-${++sequence}`;
    const launch = {
      sandboxId,
      userId: 'bench',
      spec,
      sessionApiKey: crypto.randomBytes(32).toString('base64url'),
      secretKey: crypto.randomBytes(32).toString('base64url'),
      webhookBaseUrl: `http://127.0.0.1:${servicePort}/api/v1/webhooks/${sandboxId}`,
    };
    const start = trace.begin(mode);
    const stop = { done: false };
    const probe = probeAlive(start, stop);
    try {
      await runtime.start(launch);
      start.moments.returned = performance.now() - start.t0;
      const deadline = Date.now() + STARTUP_TIMEOUT_MS + 10_000;
      // What the sandbox's process said (bwrap's own errors land there too) says more than the state.
      const said = () => logTail(runtime.sandboxDir(sandboxId)).split('\n').pop()?.slice(0, 200);
      for (;;) {
        const state = await runtime.state(sandboxId, 'running');
        if (state.status === 'RUNNING') break;
        if (state.status !== 'STARTING') throw new StartFailed(mode, `${state.reason} (its log: ${said()})`);
        if (Date.now() > deadline) throw new StartFailed(mode, `not RUNNING in time (its log: ${said()})`);
        await sleep(POLL_MS);
      }
      const running = performance.now() - start.t0;
      stop.done = true;
      await probe;
      return { ...start.moments, running };
    } finally {
      stop.done = true;
      trace.end();
      await runtime.remove(sandboxId).catch((error: unknown) => process.stderr.write(`removing ${sandboxId}: ${String(error)}\n`));
      await sleep(SETTLE_MS);
    }
  };

  try {
    for (const agent of opts.agents) {
      let spec: SandboxSpec;
      if (agent === 'fake') spec = { ...FAKE_SPEC, initial_env: {} };
      else {
        const installed = await installAgentServer({
          cacheDir: config.cacheDir,
          agentServerVersion: config.sandbox.agentServerVersion,
          agentServerPython: config.sandbox.agentServerPython,
          log,
        }).catch((error: unknown) => {
          results.notes.push('', `Process sandbox start with the real agent server not measured: ${(error as Error).message}`);
          return null;
        });
        if (!installed) continue;
        spec = defaultSpecs(config.sandbox)[0]!;
      }
      process.stderr.write(`sandbox starts, ${agentName(agent)}, own network against the host's, 1 + ${opts.runs} runs each\n`);
      const byMode: Record<Mode, Moments[]> = { own: [], host: [] };
      const pairs: number[] = [];
      const failures: StartFailed[] = [];
      try {
        // Run 0 warms both up (the page cache, the first Python imports) and is not recorded. A
        // failed start is counted, its pair run again (up to as many failures as runs).
        for (let run = 0; run <= opts.runs; run++) {
          const order: Mode[] = run % 2 ? ['host', 'own'] : ['own', 'host'];
          const pair = {} as Record<Mode, Moments>;
          try {
            for (const mode of order) pair[mode] = await startOnce(mode, spec);
          } catch (error) {
            if (!(error instanceof StartFailed) || failures.length >= opts.runs) throw error;
            failures.push(error);
            process.stderr.write(`  run ${run}: ${error.message}; run again\n`);
            run--;
            continue;
          }
          process.stderr.write(
            `  run ${run}${run ? '' : ' (warm-up)'}: own ${ms(pair.own.running)} ms (returned ${ms(pair.own.returned!)}), ` +
              `host ${ms(pair.host.running)} ms (returned ${ms(pair.host.returned!)}), load ${loadavg()}\n`,
          );
          if (run === 0) continue;
          for (const mode of MODES) byMode[mode].push(pair[mode]);
          pairs.push(pair.own.running - pair.host.running);
        }
      } catch (error) {
        results.notes.push('', `Process sandbox start with the ${agentName(agent)} stopped: ${(error as Error).message}`);
      }
      if (byMode.own.length || failures.length) measured.push({ agent, byMode, pairs, failures });
    }
  } finally {
    trace.restore();
    for (const runtime of Object.values(runtimes)) await runtime.close();
  }
  report(measured, results, enforcer.kind, isolation.privileged);
}

/** A start that did not reach RUNNING: the measurement goes on, and the report counts it. */
class StartFailed extends Error {
  constructor(
    readonly mode: Mode,
    reason: string,
  ) {
    super(`${MODE_NAME[mode]}: ${reason}`);
  }
}

interface Measured {
  agent: Agent;
  byMode: Record<Mode, Moments[]>;
  /** own − host within each pair of runs (ms). */
  pairs: number[];
  failures: StartFailed[];
}

function report(measured: Measured[], results: Results, limits: string, privileged: boolean): void {
  if (!measured.length) return;
  const running = (moments: Moments[]) => moments.map((m) => m.running);
  for (const { agent, byMode, pairs, failures } of measured) {
    const [own, host] = [running(byMode.own), running(byMode.host)];
    const cell = (xs: number[]) => `${ms(median(xs))} ms (${ms(Math.min(...xs))}–${ms(Math.max(...xs))})`;
    const failed = MODES.map((mode) => failures.filter((f) => f.mode === mode).length);
    const failedText = failures.length ? `; starts that failed (not counted): own ${failed[0]}, the host's ${failed[1]}` : '';
    results.rows.push({
      what: `process sandbox start → RUNNING, ${agentName(agent)}, own network vs the host's (p50 of ${own.length})`,
      value: own.length
        ? `${cell(own)} against ${cell(host)}: ${signed(median(own) - median(host))} ms p50 ` +
          `(paired runs ${signed(median(pairs))} ms); target ≤ +100 ms${failedText}`
        : `no pair of starts reached RUNNING${failedText}`,
    });
    if (failures.length) results.notes.push('', `Failed starts, ${agentName(agent)}:`, '', ...failures.map((f) => `- ${f.message}`));
  }
  const parts = PARTS.map((p) => p.name);
  const table = [
    `| agent | network | ${parts.join(' | ')} |`,
    `|---|---|${parts.map(() => '---:').join('|')}|`,
    ...measured
      .filter(({ byMode }) => byMode.own.length)
      .flatMap(({ agent, byMode }) =>
        MODES.map((mode) => {
          const cells = PARTS.map(({ from, to }) => {
            const xs = byMode[mode].flatMap((m) => {
              const a = from === 'called' ? 0 : m[from];
              const b = m[to];
              return a === undefined || b === undefined ? [] : [b - a];
            });
            return xs.length ? ms(median(xs)) : '–';
          });
          return `| ${agentName(agent)} | ${MODE_NAME[mode]} | ${cells.join(' | ')} |`;
        }),
      ),
  ].join('\n');
  results.notes.push(
    '',
    'Process sandbox start → RUNNING by part (p50 ms; the parts from "start() returned" on are from the call, the others each alone):',
    '',
    table,
    '',
    `Two process runtimes side by side, starts alternating (one warm-up pair not recorded), each removed after it ran; ` +
      `isolation as the service resolves it (${privileged ? 'as root: a uid per sandbox' : 'a user namespace'}), limits by ${limits}, ` +
      `a service port forwarded. "The host's": the same isolation without a network of its own or seccomp (earlier releases'). ` +
      `RUNNING waits for the runtime's health check, which looks every 50 ms for a start's first 3 s and every 250 ms after; "first /alive" is this bench's ` +
      `own probe every ${POLL_MS} ms.`,
  );
}

const loadavg = () => (fs.readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3) as string[]).join(' ');
