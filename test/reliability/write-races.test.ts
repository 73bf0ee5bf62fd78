// Concurrent writes on the embedded FerretDB (issue 18, "No acknowledged write is lost" and
// "Races answer right"), against the real FerretDB and two replicas of the service sharing one
// database and data directory. Without the write gate (src/db/write-gate/write-gate.ts) FerretDB lost
// about half of the settings fields written at once, git tokens saved beside settings, and
// answered 500 to concurrent first saves and renames; the per-user running limit was a count
// that concurrent starts all passed. Every answer here is checked against what is stored.
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { MongoClient } from 'mongodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateKeyText } from '../../src/crypto.js';
import { call, startTestApp, testDatabaseUri, uniqueDbName, type TestApp } from '../helpers/app.js';
import { eventually } from '../helpers/eventually.js';
import { startFakeGitProvider, type FakeGitProvider } from '../helpers/fake-git-provider.js';
import { FAKE_AGENT_SPEC, writeSpecsFile } from '../helpers/specs.js';

const LIMIT = 5;
const dbName = uniqueDbName('races');
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'acp-races-'));
let provider: FakeGitProvider;
let gitlab: HoldableProvider;
let app: TestApp;
let replica: TestApp;

beforeAll(async () => {
  provider = await startFakeGitProvider();
  gitlab = await holdableProvider();
  const env = {
    DATA_DIR: path.join(tmp, 'data'),
    MONGODB_URI: testDatabaseUri(dbName),
    ENCRYPTION_KEY: generateKeyText(),
    GITHUB_API_URL: provider.url,
    GITLAB_API_URL: gitlab.url,
    SANDBOX_SPECS_FILE: writeSpecsFile(tmp, [FAKE_AGENT_SPEC]),
    SANDBOX_MAX_RUNNING_PER_USER: String(LIMIT),
    // Every start of a race reaches the limit check (none is turned away as "starts busy").
    SANDBOX_MAX_CONCURRENT_STARTS: '20',
    SANDBOX_STARTUP_TIMEOUT_MS: '10000',
    RATE_LIMIT_PER_IP: 'off',
    RATE_LIMIT_PER_USER: 'off',
  };
  app = await startTestApp('races', env);
  replica = await startTestApp('races-replica', env);
});

afterAll(async () => {
  await replica?.stop({ keepSandboxes: true });
  await app?.stop();
  // A replica that stops lets go of its write locks: none is left for the others to wait out.
  const client = new MongoClient(testDatabaseUri(dbName));
  expect(await client.db().collection('write_locks').find({}).toArray()).toEqual([]);
  await client.close();
  await provider?.close();
  gitlab?.server.close();
  fs.rmSync(tmp, { recursive: true, force: true });
});

interface HoldableProvider {
  url: string;
  server: http.Server;
  /** The next token check waits until released; `arrived` resolves when it comes in. */
  hold(): { arrived: Promise<void>; release(): void };
}

