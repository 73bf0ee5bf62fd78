// The example Next.js app as an agent UI, end to end (issue 40): Chromium drives the built app
// against the real service, the real agent server (the default 1.58 spec, isolated) and a
// loopback LLM that asks to run one command and then finishes. In confirmation mode the page
// shows the action waiting; a rejection reaches the agent (which stops), pause and resume reach
// it (resumed, it asks again), an approval runs the command, whose output appears live with the
// final message; the changes view shows the file the command wrote, as a diff; tags the agent
// sets on its conversation (a PATCH on its agent server) show in it, and skills a user put in
// ~/.openhands/skills of the sandbox reach the next conversation's system prompt. The replica the
// page is connected to is restarted while a follow-up's run is under way (the agent's LLM calls
// and webhooks retried meanwhile): the page reconnects by itself and shows every stored event
// exactly once.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AgentServerClient } from '../../src/agent-server/client.js';
import { generateKeyText } from '../../src/crypto.js';
import { freePort } from '../../src/processes.js';
import { call, startTestApp, uniqueDbName, type TestApp } from '../helpers/app.js';
import { launchBrowser, type TestBrowser } from '../helpers/browser.js';
import { eventually } from '../helpers/eventually.js';
import { ensureExampleBuilt, startExampleApp, type RunningExample } from '../helpers/nextjs-example.js';
import { startToolCallLlm, type ToolCallLlm } from '../helpers/tool-call-llm.js';

const COMMAND = 'git init -q . 2>/dev/null; echo "live output $((6*7))" | tee notes.txt';
const OUTPUT = 'live output 42';
const FINAL = 'Wrote notes.txt. Done.';
const SKILL_MARKER = 'TEAM-NOTES-7f3a';

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'acp-nextjs-live-'));
const dbName = uniqueDbName('nextjs-live');
const env: Record<string, string> = {};
let llm: ToolCallLlm;
let service: TestApp;
let example: RunningExample;
let browser: TestBrowser;
let page: Page;
let key: string;

/** The service on its fixed port (the app points there), sharing the database and data folder across restarts. */
const startService = () => startTestApp('nextjs-live', env, { dbName });

beforeAll(async () => {
  llm = await startToolCallLlm({ command: COMMAND, finalMessage: FINAL, expectOutput: OUTPUT });
  await ensureExampleBuilt();
  const [servicePort, examplePort] = [await freePort(), await freePort()];
  Object.assign(env, {
    PORT: String(servicePort),
    DATA_DIR: path.join(tmp, 'data'),
    ENCRYPTION_KEY: generateKeyText(),
    SANDBOX_STARTUP_TIMEOUT_MS: '180000',
    START_TASK_POLL_MS: '200',
    TRUSTED_ORIGINS: `http://127.0.0.1:${examplePort}`,
  });
  service = await startService();
  key = await service.keyFor('live-user');
  const saved = await call(service, 'POST', '/api/settings', {
    key,
    body: { llm_model: 'openai/stub', llm_base_url: llm.url, llm_api_key: 'sk-live', confirmation_mode: true },
  });
  expect(saved.status).toBe(200);
  example = await startExampleApp(service.url, {}, examplePort);
  browser = await launchBrowser('nextjs-live');
  page = await browser.newPage({ viewport: { width: 1280, height: 1000 } });
}, 900_000);

afterAll(async () => {
  await browser?.close();
  await example?.stop();
  await service?.stop();
  await llm?.close();
  fs.rmSync(tmp, { recursive: true, force: true });
});

/** An attribute of each shown event, in order. */
const shown = (attribute: string) =>
  page.locator('#events li').evaluateAll((items, name) => items.map((li) => li.getAttribute(name)), attribute);
const kinds = () => shown('data-kind');
const waitFor = (selector: string, timeout = 240_000) => page.waitForSelector(selector, { timeout });

