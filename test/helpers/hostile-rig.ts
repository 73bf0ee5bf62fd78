// Two users on one service started as `npm start` does (the compiled service, embedded FerretDB,
// process runtime, the real agent server), for the hostile-sandbox suites: Alice with an LLM key,
// an MCP key, a custom secret and a web app on her first worker port; Bob with a repository whose
// setup script runs the probe (test/fixtures/tenant-probe.py). The same rig runs isolated and with
// SANDBOX_ISOLATION=none, so that the suite shows it finds the holes it checks for. searchKeys runs
// the probe's key search in a sandbox: where its owner's keys show, in all it can see.
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'vitest';
import { AgentServerClient } from '../../src/agent-server/client.js';
import { cacheRoot } from '../../src/config/config-values.js';
import { freePort, PACKAGE_ROOT } from '../../src/processes.js';
import { call } from './app.js';
import { eventually } from './eventually.js';
import { startFakeGitHost, type FakeGitHost } from './fake-git-host.js';
import { runCli, startServiceProcess, type ServiceProcess } from './processes.js';
import { startStubLlm, type StubLlm } from './stub-llm.js';

const unique = () => Math.random().toString(36).slice(2, 10);
export const PROBE = fs.readFileSync(path.join(PACKAGE_ROOT, 'test/fixtures/tenant-probe.py'), 'utf8');
export const SQUATTER = fs.readFileSync(path.join(PACKAGE_ROOT, 'test/fixtures/port-squatter.py'), 'utf8');
/** The agent server's venv python (as sandboxes see it too): the probe opens sealed values with its cryptography. */
export const AGENT_PYTHON = path.join(cacheRoot(), 'agent-server-1.58.0-py3.13/bin/python');

export interface Started {
  sandboxId: string;
  sessionKey: string;
  agentUrl: string;
  conversationId: string;
  dir: string;
}

export interface Rig {
  service: ServiceProcess;
  port: number;
  dataDir: string;
  git: FakeGitHost;
  llm: StubLlm;
  /** A listener of the host on loopback that no sandbox is allowed to reach. */
  canary: net.Server;
  canaryPort: number;
  /** When the rig started (epoch seconds), before any of its keys existed. */
  since: number;
  alice: { key: string; llmKey: string; mcpKey: string; secret: string; gitToken: string };
  bob: { key: string };
  /** Service output of every instance so far (restarts included). */
  output(): string;
  start(key: string, body?: Record<string, unknown>): Promise<Started>;
  shell(sandbox: Started, command: string, cwd?: string): Promise<{ exitCode: number | null; stdout: string; stderr: string }>;
  /** Stops the service (its sandboxes run on) and starts it again on the same port and data. */
  restart(): Promise<void>;
  close(): Promise<void>;
}

export async function startRig(label: string, env: Record<string, string>): Promise<Rig> {
  const since = Date.now() / 1000;
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), `acp-${label}-`));
  const dataDir = path.join(tmp, 'data');
  const git = await startFakeGitHost();
  const llm = await startStubLlm();
  // A probe that connects and leaves resets its socket: no error of the test's.
  const canary = net.createServer((socket) => socket.on('error', () => undefined).end('canary\n'));
  await new Promise<void>((resolve) => canary.listen(0, '127.0.0.1', resolve));
  const canaryPort = (canary.address() as net.AddressInfo).port;
  const port = await freePort();
  const serviceEnv = {
    DATA_DIR: dataDir,
    PORT: String(port),
    GIT_PROVIDER_HOSTS: '127.0.0.1',
    SANDBOX_STARTUP_TIMEOUT_MS: '180000',
    START_TASK_POLL_MS: '200',
    SANDBOX_MEMORY_LIMIT: '1536Mi',
    SANDBOX_PIDS_LIMIT: '512',
    ...env,
  };
  let outputs = '';
  let service = await startServiceProcess(serviceEnv);
  const sandboxes: { key: string; sandboxId: string }[] = [];

  const keyFor = async (user: string) => {
    const created = await runCli(['keys', 'create', '--user', user], { DATA_DIR: dataDir });
    expect(created.code, created.stderr).toBe(0);
    return created.stdout.trim().split('\n').pop()!;
  };
  const alice = {
    key: await keyFor('alice'),
    llmKey: `sk-alice-llm-${unique()}`,
    mcpKey: `mcp-alice-${unique()}`,
    secret: `alice-secret-${unique()}`,
    gitToken: `ghp_alice_${unique()}`,
  };
  const bob = { key: await keyFor('bob'), gitToken: `ghp_bob_${unique()}` };
  git.validTokens.add(alice.gitToken).add(bob.gitToken);
  const rig: Rig = {
    service,
    port,
    dataDir,
    git,
    llm,
    canary,
    canaryPort,
    since,
    alice,
    bob,
    output: () => outputs + service.stdout(),
    async start(key, body = {}) {
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
        sandboxId: task.sandbox_id,
        sessionKey: sandbox.session_api_key,
        agentUrl: sandbox.exposed_urls[0].url,
        conversationId: task.app_conversation_id,
        dir: path.join(dataDir, 'sandboxes', task.sandbox_id),
      };
    },
    shell: (sandbox, command, cwd) => new AgentServerClient(sandbox.agentUrl, sandbox.sessionKey).bash(command, cwd ? { cwd } : {}),
    async restart() {
      outputs += service.stdout();
      await service.stop();
      service = rig.service = await startServiceProcess(serviceEnv);
    },
    async close() {
      for (const { key, sandboxId } of sandboxes)
        await call(rig.service, 'DELETE', `/api/v1/sandboxes/${sandboxId}`, { key }).catch(() => undefined);
      // Sandboxes outlive the service: one a failed test left unreachable is stopped by its record.
      for (const { sandboxId } of sandboxes) {
        const record = path.join(dataDir, 'sandboxes', '.state', sandboxId, 'runtime.json');
        if (!fs.existsSync(record)) continue;
        try {
          process.kill(-(JSON.parse(fs.readFileSync(record, 'utf8')) as { pid: number }).pid, 'SIGKILL');
        } catch {
          // gone already
        }
      }
      await rig.service.stop();
      await git.close();
      await llm.close();
      canary.close();
      fs.rmSync(tmp, { recursive: true, force: true });
    },
  };
  for (const [user, gitToken] of [
    [alice, alice.gitToken],
    [bob, bob.gitToken],
  ] as const) {
    const body = {
      llm_model: 'openai/stub',
      llm_base_url: llm.url,
      llm_api_key: user === alice ? alice.llmKey : `sk-bob-${unique()}`,
      ...(user === alice ? { mcp_config: { shttp_servers: [{ url: 'http://127.0.0.1:9/mcp', api_key: alice.mcpKey }] } } : {}),
    };
    expect((await call(service, 'POST', '/api/settings', { key: user.key, body })).status).toBe(200);
    const tokens = await call(service, 'POST', '/api/add-git-providers', {
      key: user.key,
      body: { provider_tokens: { github: { token: gitToken, host: git.url } } },
    });
    expect(tokens.status, tokens.text).toBe(200);
  }
  expect(
    (await call(service, 'POST', '/api/secrets', { key: alice.key, body: { name: 'ALICE_SECRET', value: alice.secret } })).status,
  ).toBe(201);
  return rig;
}

