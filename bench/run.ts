// npm run bench: the service side by side with the floor (a bare node:http handler with the
// same driver on the same FerretDB, bench/floor-server.mjs) and the reference server, in
// rounds that alternate between targets so noise hits all of them; then idle database CPU
// and search at growing history. Prints progress on stderr and a Markdown report on stdout.
//
//   npm run bench [-- --seconds 5 --rounds 3 --history 1000,10000,100000 --starts real,fake --no-reference --only settings --profile]
//   npm run bench [-- --sandbox-starts real,fake --sandbox-start-runs 7]   (a sandbox's start with and without its own network)
//   npm run bench [-- --llm-gateway direct,gateway,litellm | none]   (the LLM gateway beside the provider and LiteLLM's proxy)
//   npm run bench [-- --events floor,one,two | none]   (event delivery to 1,000 tRPC subscribers beside a bare fan-out)
//
// Bounded: every load runs for a fixed time against 127.0.0.1 only; everything it starts is
// stopped at the end, and its data lives in a temporary folder that is removed.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { loadConfig } from '../src/config/config.js';
import { generateKeyText } from '../src/crypto.js';
import { connectDatabase } from '../src/db/database.js';
import { ensureFerretDbBinary, startFerretDb } from '../src/db/ferretdb/embedded-mongo.js';
import { rebuildLists, type ListedCollection } from '../src/db/record-lists/list-rebuild.js';
import { createLogger } from '../src/logger.js';
import { freePort, stopChild } from '../src/processes.js';
import { ApiKeysService } from '../src/services/identity/api-keys.service.js';
import { eventDeliveryBench, type EventTarget } from './event-delivery.js';
import { llmGatewayBench, stopLlmBench, type LlmTarget } from './llm-gateway.js';
import { runLoad } from './load.js';
import { warmPoolStarts } from './run-starts.js';
import { sandboxStarts } from './sandbox-start.js';
import { startReferenceServer } from './reference-server.js';
import { Results, type Sample } from './report.js';
import { historyScenarios, hotPathScenarios, memoryScenario, type Scenario, type TargetName } from './scenarios.js';
import { seedConversations, seedFinishedTasks } from './seed.js';
import {
  cpuMeter,
  cpuSeconds,
  memoryMiB,
  PACKAGE_ROOT,
  RATE_LIMITS_OFF,
  startFlags,
  startFloor,
  startService,
  type Target,
} from './targets.js';

const { values } = parseArgs({
  options: {
    seconds: { type: 'string', default: '5' },
    rounds: { type: 'string', default: '3' },
    warmup: { type: 'string', default: '1' },
    history: { type: 'string', default: '1000,10000,100000' },
    'idle-seconds': { type: 'string', default: '10' },
    only: { type: 'string' },
    /** Warm-pool starts to READY, by agent server ('none' for none). */
    starts: { type: 'string', default: 'real,fake' },
    'start-runs': { type: 'string', default: '3' },
    /** Process sandbox start → RUNNING with its own network and with the host's, by agent server ('none' for none). */
    'sandbox-starts': { type: 'string', default: 'real,fake' },
    'sandbox-start-runs': { type: 'string', default: '7' },
    /** The LLM gateway beside a direct call and LiteLLM's proxy (bench/llm-gateway.ts), by target ('none' for none). */
    'llm-gateway': { type: 'string', default: 'direct,gateway,litellm' },
    /** Event delivery to tRPC subscribers beside a bare fan-out (bench/event-delivery.ts), by target ('none' for none). */
    events: { type: 'string', default: 'floor,one,two' },
    'no-reference': { type: 'boolean', default: false },
    profile: { type: 'boolean', default: false },
  },
});
const seconds = Number(values.seconds);
const rounds = Number(values.rounds);
const warmupMs = Number(values.warmup) * 1000;
const idleSeconds = Number(values['idle-seconds']);
const historySizes = values.history === 'none' ? [] : values.history.split(',').map(Number);
const only = values.only ? new RegExp(values.only, 'i') : null;
const WARMUP_ROUND_MS = 3000;
const HISTORY_CAP_MS = 10_000;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const loadavg = () =>
  os
    .loadavg()
    .map((l) => l.toFixed(2))
    .join(' ');

