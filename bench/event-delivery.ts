// Event delivery to live subscribers (issue 40): the time from an agent server's webhook
// (POST /api/v1/webhooks/events/{id}, as the agent server sends its events) to each subscriber of
// the tRPC subscription events.watch, with many subscribers at once. One process posts and
// listens, so both times are read on one clock. Three targets, one after another, with the same
// subscriber client and the same events:
//   floor         a bare node:http server that writes each POSTed event to its SSE subscribers
//                 (bench/event-floor.mjs): what fanning out to that many sockets costs here;
//   one replica   the service as `npm start` runs it, on FerretDB; webhooks posted to the replica
//                 the subscribers are on (it stores and pushes at once);
//   two replicas  webhooks posted to a second replica on the same database; the subscribers'
//                 replica finds them in its next read of the watched logs.
// Subscriber i watches conversation i modulo --conversations (all in one sandbox of the fake agent
// server); events go to the conversations in turn, at --rate per second for --seconds.
//
//   npm run bench:events [-- --subscribers 1000 --conversations 10 --rate 20 --seconds 10 --targets floor,one,two --profile]
//
// npm run bench runs it too (bench/run.ts, --events). Everything runs on 127.0.0.1; everything
// started is stopped (the sandbox deleted) and its temporary folder removed.
import { spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { loadConfig } from '../src/config/config.js';
import { generateKeyText } from '../src/crypto.js';
import { connectDatabase } from '../src/db/database.js';
import { ensureFerretDbBinary, startFerretDb } from '../src/db/ferretdb/embedded-mongo.js';
import { createLogger } from '../src/logger.js';
import { stopChild } from '../src/processes.js';
import { ApiKeysService } from '../src/services/identity/api-keys.service.js';
import { FAKE_SPEC } from './starts.js';
import { cpuSeconds, deleteSandbox, PACKAGE_ROOT, startReadyScript, startService } from './targets.js';

export type EventTarget = 'floor' | 'one' | 'two';
const TARGET_NAMES: Record<EventTarget, string> = { floor: 'floor (bare fan-out)', one: 'one replica', two: 'two replicas' };

export interface EventBenchOptions {
  /** FerretDB's URI (ending in "/"); the replicas use a database of their own on it. */
  mongoUri: string;
  /** FerretDB's process, for the CPU it spends while the subscribers wait. */
  ferretPid: number;
  /** A folder of this bench's own (removed by the caller). */
  dir: string;
  targets: EventTarget[];
  subscribers: number;
  conversations: number;
  /** Events per second, over all conversations. */
  rate: number;
  seconds: number;
  /** Writes the subscribers' replica's CPU profile there (--profile: bench-profiles/). */
  profileDir?: string;
}

interface Delivery {
  target: EventTarget;
  /** CPU (share of one core) of the subscribers' server and of the database while every subscriber waits and nothing happens. */
  idle: { server: number; database: number };
  events: number;
  expected: number;
  latencies: number[];
  duplicates: number;
}

/** Where events go and where subscribers listen, for one target. */
interface Endpoints {
  /** The process the subscribers are connected to. */
  pid: number;
  post(conversationId: string, event: Record<string, unknown>): Promise<void>;
  subscribe(conversationId: string): { url: string; headers: Record<string, string> };
}

export async function eventDeliveryBench(opts: EventBenchOptions): Promise<{ markdown: string; rows: { what: string; value: string }[] }> {
  const stops: (() => Promise<unknown>)[] = [];
  try {
    const results: Delivery[] = [];
    const needsService = opts.targets.some((t) => t !== 'floor');
    const service = needsService ? await startReplicas(opts, stops) : null;
    for (const target of opts.targets) {
      let endpoints: Endpoints;
      let conversations: string[];
      if (target === 'floor') {
        const floor = await startReadyScript('bench/event-floor.mjs', 'event-floor');
        stops.push(floor.stop);
        conversations = Array.from({ length: opts.conversations }, (_, i) => `channel-${i}`);
        endpoints = {
          pid: floor.pid,
          post: (c, event) => expectOk(fetch(`${floor.url}/publish?c=${c}`, { method: 'POST', body: JSON.stringify(event) })),
          subscribe: (c) => ({ url: `${floor.url}/subscribe?c=${c}`, headers: {} }),
        };
      } else {
        const s = service!;
        const to = target === 'one' ? s.subscriberUrl : s.otherUrl;
        conversations = s.conversations;
        endpoints = {
          pid: s.subscriberPid,
          post: (c, event) =>
            expectOk(
              fetch(`${to}/api/v1/webhooks/events/${c}`, {
                method: 'POST',
                headers: { 'content-type': 'application/json', 'x-session-api-key': s.sandboxKey },
                body: JSON.stringify([event]),
              }),
            ),
          subscribe: (c) => ({
            url: `${s.subscriberUrl}/trpc/events.watch?input=${encodeURIComponent(JSON.stringify({ json: { conversation_id: c } }))}`,
            headers: { authorization: `Bearer ${s.key}`, accept: 'text/event-stream' },
          }),
        };
      }
      process.stderr.write(`events: ${TARGET_NAMES[target]}, ${opts.subscribers} subscribers\n`);
      results.push(await deliver(target, endpoints, conversations, opts));
    }
    return report(results, opts);
  } finally {
    for (const stop of stops.reverse()) await stop().catch(() => undefined);
  }
}

/** Subscribes, sends the events at the rate asked and collects each delivery's latency (ms). */
async function deliver(target: EventTarget, endpoints: Endpoints, conversations: string[], opts: EventBenchOptions): Promise<Delivery> {
  const run = `${target}-${Date.now().toString(36)}`;
  const sentAt = new Map<string, number>();
  const latencies: number[] = [];
  let duplicates = 0;
  const requests: http.ClientRequest[] = [];
  const opened = Array.from({ length: opts.subscribers }, (_, i) => {
    const { url, headers } = endpoints.subscribe(conversations[i % conversations.length]!);
    const seen = new Set<string>();
    return new Promise<void>((resolve, reject) => {
      const req = http.get(url, { headers, agent: false }, (res) => {
        if (res.statusCode !== 200) return reject(new Error(`a subscriber was answered ${res.statusCode}`));
        resolve();
        let buffer = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          buffer += chunk;
          for (let end = buffer.indexOf('\n\n'); end >= 0; end = buffer.indexOf('\n\n')) {
            const id = new RegExp(`bench-${run}-\\d+`).exec(buffer.slice(0, end))?.[0];
            buffer = buffer.slice(end + 2);
            const sent = id ? sentAt.get(id) : undefined;
            if (id === undefined || sent === undefined) continue;
            if (seen.has(id)) duplicates++;
            else latencies.push(performance.now() - sent);
            seen.add(id);
          }
        });
        res.on('error', () => undefined);
      });
      req.on('error', reject);
      requests.push(req);
    });
  });
  try {
    await Promise.all(opened);
    await sleep(1000); // every subscriber past the conversation's stored events
    // What waiting costs: every subscriber connected, no event (the other replica's reads of the watched logs go on).
    const before = [cpuSeconds(endpoints.pid), cpuSeconds(opts.ferretPid), performance.now()] as const;
    await sleep(IDLE_MS);
    const wall = (performance.now() - before[2]) / 1000;
    const idle = { server: (cpuSeconds(endpoints.pid) - before[0]) / wall, database: (cpuSeconds(opts.ferretPid) - before[1]) / wall };
    const event = (id: string) => ({
      kind: 'MessageEvent',
      id,
      timestamp: new Date().toISOString(),
      source: 'agent',
      llm_message: { role: 'assistant', content: [{ type: 'text', text: id }] },
    });
    // Warm-up: one event per conversation, not measured.
    await Promise.all(conversations.map((c, i) => endpoints.post(c, event(`warm-${run}-${i}`))));
    await sleep(500);
    const total = Math.round(opts.rate * opts.seconds);
    const posts: Promise<void>[] = [];
    const start = performance.now();
    for (let k = 0; k < total; k++) {
      const due = start + (k * 1000) / opts.rate;
      if (due > performance.now()) await sleep(due - performance.now());
      const id = `bench-${run}-${k}`;
      sentAt.set(id, performance.now());
      posts.push(endpoints.post(conversations[k % conversations.length]!, event(id)));
    }
    await Promise.all(posts);
    const perConversation = (c: number) =>
      Math.floor(opts.subscribers / conversations.length) + (c < opts.subscribers % conversations.length ? 1 : 0);
    let expected = 0;
    for (let k = 0; k < total; k++) expected += perConversation(k % conversations.length);
    for (const deadline = performance.now() + 15_000; latencies.length < expected && performance.now() < deadline;) await sleep(100);
    return { target, idle, events: total, expected, latencies: [...latencies], duplicates };
  } finally {
    for (const req of requests) req.destroy();
  }
}