/** The probe's answer, parsed, from text that must hold none of the given secrets. */
export function parseProbe(where: string, output: string, secrets: string[]): Record<string, { ok: boolean; value?: any; error?: string }> {
  for (const secret of secrets) expect(output, `${where} found a secret`).not.toContain(secret);
  return JSON.parse(output) as Record<string, { ok: boolean; value?: any; error?: string }>;
}

/** Every file under a folder, as text, but the given folders (the sandboxes' own). */
export function filesOutside(root: string, skip: string[]): { file: string; text: string }[] {
  return fs
    .readdirSync(root, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile())
    .map((e) => path.join(e.parentPath, e.name))
    .filter((file) => !skip.some((dir) => file === dir || file.startsWith(dir + path.sep)))
    .map((file) => ({ file, text: fs.readFileSync(file).toString('latin1') }));
}

/** Waits until the sandbox reads `status` (and answers it). */
export function sandboxReads(rig: Rig, key: string, sandboxId: string, status: string, timeoutMs = 60_000) {
  return eventually(
    `sandbox ${sandboxId} to read ${status}`,
    async () => {
      const sandbox = (await call(rig.service, 'GET', `/api/v1/sandboxes?id=${sandboxId}`, { key })).body[0];
      return sandbox?.status === status ? sandbox : null;
    },
    timeoutMs,
  );
}

/** Each path through a conversation's file route: 404, whatever the isolation (nothing outside the workspace). */
export async function expectFileRoutesRefused(rig: Rig, key: string, conversationId: string, files: string[]): Promise<void> {
  for (const file of files) {
    const read = await call(rig.service, 'GET', `/api/v1/app-conversations/${conversationId}/file?file_path=${encodeURIComponent(file)}`, {
      key,
    });
    expect(read.status, file).toBe(404);
  }
}

/** Where the probe's key search found each key: files, /proc/<pid>/environ or cmdline, its own environment, sealed values. */
export interface KeySearch {
  found: Record<string, string[]>;
  counts: {
    files: number;
    read: number;
    bytes: number;
    older: number;
    unreadable: number;
    truncated: number;
    processes: number;
    tokens: number;
  };
  /** "opened n of m" sealed values, "no sealed values", or why none could be opened. */
  sealed: string;
}

/**
 * The probe's key search run from the sandbox's own agent shell (its process and files, as the
 * agent's commands see them), for the given keys by name: every file under `roots` ("/", all it
 * sees, by default) changed since the rig started (older files cannot hold its keys: test/fixtures/tenant-probe.py),
 * read up to 16 MiB each, every process's environment and command line, sealed values.
 */
export async function searchKeys(rig: Rig, sandbox: Started, keys: Record<string, string>, roots = ['/']): Promise<KeySearch> {
  const client = new AgentServerClient(sandbox.agentUrl, sandbox.sessionKey);
  const probe = path.join(sandbox.dir, 'key-probe.py');
  await client.uploadFile(probe, PROBE);
  // The keys hex-encoded: the command line and the shell's records of it must not hold them.
  const hex = Object.fromEntries(Object.entries(keys).map(([name, key]) => [name, Buffer.from(key).toString('hex')]));
  // Timestamps a little coarse (the kernel's clock ticks): a second's margin.
  const search = { keys: hex, since: rig.since - 1, roots, max_file_bytes: 16 * 2 ** 20 };
  const targets = JSON.stringify({ only: ['key_search'], search });
  const run = await client.bash(`${AGENT_PYTHON} '${probe}' '${rig.dataDir}' '${sandbox.dir}' '${targets}'`, {
    cwd: sandbox.dir,
    timeoutSeconds: 240,
  });
  expect(run.exitCode, run.stderr).toBe(0);
  const answer = parseProbe('key search', run.stdout, Object.values(keys)).key_search!;
  expect(answer, answer.error).toMatchObject({ ok: true });
  return answer.value as KeySearch;
}
