// The LLM gateway beside its floor and its peer (issue 38). The same chat completion, JSON and
// streamed, is sent at the same concurrency to three targets in front of one fake provider
// (bench/fake-llm.mjs, a process of its own):
//   direct   the provider itself, with its key;
//   gateway  /llm/v1/chat/completions on the service as `npm start` runs it, with the gateway
//            tokens of conversations started the normal way on the fake agent server;
//   litellm  LiteLLM's proxy (PyPI litellm[proxy], scripts/setup-litellm-proxy.sh) in
//            config-file mode: one model, a master key, no database.
// Rounds alternate between the targets (a warm-up round first, not recorded), so noise hits all
// of them; differences and ratios are taken within a round, then their median. The figures of
// the issue: gateway − direct p50 and time to the first streamed event, gateway ÷ LiteLLM calls/s.
//
//   npm run bench:llm-gateway [-- --seconds 5 --rounds 3 --connections 1,8,32 --targets direct,gateway,litellm
//                                 --only JSON --conversations 8 --db-commands --profile]
//
// --db-commands counts the service's database commands per gateway call (DB_COMMAND_METRICS);
// --profile writes the service's CPU profile to bench-profiles/. npm run bench runs it too
// (bench/run.ts, --llm-gateway). Everything runs on 127.0.0.1; everything started is stopped and
// its temporary folder removed.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { loadConfig } from '../src/config/config.js';
import { generateKeyText } from '../src/crypto.js';
import { connectDatabase } from '../src/db/database.js';
import { ensureFerretDbBinary, startFerretDb } from '../src/db/ferretdb/embedded-mongo.js';
import { createLogger } from '../src/logger.js';
import { freePort, stopChild } from '../src/processes.js';
import { ApiKeysService } from '../src/services/identity/api-keys.service.js';
import { runLlmLoad, type LlmLoadResult } from './llm-load.js';
import { FAKE_SPEC } from './starts.js';
import { cpuMeter, cpuSeconds, deleteSandbox, memoryMiB, PACKAGE_ROOT, startReadyScript, startService } from './targets.js';

export type LlmTarget = 'direct' | 'gateway' | 'litellm';
const TARGETS: LlmTarget[] = ['direct', 'gateway', 'litellm'];
type Kind = 'json' | 'stream';

export interface LlmBenchOptions {
  /** FerretDB's URI (ending in "/") and its process; the service uses its own database on it. */
  mongoUri: string;
  ferretPid: number;
  /** A folder of this bench's own (removed by the caller). */
  dir: string;
  targets: LlmTarget[];
  connections: number[];
  seconds: number;
  rounds: number;
  warmupMs: number;
  /** Scenario names to run (e.g. /JSON, 8 connections/); null: all. */
  only?: RegExp | null;
  /** Conversations the gateway's calls use, connection i the i-th modulo their number (default: one per connection, as agents call). */
  conversations?: number;
  dbCommands?: boolean;
  profileDir?: string;
}

export interface LlmBenchReport {
  markdown: string;
  /** The figures, for the main bench's table of single measurements. */
  rows: { what: string; value: string }[];
}

interface Scenario {
  name: string;
  kind: Kind;
  connections: number;
}

interface Sample {
  load: LlmLoadResult;
  /** CPU per call (µs) of the target's processes and of FerretDB (the gateway's). */
  targetUs: number;
  databaseUs: number;
  otherCores: number;
}

interface Endpoint {
  url: string;
  path: string;
  /** Connection i sends headers[i modulo their number]. */
  headers: Record<string, string>[];
  pids: number[];
}

