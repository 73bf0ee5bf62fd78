// Start workers shared fairly between users (docs/conversations.md, "Start workers: fair
// shares"), against the real service, FerretDB, the fake git host and fake agent servers. With
// START_TASK_WORKERS=2 a user holds at most one worker, and users with tasks waiting are served
// in turn. Slow starts are repositories whose .openhands/setup.sh waits for a gate file the test
// opens: nothing here waits for a clock. The order is read from the tasks' recorded phase
// times. SANDBOX_ISOLATION=none (operator-declared, as test/sandbox/isolation-modes.test.ts
// does): the setup scripts must see the gate files on the host; isolation is not what this tests.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call } from '../helpers/app.js';
import { startConversationApp, waitForTask, type ConversationApp } from '../helpers/conversation-app.js';
import { eventually } from '../helpers/eventually.js';
import { startFakeGitHost, type FakeGitHost } from '../helpers/fake-git-host.js';

const gates = fs.mkdtempSync(path.join(os.tmpdir(), 'acp-gates-'));
const gate = (name: string) => path.join(gates, name);
let git: FakeGitHost;
let app: ConversationApp;

interface Task {
  id: string;
  status: string;
  phase_times: Record<string, string>;
}

beforeAll(async () => {
  git = await startFakeGitHost();
  git.validTokens.add('ghp_fair');
  const waitsFor = (file: string) => `#!/bin/sh\nwhile [ ! -e '${file}' ]; do sleep 0.05; done\n`;
  await git.createRepo('acme', 'gate-a', { 'README.md': '# A\n', '.openhands/setup.sh': waitsFor(gate('a')) });
  await git.createRepo('acme', 'gate-c', { 'README.md': '# C\n', '.openhands/setup.sh': waitsFor(gate('c')) });
  app = await startConversationApp('start-fairness', {
    START_TASK_WORKERS: '2',
    SANDBOX_ISOLATION: 'none',
    GIT_PROVIDER_HOSTS: '127.0.0.1',
    RATE_LIMIT_PER_USER: 'off',
    // A start that fails (a sandbox slow to start on a busy machine) would free its worker early.
    SANDBOX_STARTUP_TIMEOUT_MS: '60000',
  });
}, 60_000);
afterAll(async () => {
  for (const name of ['a', 'c']) fs.writeFileSync(gate(name), ''); // nothing left waiting
  await app?.close();
  await git?.close();
  fs.rmSync(gates, { recursive: true, force: true });
});

async function userWithToken(label: string): Promise<string> {
  const key = await app.user(label);
  const stored = await call(app, 'POST', '/api/add-git-providers', {
    key,
    body: { provider_tokens: { github: { token: 'ghp_fair', host: git.url } } },
  });
  expect(stored.status).toBe(200);
  return key;
}

async function start(key: string, repository?: string): Promise<string> {
  const body = repository ? { selected_repository: repository, git_provider: 'github' } : {};
  const started = await call(app, 'POST', '/api/v1/app-conversations', { key, body });
  expect(started.status, started.text).toBe(200);
  return started.body.id as string;
}

const tasksOf = async (key: string, ids: string[]): Promise<Task[]> =>
  (await call(app, 'GET', `/api/v1/app-conversations/start-tasks?${ids.map((id) => `ids=${id}`).join('&')}`, { key })).body as Task[];

const entered = (task: Task, status: string) => Date.parse(task.phase_times[status]!);

describe('start workers shared between users', () => {
  it("holds a user to half the workers and serves waiting users in turn, not one user's backlog first", async () => {
    const alice = await userWithToken('alice');
    const carol = await userWithToken('carol');
    const bob = await app.user('bob');
    // Alice's backlog first, then Carol's, then Bob's single start: oldest first would run
    // Alice's three, then Carol's two, and Bob's last.
    const aliceIds = [await start(alice, 'acme/gate-a'), await start(alice, 'acme/gate-a'), await start(alice, 'acme/gate-a')];
    const carolIds = [await start(carol, 'acme/gate-c'), await start(carol, 'acme/gate-c')];
    const bobId = await start(bob);

    // Both workers busy in a setup script: fairly, one of Alice's and one of Carol's.
    const inSetup = async () => {
      const tasks = [...(await tasksOf(alice, aliceIds)), ...(await tasksOf(carol, carolIds))];
      return tasks.filter((t) => t.status === 'RUNNING_SETUP_SCRIPT');
    };
    const busy = await eventually('two starts in their setup scripts', async () => {
      const found = await inSetup();
      return found.length === 2 ? found : null;
    });
    // Carol's first start ends; the freed worker goes to Bob (Carol was served this round),
    // unless Alice holds both workers, in which case nothing more can run until hers end.
    fs.writeFileSync(gate('c'), '');
    await eventually('Bob ready, or every worker held by Alice', async () => {
      const [task] = await tasksOf(bob, [bobId]);
      if (task?.status === 'READY') return true;
      const held = (await tasksOf(alice, aliceIds)).filter((t) => t.status === 'RUNNING_SETUP_SCRIPT');
      return held.length === 2;
    });
    fs.writeFileSync(gate('a'), '');
    for (const [key, id] of [...aliceIds.map((id) => [alice, id]), ...carolIds.map((id) => [carol, id]), [bob, bobId]]) {
      await waitForTask(app, key!, id!);
    }

    const [a1, a2, a3] = await tasksOf(alice, aliceIds);
    const [c1, c2] = await tasksOf(carol, carolIds);
    const [b1] = await tasksOf(bob, [bobId]);
    // What happened, named, for every check below.
    const story = JSON.stringify({
      busy: busy.map((t) => t.id),
      ...Object.fromEntries(
        Object.entries({ a1, a2, a3, c1, c2, b1 }).map(([name, t]) => [name, { id: t!.id, status: t!.status, phases: t!.phase_times }]),
      ),
    });
    for (const task of [a1, a2, a3, c1, c2, b1]) expect(task!.status, story).toBe('READY');
    expect(busy.map((t) => t.id).sort(), story).toEqual([aliceIds[0], carolIds[0]].sort());
    // Bob's start began before Alice's backlog and before Carol's second start (older than his).
    expect(entered(b1!, 'WAITING_FOR_SANDBOX'), story).toBeLessThan(entered(a2!, 'WAITING_FOR_SANDBOX'));
    expect(entered(b1!, 'WAITING_FOR_SANDBOX'), story).toBeLessThan(entered(c2!, 'WAITING_FOR_SANDBOX'));
    expect(entered(c1!, 'WAITING_FOR_SANDBOX'), story).toBeLessThan(entered(b1!, 'WAITING_FOR_SANDBOX'));
    // Alice never held two workers: each of her starts began after the one before was READY.
    expect(entered(a2!, 'WAITING_FOR_SANDBOX'), story).toBeGreaterThanOrEqual(entered(a1!, 'READY'));
    expect(entered(a3!, 'WAITING_FOR_SANDBOX'), story).toBeGreaterThanOrEqual(entered(a2!, 'READY'));
  });
});