async function main() {
  const build = spawnSync('npx', ['tsc', '-p', 'tsconfig.build.json'], { cwd: PACKAGE_ROOT, stdio: 'inherit' });
  if (build.status !== 0) throw new Error('tsc failed');
  const loadAtStart = loadavg();
  const log = createLogger('warn', process.stderr);
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'acp-bench-'));
  const stops: (() => Promise<void>)[] = [];
  // Interrupted (Ctrl-C, a timeout's SIGTERM): stop what was started before exiting.
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.once(signal, () => {
      process.stderr.write(`\n${signal}: stopping the targets\n`);
      void (async () => {
        await stopLlmBench();
        for (const stop of stops) await stop().catch(() => {});
        fs.rmSync(tmp, { recursive: true, force: true });
        process.exit(130);
      })();
    });
  }
  const results = new Results();
  try {
    const binary = await ensureFerretDbBinary(loadConfig(process.env).cacheDir, log);
    const ferret = await startFerretDb({ binary, dbDir: path.join(tmp, 'db'), stateDir: tmp, log });
    stops.push(() => stopChild(ferret.child));
    const mongoUri = `${ferret.uri}bench`;
    const db = await connectDatabase(mongoUri, { operationTimeoutMs: 30_000 });
    stops.unshift(() => db.close());
    const apiKeys = new ApiKeysService(db.models.ApiKey, undefined);
    const keys = { service: (await apiKeys.create('bench')).key, reference: generateKeyText() };

    const profileDir = values.profile ? path.join(PACKAGE_ROOT, 'bench-profiles') : undefined;
    const service = await startService({
      mongoUri,
      encryptionKey: generateKeyText(),
      dataDir: path.join(tmp, 'service'),
      logFile: path.join(tmp, 'service.log'),
      ...(profileDir ? { profileDir } : {}),
    });
    stops.unshift(() => service.stop());
    await saveBenchSettings(service.url, keys.service);
    const floor = await startFloor(mongoUri, 'bench', profileDir);
    stops.unshift(() => floor.stop());
    const targets: Partial<Record<TargetName, Target>> = { service, floor };
    if (!values['no-reference']) {
      const reference = await startReferenceServer(await freePort(), { sessionApiKey: keys.reference });
      stops.unshift(() => reference.stop());
      targets.reference = { name: 'reference', url: reference.url, pid: reference.child.pid!, stop: () => reference.stop() };
      const saved = await fetch(`${reference.url}${reference.settingsPath}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-session-api-key': keys.reference },
        body: JSON.stringify({ agent_settings_diff: { llm: { model: 'openai/gpt-4o', api_key: 'sk-bench' } }, language: 'en' }),
      });
      if (!saved.ok) throw new Error(`reference settings POST answered ${saved.status}`);
    }
    const ourPids = [ferret.child.pid!, ...Object.values(targets).map((t) => t.pid)];

    await sleep(3000);
    results.rows.push({ what: 'service RSS idle after start', value: `${memoryMiB(service.pid).rss.toFixed(0)} MiB` });
    if (targets.reference)
      results.rows.push({ what: 'reference RSS idle after start', value: `${memoryMiB(targets.reference.pid).rss.toFixed(0)} MiB` });
    results.rows.push({ what: 'FerretDB CPU, service idle, 0 start tasks', value: await idleCpu(ferret.child.pid!, service.pid) });

    const peakRss = new Map<string, number>();
    const measure = async (scenarios: Scenario[], warmupRound = true) => {
      // Round 0 warms every target up (JIT, connection pools, FerretDB's caches) and is not recorded.
      for (let round = warmupRound ? 0 : 1; round <= rounds; round++) {
        for (const scenario of scenarios) {
          if (only && !only.test(scenario.name)) continue;
          const names = (Object.keys(scenario.requests) as TargetName[]).filter((n) => targets[n]);
          // Rotate the order each round, so no target always runs first (or right after another).
          const order = names.map((_, i) => names[(i + round) % names.length]!);
          for (const name of order) {
            const target = targets[name]!;
            const request = scenario.requests[name]!;
            const meter = cpuMeter(ourPids);
            const cpuBefore = [cpuSeconds(target.pid), cpuSeconds(ferret.child.pid!)];
            const sampler = setInterval(() => {
              const key = `${scenario.name}|${name}`;
              peakRss.set(key, Math.max(peakRss.get(key) ?? 0, memoryMiB(target.pid).rss));
            }, 100);
            const result = await runLoad({
              url: target.url,
              ...request,
              connections: scenario.connections,
              warmupMs,
              durationMs: round === 0 ? WARMUP_ROUND_MS : seconds * 1000,
            });
            clearInterval(sampler);
            if (round === 0) continue;
            const cpu = meter();
            const perRequest = (seconds: number) => (seconds / result.allRequests) * 1e6;
            const sample: Sample = {
              result,
              otherCores: cpu.otherCores,
              generatorUs: perRequest(cpu.selfCpuSeconds),
              targetUs: perRequest(cpuSeconds(target.pid) - cpuBefore[0]!),
              databaseUs: perRequest(cpuSeconds(ferret.child.pid!) - cpuBefore[1]!),
            };
            results.add(scenario, name, sample);
            Results.progress(scenario, name, round, sample);
          }
        }
      }
    };

    await measure([...hotPathScenarios(keys), memoryScenario(keys)]);
    for (const name of ['service', 'floor', 'reference'] as const) {
      const peak = peakRss.get(`GET settings, 200 connections|${name}`);
      if (peak) results.rows.push({ what: `${name} RSS, peak sampled under 200 connections`, value: `${peak.toFixed(0)} MiB` });
    }
    await sleep(5000);
    results.rows.push({ what: 'service RSS idle after the load', value: `${memoryMiB(service.pid).rss.toFixed(0)} MiB` });

    if (values['llm-gateway'] !== 'none') {
      const llm = await llmGatewayBench({
        mongoUri: ferret.uri,
        ferretPid: ferret.child.pid!,
        dir: path.join(tmp, 'llm-gateway'),
        targets: values['llm-gateway'].split(',') as LlmTarget[],
        connections: [1, 8, 32],
        seconds,
        rounds,
        warmupMs,
        only,
        ...(profileDir ? { profileDir } : {}),
      });
      if (llm) {
        results.rows.push(...llm.rows);
        results.notes.push('', '### LLM gateway (bench/llm-gateway.ts)', '', llm.markdown);
      }
    }

    if (values.events !== 'none') {
      const events = await eventDeliveryBench({
        mongoUri: ferret.uri,
        ferretPid: ferret.child.pid!,
        dir: path.join(tmp, 'events'),
        targets: values.events.split(',') as EventTarget[],
        subscribers: 1000,
        conversations: 10,
        rate: 20,
        seconds: 10,
      });
      results.rows.push(...events.rows);
      results.notes.push('', '### Event delivery (bench/event-delivery.ts)', '', events.markdown);
    }

    if (values.starts !== 'none') {
      const agents = values.starts.split(',') as ('real' | 'fake')[];
      await warmPoolStarts({ agents, runs: Number(values['start-runs']), mongoUri: ferret.uri, dir: path.join(tmp, 'starts'), results });
    }

    if (values['sandbox-starts'] !== 'none') {
      const agents = values['sandbox-starts'].split(',') as ('real' | 'fake')[];
      await sandboxStarts({ agents, runs: Number(values['sandbox-start-runs']), dir: path.join(tmp, 'sandbox-starts'), results });
    }

    if (historySizes.length) {
      // Idle database CPU with as many finished start tasks as the largest history (nothing to claim).
      const largest = Math.max(...historySizes);
      // Seeded in bulk, past the record tables: the embedded layout's lists are built as the
      // migration builds them for an earlier version's data (src/db/record-lists/list-rebuild.ts).
      const buildLists = async (what: string, which: ListedCollection) => {
        const started = performance.now();
        const records = await rebuildLists(db, [which]);
        if (records === 0) return; // MongoDB: no lists
        const took = ((performance.now() - started) / 1000).toFixed(1);
        results.rows.push({ what: `embedded lists built from ${what} (the migration)`, value: `${took} s` });
      };
      const seeded = performance.now();
      await seedFinishedTasks(db.connection.db!, 'history-tasks', largest);
      process.stderr.write(`seeded ${largest} finished start tasks in ${((performance.now() - seeded) / 1000).toFixed(1)} s\n`);
      await buildLists(`${largest} start tasks`, 'tasks');
      await sleep(3000);
      results.rows.push({
        what: `FerretDB CPU, service idle, ${largest} finished start tasks`,
        value: await idleCpu(ferret.child.pid!, service.pid),
      });

      // One user's conversations grow through the sizes (the only conversations in the database);
      // once a search takes longer than HISTORY_CAP_MS, larger sizes are not measured.
      const historyKey = (await apiKeys.create('history')).key;
      const taskKey = (await apiKeys.create('history-tasks')).key;
      let have = 0;
      for (const size of [...historySizes].sort((a, b) => a - b)) {
        const started = performance.now();
        await seedConversations(db.connection.db!, 'history', have, size - have);
        have = size;
        process.stderr.write(`seeded ${size} conversations in ${((performance.now() - started) / 1000).toFixed(1)} s\n`);
        await buildLists(`${size} conversations`, 'conversations');
        const scenarios = historyScenarios(size, historyKey, taskKey, size === Math.min(...historySizes) ? largest : null);
        await measure(scenarios, false);
        const slowest = Math.max(...scenarios.map((scenario) => results.medianP50(scenario.name, 'service') ?? 0));
        if (slowest > HISTORY_CAP_MS) {
          const rest = historySizes.filter((s) => s > size);
          if (rest.length)
            results.notes.push(
              `Searches at ${rest.join(', ')} conversations not measured: at ${size} one took ${(slowest / 1000).toFixed(1)} s.`,
            );
          break;
        }
      }
    }

    results.notes.push(
      '',
      `Machine: ${os.cpus().length} × ${os.cpus()[0]?.model ?? 'CPU'}, ${(os.totalmem() / 2 ** 30).toFixed(0)} GiB, ${os.type()} ${os.release()}; Node ${process.version}; ` +
        `FerretDB ${path.basename(path.dirname(path.dirname(binary)))} (SQLite) on loopback, shared by all targets; load average ${loadAtStart} at the start, ${loadavg()} at the end.`,
      `A warm-up round (${WARMUP_ROUND_MS / 1000} s per target and scenario, not recorded), then ${rounds} round(s) of ${seconds} s per target and scenario, ` +
        `each after ${warmupMs / 1000} s of warm-up on the same connections; targets alternate within each round.`,
      `The service runs as \`npm start\` does (\`node ${startFlags().join(' ')} dist/src/main.js\`), NODE_ENV=production, LOG_LEVEL=info to a file; ` +
        (Object.keys(RATE_LIMITS_OFF).length
          ? `rate limits off (${Object.keys(RATE_LIMITS_OFF).join(', ')}).`
          : 'it has no rate limits to turn off.'),
      targets.reference
        ? 'Reference: openhands-ai 1.11.0 (bench/reference-server.py: its 10 req/s limiter removed, SESSION_API_KEY set), settings at /api/v1/settings.'
        : 'Reference server not measured (--no-reference).',
      'Load generator: bench/load.ts, raw keep-alive sockets in the bench process, sharing the same cores.',
    );
  } finally {
    for (const stop of stops) await stop().catch((error: unknown) => process.stderr.write(`stopping: ${String(error)}\n`));
    fs.rmSync(tmp, { recursive: true, force: true });
  }
  process.stdout.write('\n' + results.markdown());
}