const WARMUP_ROUND_MS = 3000;
const PROVIDER_KEY = 'sk-bench-provider-key-0123456789';
const LITELLM_KEY = 'sk-bench-litellm-master';
const LITELLM = 'litellm[proxy] 1.105.7';
const MODEL = 'gpt-4o';
/** gpt-4o as LiteLLM's own table prices it: the gateway's price table (LLM_PRICES). */
const PRICES = {
  [`openai/${MODEL}`]: {
    litellm_provider: 'openai',
    mode: 'chat',
    input_cost_per_token: 2.5e-6,
    output_cost_per_token: 1e-5,
    cache_read_input_token_cost: 1.25e-6,
  },
};

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length === 0 ? NaN : s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
};
/** "median (min–max)" over rounds. */
const fmt = (xs: number[], digits: number, sign = false) => {
  if (xs.length === 0) return '–';
  const f = (x: number) => (sign && x >= 0 ? '+' : '') + x.toFixed(digits);
  return xs.length > 1 ? `${f(median(xs))} (${f(Math.min(...xs))} to ${f(Math.max(...xs))})` : f(xs[0]!);
};

function scenariosOf(connections: number[], only: RegExp | null | undefined): Scenario[] {
  return connections
    .flatMap((c) =>
      (['json', 'stream'] as Kind[]).map((kind) => ({
        name: `chat ${kind === 'json' ? 'JSON' : 'streamed'}, ${c} connection${c === 1 ? '' : 's'}`,
        kind,
        connections: c,
      })),
    )
    .filter((s) => !only || only.test(s.name));
}

/** A short chat turn; streamed, with include_usage as the agent SDK asks. */
const callBody = (kind: Kind) =>
  JSON.stringify({
    model: MODEL,
    messages: [
      { role: 'system', content: 'You are a helpful assistant.' },
      { role: 'user', content: 'Say hello.' },
    ],
    ...(kind === 'stream' ? { stream: true, stream_options: { include_usage: true } } : {}),
  });