/** Approves each action the agent asks for until `selector` shows (a finish may ask too), one answer per question. */
async function approveUntil(selector: string, timeoutMs = 240_000) {
  const deadline = Date.now() + timeoutMs;
  while (!(await page.$(selector))) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${selector}`);
    if (await page.$('#confirmation')) {
      const shownBefore = await page.locator('#events li').count();
      await page.click('#approve');
      // Once the agent has the answer it acts (an event shows) or its status moves on: no second
      // answer to the same question. Not the status alone: a finish asking again right after can
      // come in the same render as the 'running' in between, which then never shows.
      await page.waitForFunction(
        `document.querySelectorAll('#events li').length > ${shownBefore} ||
         document.querySelector('#status:not([data-status="waiting_for_confirmation"])') !== null`,
        undefined,
        { timeout: 60_000 },
      );
    }
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

const finals = async () => (await page.$$(`#events li[data-kind="message"]:has-text("${FINAL}")`)).length;

describe('the example app as an agent UI, on the real agent server', () => {
  let conversationId: string;

  it(
    'asks before running the agent’s command: rejected, paused, resumed, approved, its output and final message live',
    { timeout: 600_000 },
    async () => {
      await page.goto(`${example.url}/signin`);
      await page.fill('#api_key', key);
      await Promise.all([page.waitForURL(/\/(conversations|settings)?$/), page.click('button:has-text("Sign in")')]);
      await page.goto(`${example.url}/conversations`);
      await page.fill('#message', 'Write the notes file.');
      await page.click('button:has-text("Start conversation")');
      await waitFor('#start-task[data-status="READY"]');
      conversationId = (await page.textContent('#start-task .notice.ok'))!.match(/Conversation (\S+) is ready/)![1]!;
      await Promise.all([page.waitForURL(`${example.url}/conversations/${conversationId}`), page.click('#start-task .notice.ok a')]);

      // Confirmation mode: the command waits for the user.
      await waitFor('#events li[data-kind="command"]');
      await waitFor('#confirmation');
      expect(await page.textContent('#events li[data-kind="command"]')).toContain('notes.txt');
      await browser.screenshot(page, '1-waiting-for-confirmation');
      // Rejected, the action is not run and the agent stops (idle) until told to go on.
      await page.click('#reject');
      await waitFor('#events li[data-kind="rejected"]');
      await waitFor('#status[data-status="idle"]', 60_000);
      await page.click('#pause');
      await waitFor('#status[data-status="paused"]', 60_000);
      // Resumed, it asks again (its LLM saw the rejection, not the output): approved this time.
      await page.click('#resume');
      await eventually('the second request', async () => (await kinds()).filter((k) => k === 'command').length === 2, 120_000);
      await approveUntil(`#events li[data-kind="message"]:has-text("${FINAL}")`);
      await waitFor(`#events li[data-kind="output"]:has-text("${OUTPUT}")`);
      expect(await page.textContent('#events')).not.toContain('sk-live');
      await browser.screenshot(page, '2-approved-and-finished');
    },
  );

  it('shows the tags the agent sets on its conversation (agent server PATCH) in the conversation', { timeout: 120_000 }, async () => {
    const [conversation] = (await call(service, 'GET', `/api/v1/app-conversations?ids=${conversationId}`, { key })).body;
    const agentUrl = String(conversation.conversation_url).replace(/\/api\/conversations\/.*$/, '');
    const patched = await fetch(`${agentUrl}/api/conversations/${conversationId}`, {
      method: 'PATCH',
      headers: { 'x-session-api-key': conversation.session_api_key, 'content-type': 'application/json' },
      body: JSON.stringify({ tags: { team: 'frontend', ticket: 'ui42' } }),
    });
    expect(patched.status).toBe(200);
    const tagged = await eventually(
      'the agent-set tags in the conversation',
      async () => {
        const [c] = (await call(service, 'GET', `/api/v1/app-conversations?ids=${conversationId}`, { key })).body;
        return c?.tags?.team === 'frontend' ? c : null;
      },
      60_000,
    );
    expect(tagged.tags).toMatchObject({ team: 'frontend', ticket: 'ui42' });
  });

  it('shows the changes the command made, as a diff', { timeout: 120_000 }, async () => {
    await page.click('#show-changes');
    await waitFor('#changes details', 60_000);
    expect(await page.textContent('#changes')).toContain('notes.txt');
    expect(await page.textContent('#changes .diff')).toContain(`+ ${OUTPUT}`);
  });

  it(
    "loads the user's own skills (~/.openhands/skills in the sandbox) into the next conversation's system prompt",
    { timeout: 180_000 },
    async () => {
      const [conversation] = (await call(service, 'GET', `/api/v1/app-conversations?ids=${conversationId}`, { key })).body;
      const agentUrl = String(conversation.conversation_url).replace(/\/api\/conversations\/.*$/, '');
      // HOME of a process sandbox is its folder (src/sandbox/process/process-command.ts).
      const home = path.join(env.DATA_DIR!, 'sandboxes', conversation.sandbox_id);
      const skill = ['---', 'name: team-notes', 'type: repo', '---', `Sign every commit for the frontend team (${SKILL_MARKER}).`, ''].join(
        '\n',
      );
      await new AgentServerClient(agentUrl, conversation.session_api_key, 10_000).uploadFile(
        `${home}/.openhands/skills/team-notes.md`,
        skill,
      );
      const started = await call(service, 'POST', '/api/v1/app-conversations', {
        key,
        body: { sandbox_id: conversation.sandbox_id, initial_message: { content: [{ type: 'text', text: 'Anything.' }] } },
      });
      expect(started.status).toBe(200);
      await eventually(
        'the next conversation’s first LLM call',
        async () => llm.systemPrompts().some((p) => p.includes(SKILL_MARKER)),
        120_000,
      );
    },
  );

  it('reconnects by itself when its replica restarts mid-run, missing no event and showing none twice', { timeout: 600_000 }, async () => {
    const before = await finals();
    await page.fill('#message', 'Once more, please.');
    await page.click('button:has-text("Send")');
    await waitFor('#events li[data-kind="message"]:has-text("Once more, please.")');
    // The run goes on while its replica is away: the agent's LLM calls and webhooks are retried.
    await service.stop({ keepSandboxes: true });
    await new Promise((resolve) => setTimeout(resolve, 1500));
    service = await startService();
    await approveUntil(`#events li[data-kind="message"]:has-text("${FINAL}") >> nth=${before}`);
    // What the page shows is what the service stored, each once, in order (the finish tool's echo of its message aside).
    const visible = new Set(['MessageEvent', 'ActionEvent', 'ObservationEvent', 'UserRejectObservation', 'AgentErrorEvent']);
    const stored = async () => {
      const found = (await call(service, 'GET', `/api/v1/conversation/${conversationId}/events/search?limit=100`, { key })).body;
      return ((found?.items ?? []) as { id: string; kind: string; tool_name?: string }[])
        .filter((e) => visible.has(e.kind) && !(e.kind === 'ObservationEvent' && e.tool_name === 'finish'))
        .map((e) => e.id);
    };
    await eventually(
      'the page to show every stored event',
      async () => JSON.stringify(await shown('data-event-id')) === JSON.stringify(await stored()),
      30_000,
    ).catch(async (error: Error) => {
      throw new Error(`${error.message}: shown ${JSON.stringify(await shown('data-event-id'))}, stored ${JSON.stringify(await stored())}`);
    });
    const ids = await shown('data-event-id');
    expect(new Set(ids).size).toBe(ids.length);
    expect(await finals()).toBe(before + 1);
    await browser.screenshot(page, '3-after-restart');
  });
});