function report(results: Delivery[], opts: EventBenchOptions) {
  const at = (sorted: number[], q: number) => (sorted.length ? sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]! : NaN);
  const ms = (n: number) => (Number.isNaN(n) ? '–' : n.toFixed(1));
  const pct = (share: number) => `${(share * 100).toFixed(1)} %`;
  const rows: { what: string; value: string }[] = [];
  const lines = [
    `${opts.subscribers} subscribers over ${opts.conversations} conversations, ${opts.rate} events/s for ${opts.seconds} s ` +
      `(each event to ${Math.round(opts.subscribers / opts.conversations)} subscribers); latency from the webhook's POST to each subscriber.`,
    '',
    '| target | deliveries | missing | duplicates | p50 ms | p99 ms | max ms | idle CPU: server, database |',
    '| --- | --- | --- | --- | --- | --- | --- | --- |',
  ];
  const verdicts: string[] = [];
  for (const r of results) {
    const sorted = [...r.latencies].sort((a, b) => a - b);
    const [p50, p99] = [at(sorted, 0.5), at(sorted, 0.99)];
    lines.push(
      `| ${TARGET_NAMES[r.target]} | ${r.latencies.length} of ${r.expected} | ${r.expected - r.latencies.length} | ${r.duplicates} | ${ms(p50)} | ${ms(p99)} | ${ms(sorted.at(-1) ?? NaN)} | ${pct(r.idle.server)}, ${pct(r.idle.database)} |`,
    );
    rows.push({
      what: `event delivery, ${TARGET_NAMES[r.target]}, ${opts.subscribers} subscribers: p50 / p99`,
      value: `${ms(p50)} / ${ms(p99)} ms`,
    });
    if (r.target !== 'floor') {
      const met = p50 <= 50 && p99 <= 250 && r.latencies.length === r.expected && r.duplicates === 0;
      verdicts.push(
        `${TARGET_NAMES[r.target]}: p50 ${ms(p50)} ms (≤ 50), p99 ${ms(p99)} ms (≤ 250), every event once: ${met ? 'met' : 'NOT met'}`,
      );
    }
  }
  if (verdicts.length) lines.push('', "Issue 40's figures:", '', ...verdicts.map((v) => `- ${v}`));
  return { markdown: lines.join('\n') + '\n', rows };
}