export async function llmGatewayBench(opts: LlmBenchOptions): Promise<LlmBenchReport | null> {
  const scenarios = scenariosOf(opts.connections, opts.only);
  if (scenarios.length === 0 || opts.targets.length === 0) return null;
  const load = os.loadavg().map((l) => l.toFixed(1));
  fs.mkdirSync(opts.dir, { recursive: true });
  const stops = running; // what this run started
  const notes: string[] = [];
  try {
    const provider = await startReadyScript('bench/fake-llm.mjs', 'fake-llm');
    stops.unshift(provider.stop);
    const endpoints = new Map<LlmTarget, Endpoint>();
    if (opts.targets.includes('direct'))
      endpoints.set('direct', {
        url: provider.url,
        path: '/v1/chat/completions',
        headers: [{ authorization: `Bearer ${PROVIDER_KEY}` }],
        pids: [],
      });
    if (opts.targets.includes('litellm')) {
      try {
        const litellm = await startLitellm(provider.url, opts.dir);
        stops.unshift(litellm.stop);
        endpoints.set('litellm', {
          url: litellm.url,
          path: '/v1/chat/completions',
          headers: [{ authorization: `Bearer ${LITELLM_KEY}` }],
          pids: litellm.pids,
        });
      } catch (error) {
        notes.push(`LiteLLM's proxy not measured: ${(error as Error).message}`);
      }
    }
    let service: Awaited<ReturnType<typeof startGateway>> | null = null;
    if (opts.targets.includes('gateway')) {
      const conversations = opts.conversations ?? Math.max(...scenarios.map((s) => s.connections));
      service = await startGateway(opts, provider.url, conversations);
      stops.unshift(service.stop);
      const headers = service.tokens.map((token) => ({ authorization: `Bearer ${token}` }));
      endpoints.set('gateway', { url: service.url, path: '/llm/v1/chat/completions', headers, pids: [service.pid] });
    }
    for (const [name, endpoint] of endpoints) for (const kind of ['json', 'stream'] as Kind[]) await checkCall(name, endpoint, kind);

    const names = TARGETS.filter((t) => endpoints.has(t));
    const samples = new Map<string, Sample[]>(); // by `${scenario}|${target}`, one per recorded round
    const commands = new Map<Kind, { calls: number; byCommand: Map<string, number> }>();
    for (let round = 0; round <= opts.rounds; round++) {
      for (const scenario of scenarios) {
        for (const name of names.map((_, i) => names[(i + round) % names.length]!)) {
          const endpoint = endpoints.get(name)!;
          const dbPids = name === 'gateway' ? [opts.ferretPid] : [];
          const cpu = (pids: number[]) => pids.reduce((sum, pid) => sum + cpuSeconds(pid), 0);
          const meter = cpuMeter([...endpoint.pids, ...dbPids, provider.pid]);
          const before = { target: cpu(endpoint.pids), db: cpu(dbPids) };
          const countBefore = opts.dbCommands && name === 'gateway' && round > 0 ? await commandCounts(endpoint.url) : null;
          const result = await runLlmLoad(
            {
              url: endpoint.url,
              method: 'POST',
              path: endpoint.path,
              headers: { 'content-type': 'application/json' },
              body: callBody(scenario.kind),
              connections: scenario.connections,
              warmupMs: opts.warmupMs,
              durationMs: round === 0 ? WARMUP_ROUND_MS : opts.seconds * 1000,
              expectStatus: 200,
            },
            endpoint.headers,
          );
          if (round === 0) continue;
          const perCall = (seconds: number) => (seconds / Math.max(1, result.allCalls)) * 1e6;
          const sample: Sample = {
            load: result,
            targetUs: perCall(cpu(endpoint.pids) - before.target),
            databaseUs: perCall(cpu(dbPids) - before.db),
            otherCores: meter().otherCores,
          };
          if (countBefore) {
            const into = commands.get(scenario.kind) ?? { calls: 0, byCommand: new Map<string, number>() };
            into.calls += result.allCalls; // counted over the whole sample, its warm-up included
            for (const [command, count] of await commandCounts(endpoint.url))
              into.byCommand.set(command, (into.byCommand.get(command) ?? 0) + count - (countBefore.get(command) ?? 0));
            commands.set(scenario.kind, into);
          }
          const key = `${scenario.name}|${name}`;
          samples.set(key, [...(samples.get(key) ?? []), sample]);
          const r = result;
          process.stderr.write(
            `round ${round} ${scenario.name} [${name}]: ${r.rps.toFixed(0)} calls/s, p50 ${r.p50.toFixed(2)} ms` +
              (scenario.kind === 'stream' ? `, first event p50 ${r.ttftP50.toFixed(2)} ms` : '') +
              `, CPU/call ${sample.targetUs.toFixed(0)} µs + DB ${sample.databaseUs.toFixed(0)} µs, other load ${sample.otherCores.toFixed(2)} cores` +
              (r.unexpected + r.socketErrors ? `, UNEXPECTED ${r.unexpected + r.socketErrors}: ${r.firstUnexpected?.slice(0, 300)}` : '') +
              '\n',
          );
        }
      }
    }

    if (service) notes.push(await accounting(service.mongoUri));
    const rss = [...(service ? [`service ${memoryMiB(service.pid).rss.toFixed(0)} MiB`] : [])];
    const litellm = endpoints.get('litellm');
    if (litellm) rss.push(`LiteLLM ${litellm.pids.reduce((sum, pid) => sum + memoryMiB(pid).rss, 0).toFixed(0)} MiB`);
    notes.push(
      `Machine: ${os.cpus().length} × ${os.cpus()[0]?.model ?? 'CPU'}, Node ${process.version}; load average ${load.join(' ')} at the start. ` +
        `A warm-up round (${WARMUP_ROUND_MS / 1000} s per target and scenario), then ${opts.rounds} round(s) of ${opts.seconds} s after ` +
        `${opts.warmupMs / 1000} s of warm-up each. RSS at the end: ${rss.join(', ') || '–'}.`,
      'Provider: bench/fake-llm.mjs (node:http): one JSON body, or 6 events (role, 3 words, finish, usage) and [DONE], each its own write after setImmediate. ' +
        'First event: from the request sent to the first "data:" arriving (bench/llm-load.ts, raw keep-alive sockets, in the bench process).',
    );
    if (service)
      notes.push(
        `Gateway: the service as \`npm start\` runs it, on FerretDB; ${service.tokens.length} conversation(s) on one fake agent server, ` +
          'connection i using the i-th token; every call checked, forwarded, priced, written to llm_calls and added to its conversation; LLM_RATE_LIMIT_PER_USER=1000000.',
      );
    if (litellm)
      notes.push(
        `LiteLLM: ${LITELLM}, \`litellm --config … --num_workers 1\` (its default), master key only, no database_url (no virtual keys, ` +
          'budgets or spend logs), LITELLM_LOCAL_MODEL_COST_MAP=True, logging as shipped; target CPU counts its process and its children.',
      );
    return report(scenarios, samples, commands, notes);
  } finally {
    await stopLlmBench();
  }
}

