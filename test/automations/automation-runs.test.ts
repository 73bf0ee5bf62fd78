// An automation run, end to end: the real automation service (PyPI, AUTOMATIONS=on with its
// PostgreSQL) dispatches a prompt automation; it starts a sandbox of the default spec (the real
// agent server, isolated) with the user's automation key, runs its preset there (setup.sh: uv
// makes a venv and installs the SDK from PyPI; main.py: the SDK's cloud workspace in local mode),
// whose agent gets its LLM through the gateway (the loopback fake behind it, the user's key never
// in the sandbox), runs a command, finishes, and reports back through this service. A run made
// by a one-minute schedule set on Agent Canvas's Automations page (Chromium, Canvas served here)
// and one made by a provider's signed event complete, their conversations in the user's list,
// their sandboxes gone, the user's signed lifecycle webhook told, Canvas showing the run and
// opening its conversation; a run past its user's budget fails with budget_reached.
import crypto from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { userAlias } from '../../src/automations/automation-access.js';
import { freePorts } from '../../src/processes.js';
import { agentCanvasBuild } from '../helpers/agent-canvas.js';
import { call, startTestApp, type TestApp } from '../helpers/app.js';
import { launchBrowser, type TestBrowser } from '../helpers/browser.js';
import { eventually } from '../helpers/eventually.js';
import { deliverGithubEvent, githubPush, onGithubPush } from '../helpers/github-event.js';
import { startToolCallLlm, type ToolCallLlm } from '../helpers/tool-call-llm.js';
import { startWebhookReceiver, type WebhookReceiver } from '../helpers/webhook-receiver.js';

const WEBHOOK_SECRET = crypto.randomBytes(16).toString('hex');
const USER_KEY = `sk-user-${crypto.randomBytes(8).toString('hex')}`;
const FINAL = 'The automation said hello. Done.';
let app: TestApp;
let llm: ToolCallLlm;
let browser: TestBrowser;
let receiver: WebhookReceiver;
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
      AUTOMATION_SCHEDULER_INTERVAL_SECONDS: '5',
      AUTOMATION_WEBHOOK_SECRET: WEBHOOK_SECRET,
      WEB_UI: 'canvas',
      AGENT_CANVAS_DIR: agentCanvasBuild(),
      WEBHOOK_HOSTS: '127.0.0.1', // the user's lifecycle webhook receiver, on loopback: only an operator can allow that
    },
    { logLines },
  );
  browser = await launchBrowser('automation-runs');
  receiver = await startWebhookReceiver();
  key = await app.keyFor('automation-runner');
  const saved = await call(app, 'POST', '/api/settings', {
    key,
    body: { llm_model: 'openai/automation-stub', llm_base_url: llm.url, llm_api_key: USER_KEY },
  });
  expect(saved.status, saved.text).toBe(200);
  expect((await call(app, 'POST', '/api/v1/settings', { key, body: { email: 'runner@example.com' } })).status).toBe(200);
  await eventually(
    'the automation service to be ready',
    async () => (await call(app, 'GET', '/api/automation/health', bearer())).body?.status === 'ok',
    5 * 60_000,
  );
}, 6 * 60_000);

afterAll(async () => {
  await browser?.close();
  await app?.stop();
  await receiver?.close();
  await llm?.close();
});

/** The run of `automationId` (the first, or `runId`) once it has ended; asked every 2 s (the user's rate limit). */
async function endedRun(automationId: string, runId?: string) {
  let last = '';
  for (const deadline = Date.now() + 12 * 60_000; Date.now() < deadline; await new Promise((r) => setTimeout(r, 2_000))) {
    const answer = await call(app, 'GET', `/api/automation/v1/${automationId}/runs`, bearer());
    last = `${answer.status} ${answer.text.slice(0, 300)}`;
    const all = (answer.body?.runs ?? []) as { id: string; status: string }[]; // newest first
    const found = runId ? all.find((r) => r.id === runId) : all.at(-1);
    if (found && !['PENDING', 'RUNNING', 'DISPATCHING'].includes(found.status)) return found as Record<string, any>;
  }
  console.log(
    logLines
      .filter((l) => /automation|sandbox|gateway|error/i.test(l))
      .slice(-40)
      .join('\n'),
  );
  throw new Error(`the run did not end; last answer: ${last}`);
}

/** Our id of a conversation the automation service names by its UUID. */
const ours = (uuid: unknown) => String(uuid).replace(/-/g, '');

