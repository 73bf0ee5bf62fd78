// Throughput and latency of the main endpoints against a real FerretDB on loopback.
// Usage: npm run bench [-- --seconds 5 --concurrency 16]
// Bounded: every scenario runs for a fixed time against 127.0.0.1 only, then stops.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { loadConfig } from '../src/config.js';
import { generateKeyText } from '../src/crypto.js';
import { ensureFerretDbBinary, startFerretDb } from '../src/db/embedded-mongo.js';
import { stopChild } from '../src/processes.js';
import { createLogger } from '../src/logger.js';
import { startServer } from '../src/server.js';

const { values } = parseArgs({ options: { seconds: { type: 'string', default: '5' }, concurrency: { type: 'string', default: '16' } } });
const seconds = Number(values.seconds);
const concurrency = Number(values.concurrency);

interface Scenario {
  name: string;
  method: string;
  path: string;
  body?: unknown;
  authenticated: boolean;
}

async function main() {
  const log = createLogger('warn', process.stderr);
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'acp-bench-'));
  const binary = await ensureFerretDbBinary(loadConfig(process.env).cacheDir, log);
  const db = await startFerretDb({ binary, dbDir: path.join(tmp, 'db'), stateDir: tmp, log });
  const config = loadConfig({
    PORT: '0',
    DATA_DIR: tmp,
    MONGODB_URI: `${db.uri}bench`,
    ENCRYPTION_KEY: generateKeyText(),
    LOG_LEVEL: 'silent',
    // The bench measures the service, not its rate limits (one user, one address, many requests).
    RATE_LIMIT_PER_USER: 'off',
    RATE_LIMIT_PER_IP: 'off',
  });
  const server = await startServer(config, createLogger('silent'));
  const key = (await server.deps.services.apiKeys.create('bench')).key;
  await fetch(`${server.url}/api/settings`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-session-api-key': key },
    body: JSON.stringify({
      llm_model: 'm',
      llm_api_key: 'sk-bench',
      mcp_config: { stdio_servers: [{ name: 'a', command: 'b', env: { T: 'x' } }] },
    }),
  });
  for (let i = 0; i < 20; i++) await server.deps.services.secrets.create('bench', { name: `S${i}`, value: 'v' });

  const trpcInput = encodeURIComponent(JSON.stringify({ json: {} }));
  const scenarios: Scenario[] = [
    { name: 'GET /alive (no auth, no DB)', method: 'GET', path: '/alive', authenticated: false },
    { name: 'GET /api/settings without key (401)', method: 'GET', path: '/api/settings', authenticated: false },
    { name: 'GET /api/settings', method: 'GET', path: '/api/settings', authenticated: true },
    {
      name: 'POST /api/settings (partial, encrypts a key)',
      method: 'POST',
      path: '/api/settings',
      body: { llm_api_key: 'sk-new', language: 'en' },
      authenticated: true,
    },
    { name: 'GET /api/secrets (20 secrets)', method: 'GET', path: '/api/secrets', authenticated: true },
    { name: 'tRPC settings.get', method: 'GET', path: `/trpc/settings.get?input=${trpcInput}`, authenticated: true },
  ];

  const rows: string[] = [];
  for (const scenario of scenarios) {
    const latencies: number[] = [];
    let errors = 0;
    const deadline = performance.now() + seconds * 1000;
    const headers: Record<string, string> = scenario.authenticated ? { 'x-session-api-key': key } : {};
    if (scenario.body) headers['content-type'] = 'application/json';
    const body = scenario.body ? JSON.stringify(scenario.body) : undefined;
    const expected = scenario.authenticated || scenario.path === '/alive' ? 200 : 401;
    await Promise.all(
      Array.from({ length: concurrency }, async () => {
        while (performance.now() < deadline) {
          const started = performance.now();
          const res = await fetch(server.url + scenario.path, { method: scenario.method, headers, body });
          await res.arrayBuffer();
          latencies.push(performance.now() - started);
          if (res.status !== expected) errors++;
        }
      }),
    );
    latencies.sort((a, b) => a - b);
    const pct = (p: number) => latencies[Math.min(latencies.length - 1, Math.floor(latencies.length * p))]!.toFixed(1);
    rows.push(`| ${scenario.name} | ${(latencies.length / seconds).toFixed(0)} | ${pct(0.5)} | ${pct(0.99)} | ${errors} |`);
  }

  await server.stop();
  await stopChild(db.child);
  fs.rmSync(tmp, { recursive: true, force: true });
  process.stdout.write(
    `\n${seconds}s per scenario, ${concurrency} concurrent clients, Node ${process.version}, ${os.cpus().length} cores\n\n` +
      '| scenario | req/s | p50 ms | p99 ms | unexpected status |\n|---|---:|---:|---:|---:|\n' +
      rows.join('\n') +
      '\n',
  );
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
