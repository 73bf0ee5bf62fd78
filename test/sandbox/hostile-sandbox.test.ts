// Two users' real agent-server sandboxes on one service started as `npm start` does, and Bob
// hostile, from the agent's shell (with the session key the API gives him) and from his
// repository's .openhands/setup.sh, which a conversation start runs (test/helpers/hostile-rig.ts).
// Isolated, he finds nothing of Alice's or of the service's: no file, process, loopback port or
// database; he cannot shadow the service's port across its restart; his memory and fork bombs end
// his sandbox only; the internet stays reachable (pip download). Alice's own sandbox holds no copy
// of her LLM or MCP key: her agent reaches both through the service's gateway (issue 38). The same suite
// without isolation and without the gateway (hostile-sandbox-unisolated.test.ts) finds the holes and
// the key, so it can fail.
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { call } from '../helpers/app.js';
import { eventually } from '../helpers/eventually.js';
import {
  filesOutside,
  parseProbe,
  PROBE,
  sandboxReads,
  searchKeys,
  SQUATTER,
  startRig,
  type Rig,
  type Started,
  expectFileRoutesRefused,
} from '../helpers/hostile-rig.js';

let rig: Rig;
let alice: Started;
let bob: Started;
let bobProject: string;
let aliceWorker: string;

beforeAll(async () => {
  rig = await startRig('hostile', {});
  // Both agent servers start at once; Bob's hostile repository then comes with a second
  // conversation in his sandbox, once the setup script can be told where Alice is.
  let bobFirst: Started;
  [alice, bobFirst] = await Promise.all([startConversation(), rig.start(rig.bob.key)]);
  await rig.git.createRepo('bob', 'hostile', {
    'tenant-probe.py': PROBE,
    'port-squatter.py': SQUATTER,
    '.openhands/setup.sh': setupProbe(),
  });
  bob = await rig.start(rig.bob.key, { selected_repository: 'bob/hostile', git_provider: 'github', sandbox_id: bobFirst.sandboxId });
  bobProject = path.join(bob.dir, 'workspace/project/hostile');
}, 10 * 60_000);

afterAll(async () => rig?.close());

async function startConversation(): Promise<Started> {
  const started = await rig.start(rig.alice.key);
  // Her web app on her first worker port, as the agent would run one.
  const served = await rig.shell(
    started,
    'setsid nohup /usr/bin/python3 -m http.server "$WORKER_1" --bind 0.0.0.0 >/dev/null 2>&1 & echo $WORKER_1',
  );
  expect(served.exitCode, served.stderr).toBe(0);
  const [sandbox] = (await call(rig.service, 'GET', `/api/v1/sandboxes?id=${started.sandboxId}`, { key: rig.alice.key })).body;
  aliceWorker = sandbox.exposed_urls.find((u: { name: string }) => u.name === 'WORKER_1').url;
  // Her browser reaches it (a host port forwarded into her sandbox's own network).
  await eventually('her web app to answer', async () => (await fetch(aliceWorker).catch(() => null))?.status === 200);
  return started;
}

/** What the probe gets to try: her agent server and web app, the service, the host's canary and database. */
function targets() {
  return JSON.stringify({
    ports: {
      alice_agent: Number(new URL(alice.agentUrl).port),
      alice_worker: Number(new URL(aliceWorker).port),
      service: rig.port,
      canary: rig.canaryPort,
      database: Number(new URL(inject('mongoUri')).port),
      control_plane: 8010,
    },
    python: fs.realpathSync(path.join(process.env.HOME!, '.cache/agent-control-plane/agent-server-1.58.0-py3.13/bin/python')),
  });
}

function setupProbe(): string {
  return `/usr/bin/python3 tenant-probe.py '${rig.dataDir}' '${alice.dir}' '${targets()}' > probe-setup.json 2>&1 || true\n`;
}