describe('an automation run', () => {
  it(
    "set on Canvas's Automations page to run every minute: runs its prompt in a sandbox of its own, its agent through the gateway, completes; Canvas shows the run and opens its conversation",
    { timeout: 15 * 60_000 },
    async () => {
      // The user's lifecycle webhook: runs' conversations and sandboxes are told like any other.
      const endpoint = await call(app, 'POST', '/api/v1/webhook-endpoints', { key, body: { url: `${receiver.url}/in` } });
      expect(endpoint.status, endpoint.text).toBe(201);
      receiver.setSecrets(endpoint.body.secret);
      const page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
      page.setDefaultTimeout(30_000);
      const refused: string[] = []; // what the service refused Canvas, which Canvas shows as an error
      page.on('response', (r) => {
        if (r.url().startsWith(`${app.url}/api/`) && r.status() >= 400) refused.push(`${r.status()} ${r.request().method()} ${r.url()}`);
      });
      await page.goto(`${app.url}/signin`);
      await page.fill('#api-key', key);
      await Promise.all([page.waitForURL(`${app.url}/`), page.click('button[type=submit]')]);
      // Canvas's form for a custom automation (its setup route; on a cloud backend its
      // templates page lists none, and "Create Automation" opens a conversation instead).
      await page.goto(`${app.url}/automations/new/custom-automation`);
      await page.getByRole('button', { name: 'Continue' }).click(); // "Before you start": GitHub is optional
      await page.getByTestId('setup-field-schedule').fill('* * * * *');
      await page.getByTestId('setup-field-name').fill('say hello');
      await page.getByTestId('setup-field-prompt').fill('Run echo automation-hello, then finish.');
      await page.getByTestId('setup-continue-button').click(); // validated by the automation service, then reviewed
      await page.getByRole('button', { name: 'Confirm and create' }).click();
      await page.waitForURL(/\/automations\/[0-9a-f-]{36}$/);
      const id = new URL(page.url()).pathname.split('/').pop()!;
      await page.getByText('Run echo automation-hello, then finish.').first().waitFor();
      await page.getByText('runner@example.com').waitFor(); // whom it runs as: its user_id looked up as a member
      const made = (await call(app, 'GET', `/api/automation/v1/${id}`, bearer())).body;
      expect(made).toMatchObject({ name: 'say hello', enabled: true, trigger: { type: 'cron', schedule: '* * * * *' } });
      // The user closes the tab while it runs: Canvas's polling and this test's share the user's rate limit.
      await page.goto('about:blank');
      await eventually(
        'the schedule to make a run, and dispatch it',
        async () => {
          await new Promise((r) => setTimeout(r, 1_000)); // within the user's rate limit
          const runs = (await call(app, 'GET', `/api/automation/v1/${id}/runs`, bearer())).body?.runs ?? [];
          return runs.some((r: { status: string }) => r.status !== 'PENDING');
        },
        4 * 60_000,
      );
      // Once is enough here: no more runs of it (a disabled automation's runs not yet dispatched are skipped).
      expect((await call(app, 'PATCH', `/api/automation/v1/${id}`, { ...bearer(), body: { enabled: false } })).status).toBe(200);
      const run = await endedRun(id);
      if (run.status !== 'COMPLETED') console.log(JSON.stringify(run, null, 2));
      expect(run.status).toBe('COMPLETED');
      expect(run.trigger_source).not.toBe('manual');
      // The agent's calls reached the LLM with the user's key, swapped in by the gateway: the
      // sandbox only ever held the gateway's token for it.
      expect(llm.calls()).toBeGreaterThanOrEqual(2);
      expect(new Set(llm.authorizations())).toEqual(new Set([`Bearer ${USER_KEY}`]));
      // Its conversation is the user's, listed like any other, its cost counted.
      const search = await call(app, 'GET', '/api/v1/app-conversations/search?limit=20', bearer());
      expect(search.status, search.text).toBe(200);
      expect((search.body.items as { id: string }[]).map((c) => c.id)).toContain(ours(run.conversation_id));
      const [conversation] = (await call(app, 'GET', `/api/v1/app-conversations?ids=${ours(run.conversation_id)}`, bearer())).body;
      expect(conversation.metrics.accumulated_cost).toBeGreaterThan(0);
      // Its sandbox is gone with the run.
      await eventually(
        "the run's sandbox to be gone",
        async () => {
          await new Promise((r) => setTimeout(r, 1_000)); // within the user's rate limit
          const answer = (await call(app, 'GET', `/api/v1/sandboxes?id=${run.sandbox_id}`, bearer())).body;
          return Array.isArray(answer) && (!answer[0] || answer[0].status === 'MISSING');
        },
        120_000,
      );
      // Its signed lifecycle events reached the user's endpoint: the agent finished, the sandbox went.
      await eventually(
        "the run's lifecycle events at the user's endpoint",
        async () => {
          const told = receiver.uniqueEvents();
          const finished = told.some(
            (e) =>
              e.type === 'conversation.execution_status_changed' &&
              e.data.id === ours(run.conversation_id) &&
              e.data.execution_status === 'finished',
          );
          return finished && told.some((e) => e.type === 'sandbox.deleted' && e.data.id === run.sandbox_id);
        },
        60_000,
      );
      expect(receiver.receipts.every((r) => r.verified)).toBe(true);
      // Canvas: the automation's activity log shows the run succeeded with the agent's last
      // word, and opens its conversation (named by its UUID) from the history kept here.
      await page.goto(`${app.url}/automations/${id}`);
      await page.getByTestId('run-status-icon-completed').waitFor();
      await page.getByTestId('automation-activity-log').getByText(FINAL).waitFor();
      // (Canvas also toasts a generic error on opening any conversation whose sandbox is gone,
      // with no request of it refused: its own doing, not asserted.)
      await page.locator(`a[href="/conversations/${run.conversation_id}"]`).click();
      await page.getByText('Ran echo automation-hello').waitFor();
      await page.getByText(FINAL).first().waitFor();
      // …and lists it with the user's conversations, under the automation's name.
      await page.getByTestId('conversation-card-title').filter({ hasText: 'say hello' }).first().waitFor();
      await browser.screenshot(page, 'run-conversation');
      expect(refused).toEqual([]);
    },
  );

  it("on a provider's event: the signed event through this service makes a run that completes", { timeout: 15 * 60_000 }, async () => {
    const created = await call(app, 'POST', '/api/automation/v1/preset/prompt', {
      ...bearer(),
      body: {
        name: 'on push',
        prompt: 'Run echo automation-hello, then finish.',
        trigger: onGithubPush('acme/*'),
      },
    });
    expect(created.status, created.text).toBeLessThan(300);
    const push = githubPush('acme/widgets');
    const delivered = await deliverGithubEvent(app.url, userAlias('automation-runner'), push, { secret: WEBHOOK_SECRET });
    expect(delivered.status).toBe(200);
    const answer = (await delivered.json()) as { matched: number; runs_created: string[] };
    expect(answer, JSON.stringify(answer)).toMatchObject({ matched: 1, runs_created: [expect.any(String)] });
    const { runs_created } = answer;
    const run = await endedRun(created.body.id, runs_created[0]);
    if (run.status !== 'COMPLETED') console.log(JSON.stringify(run, null, 2));
    expect(run.status).toBe('COMPLETED');
    const [conversation] = (await call(app, 'GET', `/api/v1/app-conversations?ids=${ours(run.conversation_id)}`, bearer())).body;
    expect(conversation.metrics.accumulated_cost).toBeGreaterThan(0);
  });

  it(
    "past its user's budget: the gateway refuses the next call, the run fails and its conversation stops with budget_reached",
    { timeout: 15 * 60_000 },
    async () => {
      // The first call is under it (nothing spent yet); the next is past it.
      const saved = await call(app, 'POST', '/api/settings', { key, body: { max_budget_per_task: 0.00001 } });
      expect(saved.status, saved.text).toBe(200);
      const created = await call(app, 'POST', '/api/automation/v1/preset/prompt', {
        ...bearer(),
        body: { name: 'over budget', prompt: 'Run echo automation-hello, then finish.', trigger: { type: 'cron', schedule: '0 3 * * *' } },
      });
      const dispatched = await call(app, 'POST', `/api/automation/v1/${created.body.id}/dispatch`, bearer());
      expect(dispatched.status, dispatched.text).toBe(201);
      const run = await endedRun(created.body.id, dispatched.body.id);
      if (run.status !== 'FAILED' || !JSON.stringify(run.error_detail).includes('budget_reached')) {
        // What went otherwise: the run as the automation service tells it (its status_detail names the failing step), the conversation, the calls.
        console.log(JSON.stringify(run, null, 2));
        console.log(JSON.stringify((await call(app, 'GET', `/api/v1/app-conversations?ids=${ours(run.conversation_id)}`, bearer())).body));
        console.log(
          logLines
            .filter((l) => /llm\/v1|budget|sandboxes|status":(4|5)\d\d/i.test(l))
            .slice(-60)
            .join('\n'),
        );
      }
      // Upstream's script reports an agent that was paused as done: the report, through this
      // service, says the budget cut it short; no call past the budget reached the LLM.
      expect(run.status).toBe('FAILED');
      expect(JSON.stringify(run.error_detail)).toMatch(/budget_reached/);
      const ledger = await app
        .rawCollection('llm_calls')
        .find({ conversationId: ours(run.conversation_id) })
        .toArray();
      expect(ledger.map((c) => c.outcome)).toEqual(['ok']);
      const [conversation] = (await call(app, 'GET', `/api/v1/app-conversations?ids=${ours(run.conversation_id)}`, bearer())).body;
      expect(conversation.execution_status_reason).toBe('budget_reached');
    },
  );
});