/** What a run has started (LiteLLM in a process group of its own, which a Ctrl-C does not reach). */
const running: (() => Promise<void>)[] = [];

/** Stops what the bench started, all at once (also from an interrupted bench/run.ts). */
export async function stopLlmBench(): Promise<void> {
  await Promise.all(
    running.splice(0).map((stop) => stop().catch((error: unknown) => process.stderr.write(`stopping: ${String(error)}\n`))),
  );
}

function report(
  scenarios: Scenario[],
  samples: Map<string, Sample[]>,
  commands: Map<Kind, { calls: number; byCommand: Map<string, number> }>,
  notes: string[],
): LlmBenchReport {
  const out = [
    '| call | target | calls/s | p50 ms | p99 ms | first event p50 ms | target CPU µs/call | DB CPU µs/call | other load (cores) | unexpected |',
    '|---|---|---:|---:|---:|---:|---:|---:|---:|---:|',
  ];
  for (const s of scenarios) {
    for (const target of TARGETS) {
      const list = samples.get(`${s.name}|${target}`);
      if (!list) continue;
      const col = (pick: (x: Sample) => number, digits: number) => fmt(list.map(pick), digits);
      const cells = [
        s.name,
        target,
        col((x) => x.load.rps, 0),
        col((x) => x.load.p50, 2),
        col((x) => x.load.p99, 2),
        s.kind === 'stream' ? col((x) => x.load.ttftP50, 2) : '–',
        target === 'direct' ? '–' : col((x) => x.targetUs, 0),
        target === 'gateway' ? col((x) => x.databaseUs, 0) : '–',
        col((x) => x.otherCores, 2),
        String(list.reduce((n, x) => n + x.load.unexpected + x.load.socketErrors, 0)),
      ];
      out.push(`| ${cells.join(' | ')} |`);
    }
  }
  /** Per round: pick(a's sample, b's sample). */
  const within = (s: Scenario, a: LlmTarget, b: LlmTarget, pick: (x: LlmLoadResult, y: LlmLoadResult) => number) => {
    const as = samples.get(`${s.name}|${a}`) ?? [];
    const bs = samples.get(`${s.name}|${b}`) ?? [];
    return as.slice(0, bs.length).map((x, i) => pick(x.load, bs[i]!.load));
  };
  out.push(
    '',
    '| call | gateway − direct p50 ms | gateway − direct first event p50 ms | gateway ÷ LiteLLM calls/s |',
    '|---|---:|---:|---:|',
  );
  const rows: LlmBenchReport['rows'] = [];
  const criteria: string[] = [];
  const fewest = Math.min(...scenarios.map((s) => s.connections));
  const verdict = (ok: boolean) => (ok ? 'met' : 'NOT met');
  let lowestRatio: { s: Scenario; ratios: number[] } | null = null;
  for (const s of scenarios) {
    const p50 = within(s, 'gateway', 'direct', (g, d) => g.p50 - d.p50);
    const first = s.kind === 'stream' ? within(s, 'gateway', 'direct', (g, d) => g.ttftP50 - d.ttftP50) : [];
    const ratios = within(s, 'gateway', 'litellm', (g, l) => g.rps / l.rps);
    out.push(`| ${s.name} | ${fmt(p50, 2, true)} | ${fmt(first, 2, true)} | ${fmt(ratios, 1)} |`);
    if (ratios.length && (!lowestRatio || median(ratios) < median(lowestRatio.ratios))) lowestRatio = { s, ratios };
    if (s.connections !== fewest) continue;
    const [added, what] = s.kind === 'json' ? [p50, 'p50 per JSON call'] : [first, 'time to the first streamed event'];
    if (!added.length) continue;
    rows.push({ what: `LLM gateway: added ${what}, ${fewest} connection(s)`, value: `${fmt(added, 2, true)} ms` });
    criteria.push(`gateway − direct, ${what}, ${fewest} connection(s): ${fmt(added, 2, true)} ms (≤ 1 ms: ${verdict(median(added) <= 1)})`);
  }
  if (lowestRatio) {
    const m = median(lowestRatio.ratios);
    rows.push({ what: 'LLM gateway ÷ LiteLLM proxy calls/s, lowest scenario', value: `${m.toFixed(1)}× (${lowestRatio.s.name})` });
    criteria.push(
      `gateway ÷ LiteLLM calls/s, lowest over the scenarios: ${m.toFixed(1)}× at ${lowestRatio.s.name} (≥ 3×: ${verdict(m >= 3)})`,
    );
  }
  if (criteria.length)
    out.push('', "Issue 38's figures (medians of the per-round differences and ratios):", '', ...criteria.map((c) => `- ${c}`));
  for (const [kind, { calls, byCommand }] of commands) {
    out.push('', `Database commands per gateway call, ${kind === 'json' ? 'JSON' : 'streamed'} (${calls} calls): `);
    const sorted = [...byCommand].filter(([, n]) => n > 0).sort((a, b) => b[1] - a[1]);
    out.push(sorted.map(([command, n]) => `${command} ${(n / calls).toFixed(3)}`).join(', ') || 'none');
  }
  out.push('', 'Medians over rounds, (min to max) across rounds; differences and ratios are taken within a round.', '', ...notes);
  return { markdown: out.join('\n') + '\n', rows };
}