async function saveBenchSettings(url: string, key: string): Promise<void> {
  const post = (p: string, body: unknown) =>
    fetch(url + p, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-session-api-key': key },
      body: JSON.stringify(body),
    });
  const saved = await post('/api/settings', {
    llm_model: 'openai/gpt-4o',
    llm_api_key: 'sk-bench',
    mcp_config: { stdio_servers: [{ name: 'fs', command: 'npx', args: ['-y', 'server'], env: { TOKEN: 'x' } }] },
  });
  if (!saved.ok) throw new Error(`settings POST answered ${saved.status}: ${await saved.text()}`);
  for (let i = 0; i < 20; i++) await post('/api/secrets', { name: `SECRET_${i}`, value: 'v', description: 'bench' });
}

/** Database and service CPU while no request arrives (the start-task poller still runs). */
async function idleCpu(ferretPid: number, servicePid: number): Promise<string> {
  const before = [cpuSeconds(ferretPid), cpuSeconds(servicePid)];
  await sleep(idleSeconds * 1000);
  const pct = (now: number, then: number) => (((now - then) / idleSeconds) * 100).toFixed(1);
  return `${pct(cpuSeconds(ferretPid), before[0]!)}% of a core (service ${pct(cpuSeconds(servicePid), before[1]!)}%), over ${idleSeconds} s`;
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