// ---- the targets ----

/** Two replicas on one database, a user, and the conversations (in one sandbox of the fake agent server). */
async function startReplicas(opts: EventBenchOptions, stops: (() => Promise<unknown>)[]) {
  const specsFile = path.join(opts.dir, 'specs.json');
  fs.mkdirSync(opts.dir, { recursive: true });
  fs.writeFileSync(specsFile, JSON.stringify([FAKE_SPEC]));
  const mongoUri = `${opts.mongoUri}bench_events`;
  const encryptionKey = generateKeyText();
  const replica = (name: string) =>
    startService({
      mongoUri,
      encryptionKey,
      ...(opts.profileDir && name === 'a' ? { profileDir: opts.profileDir } : {}),
      dataDir: path.join(opts.dir, 'data'), // one machine's replicas share it (the sandboxes' folders)
      logFile: path.join(opts.dir, `service-${name}.log`),
      env: { SANDBOX_SPECS_FILE: specsFile, RATE_LIMIT_PER_SANDBOX: 'off', SANDBOX_MAX_RUNNING_PER_USER: '5' },
    });
  const subscribers = await replica('a');
  stops.push(subscribers.stop);
  const other = await replica('b');
  stops.push(other.stop);
  const db = await connectDatabase(mongoUri, { operationTimeoutMs: 30_000 });
  const key = (await new ApiKeysService(db.models.ApiKey, undefined).create('bench-events').finally(() => db.close())).key;
  const api = async (method: string, urlPath: string, body?: unknown) => {
    const res = await fetch(subscribers.url + urlPath, {
      method,
      headers: { authorization: `Bearer ${key}`, ...(body ? { 'content-type': 'application/json' } : {}) },
      ...(body ? { body: JSON.stringify(body) } : {}),
    });
    if (!res.ok) throw new Error(`${method} ${urlPath} answered ${res.status}: ${await res.text()}`);
    return res.json() as Promise<any>;
  };
  await api('POST', '/api/settings', { llm_model: 'openai/bench', llm_api_key: 'sk-bench', llm_base_url: 'http://127.0.0.1:9/v1' });
  process.stderr.write(`events: starting ${opts.conversations} conversation(s) on the fake agent server\n`);
  const conversations: string[] = [];
  let sandboxId: string | undefined;
  for (let i = 0; i < opts.conversations; i++) {
    const task = await api('POST', '/api/v1/app-conversations', sandboxId ? { sandbox_id: sandboxId } : {});
    let done: { status: string; detail?: string; app_conversation_id: string; sandbox_id: string } | undefined;
    for (const deadline = Date.now() + 120_000; done?.status !== 'READY'; await sleep(50)) {
      done = (await api('GET', `/api/v1/app-conversations/start-tasks?ids=${task.id}`))[0];
      if (done?.status === 'ERROR' || Date.now() > deadline)
        throw new Error(`a conversation's start: ${done?.status} ${done?.detail ?? ''}`);
    }
    // Deleted, and gone, before the replicas stop (stops run in reverse), however the bench ends.
    if (!sandboxId) stops.push(() => deleteSandbox(subscribers.url, { authorization: `Bearer ${key}` }, done!.sandbox_id));
    sandboxId = done.sandbox_id;
    conversations.push(done.app_conversation_id);
  }
  const [first] = await api('GET', `/api/v1/app-conversations?ids=${conversations[0]}`);
  return {
    subscriberUrl: subscribers.url,
    subscriberPid: subscribers.pid,
    otherUrl: other.url,
    key,
    conversations,
    sandboxKey: String(first.session_api_key),
  };
}