/** A provider whose "current user" check accepts every token, and can be held mid-answer. */
async function holdableProvider(): Promise<HoldableProvider> {
  let pending: { arrived: () => void; released: Promise<void> } | null = null;
  const server = http.createServer(async (_req, res) => {
    const held = pending;
    pending = null;
    if (held) {
      held.arrived();
      await held.released;
    }
    res.setHeader('content-type', 'application/json');
    res.end('{"id":1,"username":"someone"}');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    server,
    hold() {
      let arrived!: () => void;
      let release!: () => void;
      const arrival = new Promise<void>((resolve) => (arrived = resolve));
      pending = { arrived, released: new Promise<void>((resolve) => (release = resolve)) };
      return { arrived: arrival, release };
    },
  };
}

let users = 0;
async function newUser(name: string) {
  const userId = `${name}-${++users}-${Math.random().toString(36).slice(2, 6)}`;
  return { userId, key: await app.keyFor(userId) };
}

const settingsOf = async (key: string) => (await call(app, 'GET', '/api/settings', { key })).body;

/** Three partial saves of different fields at once, `rounds` times; returns the fields acknowledged but not stored. */
async function partialSaveRounds(rounds: number, replicas: TestApp[]) {
  const { key } = await newUser('partial');
  const lost: string[] = [];
  const statuses = new Set<number>();
  for (let round = 0; round < rounds; round++) {
    const sent = { language: `lang-${round}`, agent: `agent-${round}`, llm_base_url: `https://llm-${round}.example.com` };
    const answers = await Promise.all(
      Object.entries(sent).map(([field, value], i) =>
        call(replicas[i % replicas.length]!, 'POST', '/api/settings', { key, body: { [field]: value } }),
      ),
    );
    answers.forEach((a) => statuses.add(a.status));
    const stored = await settingsOf(key);
    for (const [field, value] of Object.entries(sent)) if (stored[field] !== value) lost.push(`round ${round}: ${field}`);
  }
  return { lost, statuses: [...statuses] };
}

describe('no acknowledged write is lost', () => {
  it('100 rounds of three concurrent partial settings saves of different fields, one replica: every field stored', async () => {
    const { lost, statuses } = await partialSaveRounds(100, [app]);
    expect(statuses).toEqual([200]);
    expect(lost).toEqual([]);
  });

  it('the same with the three saves split across two replicas', async () => {
    const { lost, statuses } = await partialSaveRounds(100, [app, replica, app]);
    expect(statuses).toEqual([200]);
    expect(lost).toEqual([]);
  });

  it('git tokens saved while settings are saved (50 rounds, two replicas): no token and no field lost', async () => {
    const { userId, key } = await newUser('tokens');
    const lost: string[] = [];
    for (let round = 0; round < 50; round++) {
      const token = `ghp_race_${round}`;
      provider.validTokens.add(token);
      const [tokenSave, settingsSave] = await Promise.all([
        call(round % 2 ? replica : app, 'POST', '/api/add-git-providers', { key, body: { provider_tokens: { github: { token } } } }),
        call(round % 2 ? app : replica, 'POST', '/api/settings', { key, body: { language: `lang-${round}` } }),
      ]);
      expect([tokenSave.status, settingsSave.status]).toEqual([200, 200]);
      const stored = await app.server.deps.services.gitProviders.resolve(userId);
      if (stored.github?.token !== token) lost.push(`round ${round}: token`);
      const settings = await settingsOf(key);
      if (settings.language !== `lang-${round}`) lost.push(`round ${round}: language`);
      if (settings.provider_tokens_set?.github === undefined) lost.push(`round ${round}: provider_tokens_set`);
    }
    expect(lost).toEqual([]);
  });

  it('a provider entry without a token keeps the token a save that landed meanwhile stored', async () => {
    const { userId, key } = await newUser('keep');
    provider.validTokens.add('ghp_first').add('ghp_second');
    await call(app, 'POST', '/api/add-git-providers', { key, body: { provider_tokens: { github: { token: 'ghp_first' } } } });
    // This save reads the map (github kept), then waits while GitLab checks its new token...
    const held = gitlab.hold();
    const slow = call(app, 'POST', '/api/add-git-providers', {
      key,
      body: { provider_tokens: { github: { token: '' }, gitlab: { token: 'glpat_new' } } },
    });
    await held.arrived;
    // ...and meanwhile another replaces the github token.
    expect(
      (await call(replica, 'POST', '/api/add-git-providers', { key, body: { provider_tokens: { github: { token: 'ghp_second' } } } }))
        .status,
    ).toBe(200);
    held.release();
    expect((await slow).status).toBe(200);
    const stored = await app.server.deps.services.gitProviders.resolve(userId);
    expect([stored.github?.token, stored.gitlab?.token]).toEqual(['ghp_second', 'glpat_new']);
  });
});

describe('races answer right', () => {
  it('12 users × two concurrent first saves (one replica, and split across two): all 200, both fields stored', async () => {
    for (const pair of [
      [app, app],
      [app, replica],
    ] as const) {
      const firstSaves = await Promise.all(
        Array.from({ length: 12 }, async () => {
          const { key } = await newUser('first');
          const answers = await Promise.all([
            call(pair[0], 'POST', '/api/settings', { key, body: { language: 'de' } }),
            call(pair[1], 'POST', '/api/settings', { key, body: { llm_model: 'openai/gpt-4o' } }),
          ]);
          return { statuses: answers.map((a) => a.status), stored: await settingsOf(key) };
        }),
      );
      for (const { statuses, stored } of firstSaves) {
        expect(statuses).toEqual([200, 200]);
        expect(stored).toMatchObject({ language: 'de', llm_model: 'openai/gpt-4o' });
      }
    }
  });

  it('50 pairs of concurrent renames onto one name: exactly one succeeds, the other is 400 "already exists", nothing half-written', async () => {
    const { key } = await newUser('renames');
    const outcomes: string[] = [];
    for (let pair = 0; pair < 50; pair++) {
      const [a, b, target] = [`A_${pair}`, `B_${pair}`, `TARGET_${pair}`];
      for (const name of [a, b]) {
        expect((await call(app, 'POST', '/api/secrets', { key, body: { name, value: `value-of-${name}` } })).status).toBe(201);
      }
      const answers = await Promise.all([
        call(app, 'PUT', `/api/secrets/${a}`, { key, body: { name: target } }),
        call(pair % 2 ? replica : app, 'PUT', `/api/secrets/${b}`, { key, body: { name: target } }),
      ]);
      const statuses = answers.map((r) => r.status).sort();
      outcomes.push(statuses.join(','));
      expect(statuses).toEqual([200, 400]);
      expect(answers.find((r) => r.status === 400)!.body).toEqual({ message: `Secret ${target} already exists` });
      const names = (await call(app, 'GET', '/api/secrets', { key })).body.custom_secrets.map((s: { name: string }) => s.name);
      const loser = answers[0]!.status === 200 ? b : a;
      expect(names.filter((n: string) => [a, b, target].includes(n)).sort()).toEqual([loser, target].sort());
    }
    expect(new Set(outcomes)).toEqual(new Set(['200,400']));
  });
});

describe('the per-user running limit holds exactly under concurrency', () => {
  const start = (target: TestApp, key: string) => call(target, 'POST', '/api/v1/sandboxes', { key });

  async function runningOf(key: string): Promise<string[]> {
    const items = (await call(app, 'GET', '/api/v1/sandboxes/search?limit=50', { key })).body.items as { id: string; status: string }[];
    return items.filter((s) => s.status === 'RUNNING' || s.status === 'STARTING').map((s) => s.id);
  }

  async function race(targets: TestApp[]) {
    const { key } = await newUser('limit');
    const answers = await Promise.all(Array.from({ length: 10 }, (_, i) => start(targets[i % targets.length]!, key)));
    const started = answers.filter((a) => a.status === 200).map((a) => a.body.id as string);
    try {
      expect(answers.map((a) => a.status).sort()).toEqual([...Array(LIMIT).fill(200), ...Array(10 - LIMIT).fill(429)]);
      for (const refused of answers.filter((a) => a.status === 429)) {
        expect(refused.body.detail).toMatch(/^Sandbox limit reached \(\d+ running\)$/);
      }
      await eventually('the started sandboxes running', async () => {
        const running = await runningOf(key);
        return running.length === LIMIT && started.every((id) => running.includes(id));
      });
      // Full: one more start is refused on either replica; a pause frees exactly one slot.
      expect((await start(replica, key)).status).toBe(429);
      expect((await call(app, 'POST', `/api/v1/sandboxes/${started[0]}/pause`, { key })).status).toBe(200);
      const again = await Promise.all([start(app, key), start(replica, key)]);
      expect(again.map((a) => a.status).sort()).toEqual([200, 429]);
      started.push(...again.filter((a) => a.status === 200).map((a) => a.body.id as string));
      expect(await runningOf(key)).toHaveLength(LIMIT);
    } finally {
      for (const id of started) await call(app, 'DELETE', `/api/v1/sandboxes/${id}`, { key });
    }
  }

  it('10 concurrent starts with the limit at 5 on one replica: exactly 5 run', () => race([app]));

  it('10 concurrent starts split across two replicas: exactly 5 run', () => race([app, replica]));
});
