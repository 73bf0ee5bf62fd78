// Two users on one service started as the README says (embedded FerretDB, process runtime, the
// real agent server), the way a hostile user would try it: Bob runs a probe (tenant-probe.py)
// in his own sandbox's shell through his agent server, with the session key the API hands him,
// and from his repository's .openhands/setup.sh, which a conversation start runs. It tries to
// read the service's encryption key, Alice's sandbox folder (her conversation, LLM key and
// secrets), her processes' environment (her sandbox key), and to reach the database by its
// socket or any loopback port. The host side first checks that each of those is really there
// to be found, so a probe that finds nothing proves the isolation, not a wrong path.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inject } from 'vitest';
import { AgentServerClient } from '../../src/agent-server/client.js';
import { PACKAGE_ROOT } from '../../src/processes.js';
import { call } from '../helpers/app.js';
import { eventually } from '../helpers/eventually.js';
import { startFakeGitHost, type FakeGitHost } from '../helpers/fake-git-host.js';
import { runCli, startServiceProcess, type ServiceProcess } from '../helpers/processes.js';
import { startStubLlm, type StubLlm } from '../helpers/stub-llm.js';

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'acp-tenants-'));
const dataDir = path.join(tmp, 'data');
const PROBE = fs.readFileSync(path.join(PACKAGE_ROOT, 'test/fixtures/tenant-probe.py'), 'utf8');
const unique = () => Math.random().toString(36).slice(2, 10);
const ALICE = { llmKey: `sk-alice-llm-${unique()}`, secret: `alice-custom-secret-${unique()}`, gitToken: `ghp_alice_${unique()}` };
const BOB_TOKEN = `ghp_bob_${unique()}`;

let service: ServiceProcess;
let git: FakeGitHost;
let llm: StubLlm;
/** Sandboxes outlive the service (by design): removed through the API before it stops. */
const sandboxes: { key: string; sandboxId: string }[] = [];

beforeAll(async () => {
  git = await startFakeGitHost();
  git.validTokens.add(ALICE.gitToken).add(BOB_TOKEN);
  llm = await startStubLlm();
  // The fake self-hosted GitHub runs on loopback, which only an operator's allowance opens.
  service = await startServiceProcess({
    DATA_DIR: dataDir,
    GIT_PROVIDER_HOSTS: '127.0.0.1',
    SANDBOX_STARTUP_TIMEOUT_MS: '180000',
    START_TASK_POLL_MS: '200',
  });
}, 180_000);

afterAll(async () => {
  for (const { key, sandboxId } of sandboxes) await call(service, 'DELETE', `/api/v1/sandboxes/${sandboxId}`, { key });
  await service?.stop();
  await git?.close();
  await llm?.close();
  fs.rmSync(tmp, { recursive: true, force: true });
});

async function keyFor(user: string): Promise<string> {
  const created = await runCli(['keys', 'create', '--user', user], { DATA_DIR: dataDir });
  expect(created.code, created.stderr).toBe(0);
  return created.stdout.trim().split('\n').pop()!;
}

async function userWith(key: string, llmKey: string, gitToken: string): Promise<void> {
  const saved = await call(service, 'POST', '/api/settings', {
    key,
    body: { llm_model: 'openai/stub', llm_base_url: llm.url, llm_api_key: llmKey },
  });
  expect(saved.status).toBe(200);
  const tokens = await call(service, 'POST', '/api/add-git-providers', {
    key,
    body: { provider_tokens: { github: { token: gitToken, host: git.url } } },
  });
  expect(tokens.status, tokens.text).toBe(200);
}

async function startConversation(key: string, body: Record<string, unknown>) {
  const started = await call(service, 'POST', '/api/v1/app-conversations', {
    key,
    body: { initial_message: { content: [{ type: 'text', text: 'Say hello' }], run: true }, ...body },
  });
  expect(started.status, started.text).toBe(200);
  const task = await eventually(
    'the start task to finish',
    async () => {
      const t = (await call(service, 'GET', `/api/v1/app-conversations/start-tasks?ids=${started.body.id}`, { key })).body[0];
      return t.status === 'READY' || t.status === 'ERROR' ? t : null;
    },
    5 * 60_000,
  );
  if (task.sandbox_id) sandboxes.push({ key, sandboxId: task.sandbox_id });
  expect(task.status, task.detail).toBe('READY');
  const sandbox = (await call(service, 'GET', `/api/v1/sandboxes?id=${task.sandbox_id}`, { key })).body[0];
  return {
    sandboxId: task.sandbox_id as string,
    sessionKey: sandbox.session_api_key as string,
    agentUrl: sandbox.exposed_urls[0].url as string,
  };
}

/** Every file under a folder, as text (the host side, as root). */
function treeText(root: string): string {
  return fs
    .readdirSync(root, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile())
    .map((e) => fs.readFileSync(path.join(e.parentPath, e.name), 'utf8'))
    .join('\n');
}

function environmentsOnHost(): string {
  return fs
    .readdirSync('/proc')
    .filter((p) => /^\d+$/.test(p))
    .map((p) => {
      try {
        return fs.readFileSync(`/proc/${p}/environ`, 'utf8');
      } catch {
        return '';
      }
    })
    .join('\n');
}