async function expectOk(answer: Promise<Response>): Promise<void> {
  const res = await answer;
  if (!res.ok) throw new Error(`an event's POST was answered ${res.status}: ${await res.text()}`);
  await res.arrayBuffer();
}

/** How long the idle cost is measured. */
const IDLE_MS = 5_000;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

// ---- npm run bench:events ----

async function main() {
  const { values } = parseArgs({
    options: {
      subscribers: { type: 'string', default: '1000' },
      conversations: { type: 'string', default: '10' },
      rate: { type: 'string', default: '20' },
      seconds: { type: 'string', default: '10' },
      targets: { type: 'string', default: 'floor,one,two' },
      profile: { type: 'boolean', default: false },
    },
  });
  if (spawnSync('npx', ['tsc', '-p', 'tsconfig.build.json'], { cwd: PACKAGE_ROOT, stdio: 'inherit' }).status !== 0)
    throw new Error('tsc failed');
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'acp-bench-events-'));
  let ferret: ChildProcess | null = null;
  try {
    const log = createLogger('warn', process.stderr);
    const binary = await ensureFerretDbBinary(loadConfig(process.env).cacheDir, log);
    const db = await startFerretDb({ binary, dbDir: path.join(tmp, 'db'), stateDir: tmp, log });
    ferret = db.child;
    const out = await eventDeliveryBench({
      mongoUri: db.uri,
      ferretPid: db.child.pid!,
      dir: path.join(tmp, 'events'),
      targets: values.targets.split(',') as EventTarget[],
      subscribers: Number(values.subscribers),
      conversations: Number(values.conversations),
      rate: Number(values.rate),
      seconds: Number(values.seconds),
      ...(values.profile ? { profileDir: path.join(PACKAGE_ROOT, 'bench-profiles') } : {}),
    });
    process.stdout.write(`\n${out.markdown}`);
  } finally {
    if (ferret) await stopChild(ferret);
    fs.rmSync(tmp, { recursive: true, force: true });
  }
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  main().catch((error: unknown) => {
    console.error(error);
    process.exit(1);
  });
}