// ---- the targets ----

async function startLitellm(providerUrl: string, dir: string) {
  const setup = spawnSync('bash', [path.join(PACKAGE_ROOT, 'scripts/setup-litellm-proxy.sh')], { encoding: 'utf8', maxBuffer: 1 << 26 });
  const executable = setup.stdout.trim().split('\n').pop();
  if (setup.status !== 0 || !executable) throw new Error(`setup-litellm-proxy.sh exited ${setup.status}: ${setup.stderr.slice(-1000)}`);
  process.stderr.write("llm-gateway: starting LiteLLM's proxy\n");
  const port = await freePort();
  const config = path.join(dir, 'litellm.yaml');
  fs.writeFileSync(
    config,
    [
      'model_list:',
      `  - model_name: ${MODEL}`,
      `    litellm_params: {model: openai/${MODEL}, api_base: "${providerUrl}/v1", api_key: os.environ/UPSTREAM_KEY}`,
      `general_settings: {master_key: ${LITELLM_KEY}}`,
      '',
    ].join('\n'),
  );
  const logFile = path.join(dir, 'litellm.log');
  const log = fs.openSync(logFile, 'a');
  const child = spawn(executable, ['--config', config, '--host', '127.0.0.1', '--port', String(port), '--num_workers', '1'], {
    env: {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      UPSTREAM_KEY: PROVIDER_KEY,
      LITELLM_LOCAL_MODEL_COST_MAP: 'True',
      LITELLM_TELEMETRY: 'False',
    },
    stdio: ['ignore', log, log],
    detached: true, // a process group of its own: its workers are stopped with it
  });
  fs.closeSync(log);
  // Killed with its workers at once (synchronously, so an interrupted bench leaves nothing behind): a peer with nothing to save.
  const stop = async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise((resolve) => child.once('exit', resolve));
    process.kill(-child.pid!, 'SIGKILL');
    await exited;
  };
  const url = `http://127.0.0.1:${port}`;
  for (const deadline = Date.now() + 120_000; ; await new Promise((r) => setTimeout(r, 200))) {
    const failed = child.exitCode !== null ? `exited with ${child.exitCode}` : Date.now() > deadline ? 'did not answer in 120 s' : null;
    if (failed) {
      await stop();
      throw new Error(`litellm ${failed}: ${fs.readFileSync(logFile, 'utf8').slice(-2000)}`);
    }
    if (
      await fetch(`${url}/health/liveliness`).then(
        (r) => r.ok,
        () => false,
      )
    )
      break;
  }
  return { url, pids: processTree(child.pid!), stop };
}

