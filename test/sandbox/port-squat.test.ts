// A port-squat race at a sandbox's start and resume: something else answers on the port the
// agent server was given before the agent server binds it. Without isolation (the operator's
// single-user declaration) that is any process of the host: here the test itself, binding the
// port the moment runtime.json names it, answering every /alive and recording what it is sent.
// The service never trusts it (its listener is no process of the sandbox holding the key:
// src/sandbox/isolation/listener-proof.ts), so the start ends in ERROR and the squatter never sees the
// session key, the LLM key or the git token. Isolated, the host's end of the port is pasta's
// before the sandbox's command runs: there is no moment at which the squatter can bind it.
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { call, startTestApp, type TestApp } from '../helpers/app.js';
import { eventually } from '../helpers/eventually.js';
import { FAKE_AGENT_SPEC } from '../helpers/specs.js';

/** Listens on its port inside but never binds it (the agent server's start, slowed down). */
const SILENT_SPEC = { id: 'silent', command: ['sleep', '600'], working_dir: '{sandbox_dir}/workspace/project' };
const LLM_KEY = 'sk-alice-squat-test-key';
const apps: TestApp[] = [];
afterAll(async () => {
  for (const app of apps) await app.stop();
});

interface Squatter {
  bound: Promise<boolean>;
  seen: string[];
  close(): void;
}

/** Binds the sandbox's agent-server port as soon as runtime.json names it; records each request. */
function squatWhenNamed(stateDir: string): Squatter {
  const seen: string[] = [];
  const server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c));
    req.on('end', () => {
      seen.push(`${req.method} ${req.url} ${JSON.stringify(req.headers)} ${body}`);
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  const bound = (async () => {
    const record = await eventually('runtime.json', async () => {
      try {
        return JSON.parse(fs.readFileSync(path.join(stateDir, 'runtime.json'), 'utf8')) as { port: number };
      } catch {
        return null;
      }
    });
    return new Promise<boolean>((resolve) => {
      server.once('error', () => resolve(false));
      server.listen(record.port, '127.0.0.1', () => resolve(true));
    });
  })();
  return { bound, seen, close: () => server.close() };
}

async function aliceWith(app: TestApp): Promise<string> {
  const key = await app.keyFor('alice');
  await call(app, 'POST', '/api/settings', {
    key,
    body: { llm_model: 'openai/stub', llm_api_key: LLM_KEY, llm_base_url: 'http://127.0.0.1:9/v1' },
  });
  return key;
}

describe('a squatter on the agent server’s port', () => {
  it(
    'without isolation, answers every probe but is never trusted with a key, at a start and at a resume',
    { timeout: 60_000 },
    async () => {
      const app = await startTestApp(
        'squat-none',
        { SANDBOX_ISOLATION: 'none', SANDBOX_STARTUP_TIMEOUT_MS: '3000', START_TASK_POLL_MS: '100' },
        { specs: [SILENT_SPEC] },
      );
      apps.push(app);
      const key = await aliceWith(app);
      const started = await call(app, 'POST', '/api/v1/app-conversations', {
        key,
        body: { initial_message: { content: [{ type: 'text', text: 'hi' }] } },
      });
      expect(started.status).toBe(200);
      const sandboxId = await eventually(
        'the sandbox',
        async () => (await call(app, 'GET', `/api/v1/app-conversations/start-tasks?ids=${started.body.id}`, { key })).body[0].sandbox_id,
      );
      const stateDir = path.join(app.server.deps.config.dataDir, 'sandboxes', '.state', sandboxId);
      const first = squatWhenNamed(stateDir);
      expect(await first.bound).toBe(true);
      const task = await eventually('the start to end', async () => {
        const t = (await call(app, 'GET', `/api/v1/app-conversations/start-tasks?ids=${started.body.id}`, { key })).body[0];
        return t.status === 'ERROR' || t.status === 'READY' ? t : null;
      });
      expect(task.status).toBe('ERROR');
      const [sandbox] = (await call(app, 'GET', `/api/v1/sandboxes?id=${sandboxId}`, { key })).body;
      expect(sandbox.status_reason).toMatch(/Another process held the agent server’s port/);
      // The race was on (it was asked for /alive), and it got nothing that opens anything.
      expect(first.seen.some((r) => r.startsWith('GET /alive'))).toBe(true);
      for (const seen of first.seen) for (const secret of [sandbox.session_api_key, LLM_KEY]) expect(seen).not.toContain(secret);
      first.close();

      fs.rmSync(path.join(stateDir, 'runtime.json'), { force: true });
      expect((await call(app, 'POST', `/api/v1/sandboxes/${sandboxId}/resume`, { key })).status).toBe(200);
      const again = squatWhenNamed(stateDir);
      expect(await again.bound).toBe(true);
      const resumed = await eventually('the resume to fail', async () => {
        const s = (await call(app, 'GET', `/api/v1/sandboxes?id=${sandboxId}`, { key })).body[0];
        return s.status === 'ERROR' ? s : null;
      });
      expect(resumed.status_reason).toMatch(/Another process held the agent server’s port/);
      expect(again.seen.length).toBeGreaterThan(0);
      for (const seen of again.seen) for (const secret of [resumed.session_api_key, LLM_KEY]) expect(seen).not.toContain(secret);
      again.close();
    },
  );

  it('isolated, finds the host’s end of the port already held by the sandbox’s network', { timeout: 60_000 }, async () => {
    const app = await startTestApp('squat-isolated', { SANDBOX_STARTUP_TIMEOUT_MS: '20000' }, { specs: [FAKE_AGENT_SPEC] });
    apps.push(app);
    const key = await aliceWith(app);
    const created = await call(app, 'POST', '/api/v1/sandboxes', { key, body: {} });
    const squatter = squatWhenNamed(path.join(app.server.deps.config.dataDir, 'sandboxes', '.state', created.body.id));
    expect(await squatter.bound).toBe(false);
    await eventually(
      'the sandbox to run',
      async () => (await call(app, 'GET', `/api/v1/sandboxes?id=${created.body.id}`, { key })).body[0].status === 'RUNNING',
    );
    expect(squatter.seen).toEqual([]);
    squatter.close();
  });
});
