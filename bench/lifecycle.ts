// Start latency with and without a warm pool: start-to-RUNNING (POST /api/v1/sandboxes until
// the sandbox reads RUNNING) and start-to-READY (POST /api/v1/app-conversations until the
// start task reads READY), on the process runtime with the real OpenHands agent server (when
// it can be installed) and with the test suite's fake agent server. With a pool, each run
// waits until the pool holds a running sandbox again, so every run measures a claim.
// Usage: npm run bench:lifecycle [-- --runs 5 --agents real,fake]
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { StartTaskStatusSchema } from '../contract/app-conversations.schema.js';
import { WARM_POOL_OWNER } from '../models/index.js';
import { loadConfig } from '../src/config.js';
import { generateKeyText } from '../src/crypto.js';
import { ensureFerretDbBinary, startFerretDb } from '../src/db/embedded-mongo.js';
import { createLogger } from '../src/logger.js';
import { PACKAGE_ROOT, stopChild } from '../src/processes.js';
import { installAgentServer } from '../src/sandbox/agent-server-setup.js';
import { startServer, type RunningServer } from '../src/server.js';

const { values } = parseArgs({ options: { runs: { type: 'string', default: '5' }, agents: { type: 'string', default: 'real,fake' } } });
const runs = Number(values.runs);
const log = createLogger('warn', process.stderr);
const POLL_MS = 25;

const FAKE_SPEC = {
  id: 'fake-agent',
  command: [process.execPath, path.join(PACKAGE_ROOT, 'test/fixtures/fake-agent-server.mjs'), '--port', '{port}'],
  working_dir: '{sandbox_dir}/workspace/project',
};

interface Row {
  agent: string;
  pool: number;
  measure: string;
  seconds: number[];
  /** Mean seconds per start-task phase (READY runs only). */
  phases?: Record<string, number[]>;
}

async function main() {
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'acp-bench-lifecycle-'));
  const { cacheDir } = loadConfig(process.env);
  const db = await startFerretDb({ binary: await ensureFerretDbBinary(cacheDir, log), dbDir: path.join(tmp, 'db'), stateDir: tmp, log });
  const rows: Row[] = [];
  const notes: string[] = [];
  try {
    for (const agent of values.agents.split(',')) {
      let specsFile: string | undefined;
      if (agent === 'fake') {
        specsFile = path.join(tmp, 'specs.json');
        fs.writeFileSync(specsFile, JSON.stringify([FAKE_SPEC]));
      } else {
        const python = await installAgentServer({ cacheDir, agentServerVersion: loadConfig({}).sandbox.agentServerVersion, log }).catch(
          (error: unknown) => {
            notes.push(`real agent server not measured: ${(error as Error).message}`);
            return null;
          },
        );
        if (!python) continue;
      }
      for (const pool of [0, 1]) rows.push(...(await measure(agent, pool, specsFile, db.uri, tmp)));
    }
  } finally {
    await stopChild(db.child);
    fs.rmSync(tmp, { recursive: true, force: true });
  }
  print(rows, notes);
}

async function measure(agent: string, pool: number, specsFile: string | undefined, mongoUri: string, tmp: string): Promise<Row[]> {
  const label = `${agent}-${pool}`;
  const config = loadConfig({
    PORT: '0',
    DATA_DIR: path.join(tmp, label),
    MONGODB_URI: `${mongoUri}bench_${label.replace(/-/g, '_')}`,
    ENCRYPTION_KEY: generateKeyText(),
    LOG_LEVEL: 'silent',
    SANDBOX_WARM_POOL_SIZE: String(pool),
    SANDBOX_LIFECYCLE_INTERVAL_MS: '200',
    SANDBOX_IDLE_PAUSE_SECONDS: '0',
    SANDBOX_MAX_RUNNING_PER_USER: '10',
    START_TASK_POLL_MS: '50',
    ...(specsFile ? { SANDBOX_SPECS_FILE: specsFile } : {}),
  });
  const server = await startServer(config, createLogger('silent'));
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
    for (let run = 0; run < runs; run++) {
      if (pool > 0) await warmPoolReady(server);
      let started = performance.now();
      const sandbox = await api('POST', '/api/v1/sandboxes');
      await until(async () => (await api('GET', `/api/v1/sandboxes?id=${sandbox.id}`))[0]?.status === 'RUNNING', 'sandbox RUNNING');
      running.push((performance.now() - started) / 1000);
      await api('DELETE', `/api/v1/sandboxes/${sandbox.id}`);

      if (pool > 0) await warmPoolReady(server);
      started = performance.now();
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
      await api('DELETE', `/api/conversations/${done.app_conversation_id}`);
    }
    return [
      { agent, pool, measure: 'start → RUNNING (sandbox)', seconds: running },
      { agent, pool, measure: 'start → READY (conversation)', seconds: ready, phases },
    ];
  } finally {
    await server.deps.services.sandboxLifecycle.stop();
    for (const s of await server.deps.db.models.Sandbox.find({}, { _id: 1 }).lean()) await server.deps.runtime.remove(s._id);
    await server.stop();
  }
}

/** Waits until the pool holds a RUNNING warm sandbox (the refill after the last claim). */
async function warmPoolReady(server: RunningServer): Promise<void> {
  await until(
    async () => {
      const warm = await server.deps.db.models.Sandbox.find({ userId: WARM_POOL_OWNER }, { _id: 1 }).lean();
      const states = await Promise.all(warm.map((w) => server.deps.runtime.state(w._id, 'running')));
      return states.some((s) => s.status === 'RUNNING');
    },
    'a warm sandbox',
    300_000,
  );
}

async function until(check: () => Promise<boolean>, what: string, timeoutMs = 300_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, POLL_MS));
  }
}

function print(rows: Row[], notes: string[]): void {
  const stat = (xs: number[]) => {
    const sorted = [...xs].sort((a, b) => a - b);
    const median = sorted[Math.floor(sorted.length / 2)]!;
    return `${median.toFixed(2)} | ${sorted[0]!.toFixed(2)} | ${sorted.at(-1)!.toFixed(2)}`;
  };
  const agentName = (agent: string) => (agent === 'real' ? 'real agent server' : 'fake agent server');
  let out = `\n${runs} runs each, process runtime, FerretDB (SQLite) on loopback, Node ${process.version}, ${os.cpus().length} cores\n\n`;
  out += '| agent | warm pool | measure | p50 s | min s | max s |\n|---|---:|---|---:|---:|---:|\n';
  for (const r of rows) out += `| ${agentName(r.agent)} | ${r.pool} | ${r.measure} | ${stat(r.seconds)} |\n`;
  out +=
    '\nstart → READY by phase (p50 s):\n\n| agent | warm pool | ' +
    PHASES.join(' | ') +
    ' |\n|---|---:|' +
    PHASES.map(() => '---:').join('|') +
    '|\n';
  for (const r of rows.filter((row) => row.phases)) {
    out += `| ${agentName(r.agent)} | ${r.pool} | ${PHASES.map((p) => (r.phases![p] ? stat(r.phases![p]).split(' | ')[0] : '–')).join(' | ')} |\n`;
  }
  for (const note of notes) out += `\n${note}\n`;
  process.stdout.write(out);
}

/** The phases before READY, in order. */
const PHASES = StartTaskStatusSchema.options.filter((status) => status !== 'READY' && status !== 'ERROR');

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
