// Start latency, measured through the service's own API on the process runtime:
// start-to-RUNNING (POST /api/v1/sandboxes until the sandbox reads RUNNING) and start-to-READY
// (POST /api/v1/app-conversations until the start task reads READY), with the real OpenHands
// agent server or the test suite's fake one. With a pool, each run waits until the pool holds a
// running sandbox again, so every run measures a claim. READY runs are also broken down by
// part: the statuses' phase_times, and the finer parts of the "conversation ready" log line
// (src/conversations/start/start-timings.ts). Used by bench/lifecycle.ts and bench/run.ts.
import path from 'node:path';
import { WARM_POOL_OWNER } from '../models/index.js';
import { loadConfig } from '../src/config/config.js';
import { generateKeyText } from '../src/crypto.js';
import { createLogger } from '../src/logger.js';
import { PACKAGE_ROOT } from '../src/processes.js';
import { startServer, type RunningServer } from '../src/server.js';

const POLL_MS = 25;

const FIXTURES_DIR = path.join(PACKAGE_ROOT, 'test/fixtures');

/** The test suite's fake agent server; an isolated sandbox sees only what its spec names. */
export const FAKE_SPEC = {
  id: 'fake-agent',
  command: [process.execPath, path.join(FIXTURES_DIR, 'fake-agent-server.mjs'), '--port', '{port}'],
  working_dir: '{sandbox_dir}/workspace/project',
  read_only_paths: [FIXTURES_DIR],
};

export interface StartRow {
  agent: string;
  pool: number;
  measure: string;
  seconds: number[];
  /** Seconds per start-task status, one per run (READY runs only). */
  phases?: Record<string, number[]>;
  /** Seconds per part of the start (the "conversation ready" line), one per run (READY runs only). */
  parts?: Record<string, number[]>;
}

export interface StartsOptions {
  agent: 'real' | 'fake';
  pool: number;
  runs: number;
  /** FerretDB's URI (ending in "/"); each measurement uses a database of its own. */
  mongoUri: string;
  /** A folder of this measurement's own (data directory). */
  dir: string;
  /** A sandbox specs file (the fake agent server's). */
  specsFile?: string;
  /** Leave out start → RUNNING. */
  readyOnly?: boolean;
}

export async function measureStarts(opts: StartsOptions): Promise<StartRow[]> {
  const { agent, pool, runs } = opts;
  const lines: string[] = [];
  const config = loadConfig({
    PORT: '0',
    DATA_DIR: opts.dir,
    MONGODB_URI: `${opts.mongoUri}bench_${path.basename(opts.dir).replace(/\W/g, '_')}`,
    ENCRYPTION_KEY: generateKeyText(),
    LOG_LEVEL: 'info',
    SANDBOX_WARM_POOL_SIZE: String(pool),
    SANDBOX_LIFECYCLE_INTERVAL_MS: '200',
    SANDBOX_IDLE_PAUSE_SECONDS: '0',
    SANDBOX_MAX_RUNNING_PER_USER: '10',
    START_TASK_POLL_MS: '50',
    ...(opts.specsFile ? { SANDBOX_SPECS_FILE: opts.specsFile } : {}),
  });
  const server = await startServer(config, createLogger('info', { write: (line: string) => void lines.push(line) }));
  try {
    const key = (await server.deps.services.apiKeys.create('bench')).key;
    const api = async (method: string, urlPath: string, body?: unknown) => {
      const res = await fetch(server.url + urlPath, {
        method,
        headers: { 'x-session-api-key': key, ...(body ? { 'content-type': 'application/json' } : {}) },
        body: body ? JSON.stringify(body) : undefined,
      });
      if (!res.ok) throw new Error(`${method} ${urlPath} answered ${res.status}: ${await res.text()}`);
      return res.json() as Promise<any>;
    };
    await api('POST', '/api/settings', { llm_model: 'openai/bench', llm_api_key: 'sk-bench', llm_base_url: 'http://127.0.0.1:9/v1' });

    const running: number[] = [];
    const ready: number[] = [];
    const phases: Record<string, number[]> = {};
    const parts: Record<string, number[]> = {};
    for (let run = 0; run < runs; run++) {
      if (!opts.readyOnly) {
        if (pool > 0) await warmPoolReady(server, lines);
        const started = performance.now();
        const sandbox = await api('POST', '/api/v1/sandboxes');
        await until(async () => (await api('GET', `/api/v1/sandboxes?id=${sandbox.id}`))[0]?.status === 'RUNNING', 'sandbox RUNNING');
        running.push((performance.now() - started) / 1000);
        await api('DELETE', `/api/v1/sandboxes/${sandbox.id}`);
      }

      if (pool > 0) await warmPoolReady(server, lines);
      const started = performance.now();
      const task = await api('POST', '/api/v1/app-conversations', {});
      let done: any;
      await until(async () => {
        done = (await api('GET', `/api/v1/app-conversations/start-tasks?ids=${task.id}`))[0];
        if (done?.status === 'ERROR') throw new Error(`start failed: ${done.detail}`);
        return done?.status === 'READY';
      }, 'task READY');
      ready.push((performance.now() - started) / 1000);
      const times = Object.entries(done.phase_times as Record<string, string>).map(([k, v]) => [k, Date.parse(v)] as const);
      for (let i = 0; i + 1 < times.length; i++) (phases[times[i]![0]] ??= []).push((times[i + 1]![1] - times[i]![1]) / 1000);
      for (const [part, { ms }] of Object.entries(await readyTimings(lines, task.id))) (parts[part] ??= []).push(ms / 1000);
      await api('DELETE', `/api/conversations/${done.app_conversation_id}`);
    }
    return [
      ...(opts.readyOnly ? [] : [{ agent, pool, measure: 'start → RUNNING (sandbox)', seconds: running }]),
      { agent, pool, measure: 'start → READY (conversation)', seconds: ready, phases, parts },
    ];
  } finally {
    await server.deps.services.sandboxLifecycle.stop();
    for (const s of await server.deps.db.models.Sandbox.find({}, { _id: 1 }).lean()) await server.deps.runtime.remove(s._id);
    await server.stop();
  }
}