/** The TCP ports a process listens on, from its open sockets and the kernel's tables. */
function listeningPortsOf(pid: number): number[] {
  const inodes = new Set(
    fs
      .readdirSync(`/proc/${pid}/fd`)
      .map((fd) => /^socket:\[(\d+)\]$/.exec(fs.readlinkSync(`/proc/${pid}/fd/${fd}`))?.[1])
      .filter(Boolean),
  );
  expect(inodes.size).toBeGreaterThan(0); // it has sockets: its Unix socket and the connections on it
  return ['/proc/net/tcp', '/proc/net/tcp6'].flatMap((table) =>
    fs
      .readFileSync(table, 'utf8')
      .split('\n')
      .slice(1)
      .map((line) => line.trim().split(/\s+/))
      .filter((f) => f[3] === '0A' && inodes.has(f[9]))
      .map((f) => parseInt(f[1]!.split(':')[1]!, 16)),
  );
}

describe('tenant isolation of process sandboxes (bubblewrap)', () => {
  it(
    "keeps everything of Alice and of the service out of reach of Bob's sandbox and of his setup script",
    { timeout: 10 * 60_000 },
    async () => {
      const aliceKey = await keyFor('alice');
      const bobKey = await keyFor('bob');
      await userWith(aliceKey, ALICE.llmKey, ALICE.gitToken);
      expect(
        (await call(service, 'POST', '/api/secrets', { key: aliceKey, body: { name: 'ALICE_SECRET', value: ALICE.secret } })).status,
      ).toBe(201);
      await userWith(bobKey, `sk-bob-${unique()}`, BOB_TOKEN);

      const alice = await startConversation(aliceKey, {});
      const aliceDir = path.join(dataDir, 'sandboxes', alice.sandboxId);
      const encryptionKey = fs.readFileSync(path.join(dataDir, 'encryption.key'), 'utf8').trim();
      // What there is to find, seen from the host: a probe that misses these is blind, not blocked.
      expect(encryptionKey.length).toBeGreaterThan(20);
      // Her conversation's state (the start request, her LLM key sealed with her sandbox's key).
      expect(fs.readdirSync(path.join(aliceDir, 'conversations'), { recursive: true })).toContainEqual(
        expect.stringMatching(/base_state\.json$/),
      );
      expect(treeText(path.join(aliceDir, 'conversations'))).toContain('api_key');
      expect(environmentsOnHost()).toContain(`OH_SESSION_API_KEYS_0=${alice.sessionKey}`);

      await git.createRepo('bob', 'hostile', {
        'tenant-probe.py': PROBE,
        '.openhands/setup.sh': `/usr/bin/python3 tenant-probe.py '${dataDir}' '${aliceDir}' > probe-setup.json 2>&1 || true\n`,
      });
      const bob = await startConversation(bobKey, { selected_repository: 'bob/hostile', git_provider: 'github' });
      const bobProject = path.join(dataDir, 'sandboxes', bob.sandboxId, 'workspace/project/hostile');
      const fromSetup = fs.readFileSync(path.join(bobProject, 'probe-setup.json'), 'utf8');
      const shell = await new AgentServerClient(bob.agentUrl, bob.sessionKey).bash(
        `/usr/bin/python3 tenant-probe.py '${dataDir}' '${aliceDir}'`,
        { cwd: bobProject },
      );
      expect(shell.exitCode, shell.stderr).toBe(0);

      const testDatabasePort = Number(new URL(inject('mongoUri')).port);
      const serviceDatabase = JSON.parse(fs.readFileSync(path.join(dataDir, 'ferretdb', 'server.json'), 'utf8')) as { pid: number };
      const serviceDatabasePorts = listeningPortsOf(serviceDatabase.pid);
      for (const [where, output] of [
        ['setup script', fromSetup],
        ['agent shell', shell.stdout],
      ] as const) {
        for (const secret of [encryptionKey, ALICE.llmKey, ALICE.secret, ALICE.gitToken, alice.sessionKey, aliceKey]) {
          expect(output, `${where} found a secret`).not.toContain(secret);
        }
        const probe = JSON.parse(output) as Record<string, { ok: boolean; value?: unknown; error?: string }>;
        expect(probe.encryption_key!.ok, where).toBe(false);
        // The only folders on the way to Bob's own are empty ones made for the view.
        expect(probe.data_dir_listing!.value ?? [], where).toEqual(['sandboxes']);
        expect(probe.sandboxes_listing!.value, where).toEqual([bob.sandboxId]);
        expect(probe.other_sandbox_files!.ok, where).toBe(false);
        expect(probe.database_socket!.ok, where).toBe(false);
        expect(probe.process_environments!.value, where).not.toContain('OH_SESSION_API_KEYS_0=' + alice.sessionKey);
        // Loopback is shared: the probe does find the test run's own FerretDB (it listens on TCP;
        // other runs on the machine may add theirs), while the service's listens on no port.
        expect(probe.mongo_tcp_ports!.value, where).toContain(testDatabasePort);
        expect(serviceDatabasePorts).toEqual([]);
      }
      // Alice still has her one key: nothing was added behind her back.
      const keys = await runCli(['keys', 'list', '--user', 'alice'], { DATA_DIR: dataDir });
      expect(keys.stdout.trim().split('\n')).toHaveLength(1);
    },
  );
});