describe('a hostile sandbox, isolated (bubblewrap and its own network)', () => {
  it(
    'finds nothing of Alice or of the service from his shell or his setup script, and still reaches the internet',
    { timeout: 5 * 60_000 },
    async () => {
      const encryptionKey = fs.readFileSync(path.join(rig.dataDir, 'encryption.key'), 'utf8').trim();
      // What there is to find, seen from the host: a probe that misses these is blind, not blocked.
      expect(fs.readdirSync(path.join(alice.dir, 'conversations'), { recursive: true })).toContainEqual(
        expect.stringMatching(/base_state\.json$/),
      );
      const shell = await rig.shell(bob, `/usr/bin/python3 tenant-probe.py '${rig.dataDir}' '${alice.dir}' '${targets()}'`, bobProject);
      expect(shell.exitCode, shell.stderr).toBe(0);
      const secrets = [
        encryptionKey,
        rig.alice.llmKey,
        rig.alice.mcpKey,
        rig.alice.secret,
        rig.alice.gitToken,
        alice.sessionKey,
        rig.alice.key,
      ];
      for (const [where, output] of [
        ['setup script', fs.readFileSync(path.join(bobProject, 'probe-setup.json'), 'utf8')],
        ['agent shell', shell.stdout],
      ] as const) {
        const probe = parseProbe(where, output, secrets);
        expect(probe.encryption_key!.ok, where).toBe(false);
        expect(probe.data_dir_listing!.value ?? [], where).toEqual(['sandboxes']);
        expect(probe.sandboxes_listing!.value, where).toEqual([bob.sandboxId]);
        expect(probe.other_sandbox_files!.ok, where).toBe(false);
        expect(probe.database_socket!.ok, where).toBe(false);
        expect(probe.process_environments!.value, where).not.toContain('OH_SESSION_API_KEYS_0=' + alice.sessionKey);
        // No host loopback port: not hers, not the service's own, not the host's canary or database.
        for (const name of ['alice_agent', 'alice_worker', 'service', 'canary', 'database']) {
          expect(probe[`reach_${name}`], `${where}: ${name}`).toMatchObject({ ok: false });
        }
        // The one path out: the service, at 127.0.0.1:8010 inside.
        expect(probe.reach_control_plane, where).toMatchObject({ ok: true });
        // Its own network's listeners only (its agent server; the relay to the service).
        expect(probe.listening_ports!.value, where).not.toContain(rig.canaryPort);
        expect(probe.listening_ports!.value, where).not.toContain(rig.port);
        expect(probe.mongo_tcp_ports!.value, where).toEqual([]);
        expect(probe.pip_download, where).toMatchObject({ ok: true, value: [expect.stringMatching(/^six-1\.16\.0/)] });
      }
    },
  );

  it(
    'leaves no copy of Alice’s LLM or MCP key in anything her own sandbox sees: files, environments, command lines, sealed values',
    { timeout: 5 * 60_000 },
    async () => {
      // Her agent has called its LLM: the service put her key on the calls, on its way out.
      await eventually('her agent’s LLM calls', async () =>
        rig.llm.requests.some((r) => r.headers.authorization === `Bearer ${rig.alice.llmKey}`),
      );
      // Her custom secret is hers to use in her sandbox (the agent's commands get it): the search
      // finds it where the agent server keeps it, so it is not blind there.
      const search = await searchKeys(rig, alice, { llm: rig.alice.llmKey, mcp: rig.alice.mcpKey, secret: rig.alice.secret });
      // It looked: the whole view's files (the system's and the venv's too old to hold a key made
      // by this test), those of her agent server read, its processes and its sealed values opened.
      expect(search.counts.files, JSON.stringify(search)).toBeGreaterThan(10_000);
      expect(search.counts.read, JSON.stringify(search)).toBeGreaterThan(10);
      expect(search.counts.processes, JSON.stringify(search)).toBeGreaterThan(1);
      expect(search.sealed, JSON.stringify(search)).toMatch(/^opened [1-9]/);
      expect(search.found.secret, JSON.stringify(search)).toContainEqual(expect.stringMatching(/base_state\.json$/));
      expect(search.found.llm, 'her LLM key in her sandbox').toEqual([]);
      // Nor her remote MCP server's key: its calls go through the gateway too (/llm/mcp/<name>, the
      // key added on the way out).
      expect(search.found.mcp, 'her MCP key in her sandbox').toEqual([]);
    },
  );

  it('cannot shadow the service’s port, even while the service restarts', { timeout: 5 * 60_000 }, async () => {
    const out = path.join(bobProject, 'squatted');
    const squat = await rig.shell(
      bob,
      `setsid nohup /usr/bin/python3 port-squatter.py ${rig.port} '${out}' 120 >/dev/null 2>&1 &`,
      bobProject,
    );
    expect(squat.exitCode).toBe(0);
    await eventually('the squatter to have tried', async () => fs.existsSync(`${out}.bound`));
    await rig.restart();
    const settings = await call(rig.service, 'GET', '/api/settings', { key: rig.alice.key });
    expect(settings.status).toBe(200);
    expect(settings.body).toMatchObject({ llm_model: 'openai/stub' });
    // His squatter bound the port in his own network only, where no client of the service goes.
    expect(fs.readFileSync(`${out}.bound`, 'utf8')).toBe('yes');
    expect(fs.existsSync(out) ? fs.readFileSync(out, 'utf8') : '').not.toContain(rig.alice.key);
    expect(fs.existsSync(out)).toBe(false);
  });

  it('refuses file routes that leave the workspace', async () => {
    await expectFileRoutesRefused(rig, rig.alice.key, alice.conversationId, [
      '../../../../encryption.key',
      '/etc/passwd',
      '/workspace/project/../../encryption.key',
    ]);
  });

  it('shows /workspace as a directory holding his project, as in a container', async () => {
    const seen = await rig.shell(bob, 'stat -c %F /workspace; ls /workspace; readlink /workspace || echo not-a-link', bobProject);
    expect(seen.exitCode, seen.stderr).toBe(0);
    expect(seen.stdout.trim().split('\n')).toEqual(['directory', 'project', 'not-a-link']);
  });

  it('keeps Alice’s keys and secrets out of every file the service writes outside her sandbox’s folder and out of its log', async () => {
    const own = [alice.dir, bob.dir];
    for (const { file, text } of filesOutside(rig.dataDir, own)) {
      for (const secret of [rig.alice.llmKey, rig.alice.mcpKey, rig.alice.secret, rig.alice.gitToken])
        expect(text, file).not.toContain(secret);
    }
    for (const secret of [rig.alice.llmKey, rig.alice.mcpKey, rig.alice.secret, rig.alice.gitToken, rig.alice.key]) {
      expect(rig.output()).not.toContain(secret);
    }
  });

  it('ends only Bob’s sandbox at a memory bomb, and again at a fork bomb after a resume', { timeout: 5 * 60_000 }, async () => {
    await rig.shell(bob, '/usr/bin/python3 -c "a = []\nwhile True: a.append(bytearray(64 * 2**20))"').catch(() => undefined);
    const ended = await sandboxReads(rig, rig.bob.key, bob.sandboxId, 'ERROR');
    expect(ended.status_reason).toMatch(/reached its memory limit \(1\.5 GiB\)/);
    expect((await call(rig.service, 'GET', `/api/v1/sandboxes?id=${alice.sandboxId}`, { key: rig.alice.key })).body[0].status).toBe(
      'RUNNING',
    );

    expect((await call(rig.service, 'POST', `/api/v1/sandboxes/${bob.sandboxId}/resume`, { key: rig.bob.key })).status).toBe(200);
    const resumed = await sandboxReads(rig, rig.bob.key, bob.sandboxId, 'RUNNING', 3 * 60_000);
    const again = { ...bob, sessionKey: resumed.session_api_key, agentUrl: resumed.exposed_urls[0].url };
    const forks =
      'import os, time\nfor _ in range(5000):\n    try:\n        if os.fork() == 0:\n            time.sleep(60); os._exit(0)\n    except OSError:\n        break';
    await rig.shell(again, `/usr/bin/python3 -c "${forks}"`).catch(() => undefined);
    const forked = await sandboxReads(rig, rig.bob.key, bob.sandboxId, 'ERROR');
    expect(forked.status_reason).toMatch(/reached its process limit \(512\)/);
    expect((await call(rig.service, 'GET', `/api/v1/sandboxes?id=${alice.sandboxId}`, { key: rig.alice.key })).body[0].status).toBe(
      'RUNNING',
    );
    expect((await call(rig.service, 'GET', '/api/settings', { key: rig.alice.key })).status).toBe(200);
  });
});