/** The parts of a task's "conversation ready" log line (written just before READY is answered, so soon there). */
async function readyTimings(lines: string[], taskId: string): Promise<Record<string, { ms: number }>> {
  let found: { timings?: Record<string, { ms: number }> } | undefined;
  await until(
    async () => {
      const line = lines.find((l) => l.includes('"conversation ready"') && l.includes(taskId));
      found = line ? (JSON.parse(line) as typeof found) : undefined;
      return Boolean(found);
    },
    'the conversation ready line',
    10_000,
  );
  return found?.timings ?? {};
}

/** Waits until the pool holds a RUNNING warm sandbox it has warmed up, or a dormant one (the refill after the last claim). */
async function warmPoolReady(server: RunningServer, lines: string[]): Promise<void> {
  const warmedUp = (id: string) => lines.some((l) => /warm(ed|ing) up a warm sandbox/.test(l) && l.includes(id));
  await until(
    async () => {
      const warm = await server.deps.db.models.Sandbox.find({ userId: WARM_POOL_OWNER }, { _id: 1, dormant: 1 }).lean();
      const states = await Promise.all(
        warm.map(async (w) => ({ id: w._id, dormant: w.dormant, ...(await server.deps.runtime.state(w._id, 'running')) })),
      );
      // A dormant one runs no command before its claim (deferred initialisation): running is ready.
      return states.some((s) => s.status === 'RUNNING' && (s.dormant || warmedUp(s.id)));
    },
    'a warm sandbox',
    120_000,
  ).catch((error: unknown) => {
    // The service's warnings and errors say why (a sandbox that does not start).
    process.stderr.write(
      lines
        .filter((l) => /"level":(40|50|60)/.test(l))
        .slice(-20)
        .join(''),
    );
    throw error;
  });
}

async function until(check: () => Promise<boolean>, what: string, timeoutMs = 300_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, POLL_MS));
  }
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

/** p50, min and max of a list of seconds, as table cells. */
export const stat = (xs: number[]) => {
  const sorted = [...xs].sort((a, b) => a - b);
  return `${median(xs).toFixed(2)} | ${sorted[0]!.toFixed(2)} | ${sorted.at(-1)!.toFixed(2)}`;
};

/** A READY row's parts as a Markdown table: p50 ms of each part, in the order the start meets them. */
export function partsTable(rows: StartRow[], agentName: (agent: string) => string): string {
  const names = [...new Set(rows.flatMap((r) => Object.keys(r.parts ?? {})))];
  let out = `| agent | warm pool | ${names.join(' | ')} |\n|---|---:|${names.map(() => '---:').join('|')}|\n`;
  for (const r of rows.filter((row) => row.parts)) {
    out += `| ${agentName(r.agent)} | ${r.pool} | ${names.map((n) => (r.parts![n] ? (median(r.parts![n]) * 1000).toFixed(0) : '–')).join(' | ')} |\n`;
  }
  return out;
}