/** The service with a user whose LLM is the provider, and `conversations` conversations (one sandbox) whose agents hold gateway tokens. */
async function startGateway(opts: LlmBenchOptions, providerUrl: string, conversations: number) {
  const specsFile = path.join(opts.dir, 'specs.json');
  const pricesFile = path.join(opts.dir, 'prices.json');
  fs.writeFileSync(specsFile, JSON.stringify([FAKE_SPEC]));
  fs.writeFileSync(pricesFile, JSON.stringify(PRICES));
  const mongoUri = `${opts.mongoUri}bench_llm_gateway`;
  const service = await startService({
    mongoUri,
    encryptionKey: generateKeyText(),
    dataDir: path.join(opts.dir, 'data'),
    logFile: path.join(opts.dir, 'service.log'),
    ...(opts.profileDir ? { profileDir: opts.profileDir } : {}),
    env: {
      SANDBOX_SPECS_FILE: specsFile,
      LLM_PRICES: pricesFile,
      LLM_PRICES_REFRESH_MINUTES: '0',
      LLM_UPSTREAM_HOSTS: new URL(providerUrl).host,
      LLM_RATE_LIMIT_PER_USER: '1000000',
      ...(opts.dbCommands ? { DB_COMMAND_METRICS: 'true' } : {}),
    },
  });
  // The sandbox deleted, and gone, before the service stops, however the bench ends (it was left running before).
  let sandboxId: string | undefined;
  let removeSandbox = async () => {};
  const stop = async () => {
    await removeSandbox().catch(() => undefined);
    await service.stop();
  };
  try {
    const db = await connectDatabase(mongoUri, { operationTimeoutMs: 30_000 });
    const key = await new ApiKeysService(db.models.ApiKey, undefined).create('bench-llm').finally(() => db.close());
    removeSandbox = async () => {
      if (sandboxId) await deleteSandbox(service.url, { 'x-session-api-key': key.key }, sandboxId);
    };
    const api = async (method: string, urlPath: string, body?: unknown) => {
      const res = await fetch(service.url + urlPath, {
        method,
        headers: { 'x-session-api-key': key.key, ...(body ? { 'content-type': 'application/json' } : {}) },
        ...(body ? { body: JSON.stringify(body) } : {}),
      });
      if (!res.ok) throw new Error(`${method} ${urlPath} answered ${res.status}: ${await res.text()}`);
      return res.json() as Promise<any>;
    };
    await api('POST', '/api/settings', { llm_model: `openai/${MODEL}`, llm_api_key: PROVIDER_KEY, llm_base_url: `${providerUrl}/v1` });
    process.stderr.write(`llm-gateway: starting ${conversations} conversation(s) on the fake agent server\n`);
    const tokens: string[] = [];
    for (let i = 0; i < conversations; i++) {
      const task = await api('POST', '/api/v1/app-conversations', sandboxId ? { sandbox_id: sandboxId } : {});
      let done: { status: string; detail?: string; app_conversation_id: string; sandbox_id: string } | undefined;
      for (const deadline = Date.now() + 120_000; done?.status !== 'READY'; await new Promise((r) => setTimeout(r, 50))) {
        done = (await api('GET', `/api/v1/app-conversations/start-tasks?ids=${task.id}`))[0];
        if (done?.status === 'ERROR' || Date.now() > deadline)
          throw new Error(`a conversation's start: ${done?.status} ${done?.detail ?? ''}`);
      }
      sandboxId = done.sandbox_id;
      // The token as the agent was given it: from the fake agent server's record of its start request.
      const [record] = await api('GET', `/api/v1/app-conversations?ids=${done.app_conversation_id}`);
      const agentUrl = String(record.conversation_url).replace(/\/api\/conversations\/.*$/, '');
      const [sent] = (await (
        await fetch(`${agentUrl}/api/conversations?ids=${done.app_conversation_id}`, {
          headers: { 'x-session-api-key': record.session_api_key },
        })
      ).json()) as { request: { agent: { llm: { base_url: string; api_key: string } } } }[];
      const llm = sent!.request.agent.llm;
      if (!/\/llm\/v1$/.test(llm.base_url) || !llm.api_key.startsWith('ohg_'))
        throw new Error(`the agent was not given the gateway: ${llm.base_url}`);
      tokens.push(llm.api_key);
    }
    return { ...service, stop, tokens, mongoUri };
  } catch (error) {
    await stop();
    throw error;
  }
}

