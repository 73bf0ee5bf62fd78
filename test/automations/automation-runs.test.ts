// An automation run, end to end: the real automation service (PyPI, AUTOMATIONS=on with its
// PostgreSQL) dispatches a prompt automation; it starts a sandbox of the default spec (the real
// agent server, isolated) with the user's automation key, runs its preset there (setup.sh: uv
// makes a venv and installs the SDK from PyPI; main.py: the SDK's cloud workspace in local mode),
// whose agent gets its LLM through the gateway (the loopback fake behind it, the user's key never
// in the sandbox), runs a command, finishes, and reports back through this service. The run
// completes, its conversation is in the user's list, its sandbox is gone.
import crypto from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePorts } from '../../src/processes.js';
import { call, startTestApp, type TestApp } from '../helpers/app.js';
import { eventually } from '../helpers/eventually.js';
import { startToolCallLlm, type ToolCallLlm } from '../helpers/tool-call-llm.js';

const USER_KEY = `sk-user-${crypto.randomBytes(8).toString('hex')}`;
const FINAL = 'The automation said hello. Done.';
let app: TestApp;
let llm: ToolCallLlm;
let key: string;
const logLines: string[] = [];

const bearer = () => ({ headers: { authorization: `Bearer ${key}` } });

beforeAll(async () => {
  llm = await startToolCallLlm({ command: 'echo automation-hello', finalMessage: FINAL });
  const [port, databasePort] = await freePorts(2);
  app = await startTestApp(
    'automation-runs',
    {
      AUTOMATIONS: 'on',
      AUTOMATION_PORT: String(port),
      AUTOMATION_DB_PORT: String(databasePort),
      AUTOMATION_SERVICE_KEY: crypto.randomBytes(32).toString('hex'),
      AUTOMATION_DISPATCHER_INTERVAL_SECONDS: '2',
    },
    { logLines },
  );
  key = await app.keyFor('automation-runner');
  const saved = await call(app, 'POST', '/api/settings', {
    key,
    body: { llm_model: 'openai/automation-stub', llm_base_url: llm.url, llm_api_key: USER_KEY },
  });
  expect(saved.status, saved.text).toBe(200);
  await eventually(
    'the automation service to be ready',
    async () => (await call(app, 'GET', '/api/automation/health', bearer())).body?.status === 'ok',
    5 * 60_000,
  );
}, 6 * 60_000);

afterAll(async () => {
  await app?.stop();
  await llm?.close();
});

describe('an automation run', () => {
  it(
    'runs its prompt in a sandbox of its own, its agent through the gateway, and completes, its conversation listed',
    { timeout: 15 * 60_000 },
    async () => {
      const created = await call(app, 'POST', '/api/automation/v1/preset/prompt', {
        ...bearer(),
        body: { name: 'say hello', prompt: 'Run echo automation-hello, then finish.', trigger: { type: 'cron', schedule: '0 3 * * *' } },
      });
      expect(created.status, created.text).toBeLessThan(300);
      const id = created.body.id as string;
      const dispatched = await call(app, 'POST', `/api/automation/v1/${id}/dispatch`, bearer());
      expect(dispatched.status, dispatched.text).toBe(201);
      const run = await eventually(
        'the run to end',
        async () => {
          const runs = (await call(app, 'GET', `/api/automation/v1/${id}/runs`, bearer())).body;
          const found = (runs.runs ?? runs.items ?? runs)?.find?.((r: { id: string }) => r.id === dispatched.body.id);
          return found && !['PENDING', 'RUNNING', 'DISPATCHING'].includes(found.status) ? found : null;
        },
        12 * 60_000,
      ).catch((error: unknown) => {
        console.log(
          logLines
            .filter((l) => /automation|sandbox|gateway|error/i.test(l))
            .slice(-40)
            .join('\n'),
        );
        throw error;
      });
      if (run.status !== 'COMPLETED') {
        console.log(JSON.stringify(run, null, 2));
        console.log(
          logLines
            .filter((l) => /llm|gateway|users\/me|refus|warn|error/i.test(l))
            .slice(-60)
            .join('\n'),
        );
      }
      expect(run.status).toBe('COMPLETED');
      expect(llm.calls()).toBeGreaterThanOrEqual(2);
      // Its conversation is the user's, listed like any other.
      const listed = (await call(app, 'GET', '/api/v1/app-conversations/search?limit=20', bearer())).body.items as { id: string }[];
      expect(listed.map((c) => c.id)).toContain(String(run.conversation_id).replace(/-/g, ''));
    },
  );
});