async function checkCall(name: LlmTarget, endpoint: Endpoint, kind: Kind): Promise<void> {
  const res = await fetch(endpoint.url + endpoint.path, {
    method: 'POST',
    headers: { ...endpoint.headers[0], 'content-type': 'application/json' },
    body: callBody(kind),
  });
  const text = await res.text();
  const ok =
    res.status === 200 &&
    (kind === 'json'
      ? text.includes('"completion_tokens":7') && (name !== 'gateway' || Number(res.headers.get('x-litellm-response-cost')) > 0)
      : text.includes('data: [DONE]') && text.includes('"completion_tokens":7'));
  if (!ok)
    throw new Error(`${name}: a ${kind} call was answered ${res.status} without its usage (or the gateway's cost): ${text.slice(0, 500)}`);
}

/**
 * Whether every call the gateway answered was counted once: the ledger (llm_calls) against the
 * routes' totals and the conversations' cost (what the budgets read), once the writes that
 * follow the answers are done (waited for up to 60 s).
 */
async function accounting(mongoUri: string): Promise<string> {
  const db = await connectDatabase(mongoUri, { operationTimeoutMs: 30_000 });
  try {
    const raw = db.connection.db!;
    const sum = async (collection: string, field: string) => {
      let count = 0;
      let total = 0;
      for await (const doc of raw.collection(collection).find({}, { projection: { [field]: 1 } })) {
        count++;
        total += Number(doc[field] ?? 0);
      }
      return { count, total };
    };
    const started = performance.now();
    for (;;) {
      const [ledger, routes, calls, spent] = await Promise.all([
        sum('llm_calls', 'cost'),
        sum('llm_routes', 'cost'),
        sum('llm_routes', 'calls'),
        sum('app_conversations', 'accumulated_cost'),
      ]);
      const whole = calls.total === ledger.count && Math.abs(spent.total - ledger.total) < 1e-9 * ledger.count;
      const took = ((performance.now() - started) / 1000).toFixed(0);
      if (whole || performance.now() - started > 60_000)
        return (
          `Accounting ${whole ? 'complete' : 'INCOMPLETE'} ${took} s after the last call: ${ledger.count} calls in llm_calls ($${ledger.total.toFixed(4)}), ` +
          `${calls.total} counted in the routes' totals ($${routes.total.toFixed(4)}), the conversations' cost $${spent.total.toFixed(4)}.`
        );
      await new Promise((r) => setTimeout(r, 500));
    }
  } finally {
    await db.close();
  }
}

/** A process and its descendants (LiteLLM's workers). */
function processTree(root: number): number[] {
  const children = new Map<number, number[]>();
  for (const name of fs.readdirSync('/proc').filter((n) => /^\d+$/.test(n))) {
    const stat = fs.readFileSync(`/proc/${name}/stat`, 'utf8');
    const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
    children.set(ppid, [...(children.get(ppid) ?? []), Number(name)]);
  }
  const out = [root];
  for (let i = 0; i < out.length; i++) out.push(...(children.get(out[i]!) ?? []));
  return out;
}

/** The service's database command counts by collection and command (DB_COMMAND_METRICS). */
async function commandCounts(url: string): Promise<Map<string, number>> {
  const text = await (await fetch(`${url}/metrics`)).text();
  const out = new Map<string, number>();
  for (const m of text.matchAll(/^database_command_duration_seconds_count\{collection="([^"]*)",command="([^"]*)"[^}]*\} (\S+)$/gm)) {
    const key = `${m[1]} ${m[2]}`;
    out.set(key, (out.get(key) ?? 0) + Number(m[3]));
  }
  return out;
}

// ---- npm run bench:llm-gateway ----

async function main() {
  const { values } = parseArgs({
    options: {
      seconds: { type: 'string', default: '5' },
      rounds: { type: 'string', default: '3' },
      warmup: { type: 'string', default: '1' },
      connections: { type: 'string', default: '1,8,32' },
      targets: { type: 'string', default: TARGETS.join(',') },
      only: { type: 'string' },
      conversations: { type: 'string' },
      'db-commands': { type: 'boolean', default: false },
      profile: { type: 'boolean', default: false },
    },
  });
  if (spawnSync('npx', ['tsc', '-p', 'tsconfig.build.json'], { cwd: PACKAGE_ROOT, stdio: 'inherit' }).status !== 0)
    throw new Error('tsc failed');
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'acp-bench-llm-'));
  let ferret: ChildProcess | null = null;
  const cleanUp = async () => {
    await stopLlmBench();
    if (ferret) await stopChild(ferret);
    fs.rmSync(tmp, { recursive: true, force: true });
  };
  // Ctrl-C: the children get the signal too (one process group) but LiteLLM; it, the database and the folder are stopped here.
  for (const signal of ['SIGINT', 'SIGTERM'] as const) process.once(signal, () => void cleanUp().finally(() => process.exit(130)));
  let out: LlmBenchReport | null = null;
  try {
    const binary = await ensureFerretDbBinary(loadConfig(process.env).cacheDir, createLogger('warn', process.stderr));
    const db = await startFerretDb({ binary, dbDir: path.join(tmp, 'db'), stateDir: tmp, log: createLogger('warn', process.stderr) });
    ferret = db.child;
    out = await llmGatewayBench({
      mongoUri: db.uri,
      ferretPid: db.child.pid!,
      dir: path.join(tmp, 'llm'),
      targets: values.targets.split(',') as LlmTarget[],
      connections: values.connections.split(',').map(Number),
      seconds: Number(values.seconds),
      rounds: Number(values.rounds),
      warmupMs: Number(values.warmup) * 1000,
      only: values.only ? new RegExp(values.only, 'i') : null,
      ...(values.conversations ? { conversations: Number(values.conversations) } : {}),
      dbCommands: values['db-commands'],
      ...(values.profile ? { profileDir: path.join(PACKAGE_ROOT, 'bench-profiles') } : {}),
    });
  } finally {
    await cleanUp();
  }
  process.stdout.write(out ? `\n${out.markdown}` : '\nNothing measured (no scenario or target left by --only / --targets).\n');
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  main().catch((error: unknown) => {
    console.error(error);
    process.exit(1);
  });
}
