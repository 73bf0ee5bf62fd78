// The example Next.js app (examples/nextjs), built with `next build` and run with `next start`,
// driven by headless chromium against a real service whose sandboxes run the fake agent server:
// sign-in through the app's page (a session on the service, kept in an HttpOnly cookie),
// settings saved and read back, a git provider, a secret, a conversation whose start task is
// followed live to READY, its sandbox paused, resumed and deleted, and sign-out, after which
// the session opens nothing. Screenshots of each step land in test-results/screenshots/.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { StartTaskStatusSchema } from '../../contract/app-conversations.schema.js';
import { freePort } from '../../src/processes.js';
import { call, startTestApp, type TestApp } from '../helpers/app.js';
import { launchBrowser, type TestBrowser } from '../helpers/browser.js';
import { startFakeGitProvider, type FakeGitProvider } from '../helpers/fake-git-provider.js';
import { ensureExampleBuilt, startExampleApp, type RunningExample } from '../helpers/nextjs-example.js';
import { FAKE_AGENT_SPEC, writeSpecsFile } from '../helpers/specs.js';

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'acp-nextjs-'));
let provider: FakeGitProvider;
let service: TestApp;
let example: RunningExample;
let browser: TestBrowser;
let page: Page;
let key: string;
let conversationId: string;

const LLM_KEY = 'sk-browser-test-llm-key';
const MCP_KEY = 'mcp-browser-test-key';
const SECRET_VALUE = 'npm_browser_test_secret';

beforeAll(async () => {
  provider = await startFakeGitProvider();
  provider.validTokens.add('ghp_browser');
  const built = await ensureExampleBuilt();
  console.log(`example app: ${JSON.stringify(built)}`);
  const examplePort = await freePort();
  service = await startTestApp('nextjs-example', {
    // The fake agent server reports its run by webhook, as the real one does, for the live page.
    SANDBOX_SPECS_FILE: writeSpecsFile(tmp, [{ ...FAKE_AGENT_SPEC, initial_env: { FAKE_WEBHOOKS: '1' } }]),
    SANDBOX_MAX_RUNNING_PER_USER: '1',
    START_TASK_POLL_MS: '100',
    GITHUB_API_URL: provider.url,
    TRUSTED_ORIGINS: `http://127.0.0.1:${examplePort}`,
  });
  key = await service.keyFor('browser-user');
  example = await startExampleApp(service.url, {}, examplePort);
  browser = await launchBrowser('nextjs-example');
  page = await browser.newPage();
}, 600_000);

afterAll(async () => {
  await browser?.close();
  await example?.stop();
  await service?.stop();
  await provider?.close();
  fs.rmSync(tmp, { recursive: true, force: true });
});

const open = async (pathname: string) => {
  await page.goto(`${example.url}${pathname}`);
  await page.waitForLoadState('networkidle');
};
const notice = (text: string) => page.waitForSelector(`.notice:has-text("${text}")`, { timeout: 20_000 });
const statusOf = (sandboxId: string) => page.locator(`tr[data-sandbox="${sandboxId}"] td.status`).getAttribute('data-status');

const sessionCookie = async () => (await page.context().cookies(example.url)).find((c) => c.name === 'acp_session');
/** The service's view of a session id: 200 with its user while it lives, 401 after. */
const sessionOnService = (id: string) => call(service, 'GET', '/api/auth/session', { headers: { cookie: `acp_session=${id}` } });

describe('example Next.js app in a real browser', () => {
  let sessionId: string;

  it('signs in through its sign-in page, keeping the session in an HttpOnly cookie', async () => {
    await page.goto(`${example.url}/settings`);
    expect(page.url()).toBe(`${example.url}/signin?next=%2Fsettings`);
    await page.fill('#api_key', 'sk-oh-not-a-key-of-this-service');
    await page.click('button:has-text("Sign in")');
    await notice('This API key is unknown or revoked.');
    expect(await sessionCookie()).toBeUndefined();

    await page.fill('#api_key', key);
    await page.click('button:has-text("Sign in")');
    await page.waitForURL(`${example.url}/settings`);
    await page.waitForSelector('header button:has-text("Sign out")');
    const cookie = await sessionCookie();
    expect(cookie).toMatchObject({ httpOnly: true, sameSite: 'Strict', path: '/' });
    expect(cookie!.expires).toBeGreaterThan(Date.now() / 1000);
    sessionId = cookie!.value;
    // The app's cookie holds the service's session (not the key), live for this key's user.
    expect(sessionId).not.toContain(key);
    const onService = await sessionOnService(sessionId);
    expect(onService.status).toBe(200);
    expect(onService.body.user_id).toBe('browser-user');
    await browser.screenshot(page, '0-signed-in');
  });

  it('saves settings and reads them back, with the keys write-only', async () => {
    await open('/settings');
    expect(await page.textContent('#llm_api_key_state')).toBe('No key stored.');
    await page.fill('#llm_model', 'openai/stub');
    await page.fill('#llm_base_url', 'http://127.0.0.1:9/v1');
    await page.fill('#llm_api_key', LLM_KEY);
    await page.fill('#git_user_name', 'Ada Lovelace');
    await page.fill('#git_user_email', 'ada@example.com');
    const mcp = {
      stdio_servers: [{ name: 'fs', command: 'npx', args: ['-y', 'server-fs'] }],
      shttp_servers: [{ url: 'https://mcp.example.com/mcp', api_key: MCP_KEY }],
    };
    await page.fill('#mcp_config', JSON.stringify(mcp));
    await page.click('button:has-text("Save settings")');
    await notice('Settings saved.');

    await open('/settings');
    expect(await page.inputValue('#llm_model')).toBe('openai/stub');
    expect(await page.inputValue('#git_user_name')).toBe('Ada Lovelace');
    expect(await page.inputValue('#git_user_email')).toBe('ada@example.com');
    expect(await page.inputValue('#llm_api_key')).toBe('');
    expect(await page.textContent('#llm_api_key_state')).toBe('A key is stored. It is never shown again.');
    const shownMcp = JSON.parse(await page.inputValue('#mcp_config'));
    expect(shownMcp.stdio_servers).toEqual([{ name: 'fs', command: 'npx', args: ['-y', 'server-fs'], env: {} }]);
    expect(shownMcp.shttp_servers).toEqual([{ url: 'https://mcp.example.com/mcp', api_key: '**********', timeout: 60 }]);
    const html = await page.content();
    expect(html).not.toContain(LLM_KEY);
    expect(html).not.toContain(MCP_KEY);
    await browser.screenshot(page, '1-settings');

    // Saved again as shown (masked MCP key, empty LLM key field): the stored secrets stay.
    await page.click('button:has-text("Save settings")');
    await notice('Settings saved.');
    const stored = (await call(service, 'GET', '/api/settings', { key })).body;
    expect(stored).toMatchObject({ llm_model: 'openai/stub', llm_api_key_set: true, git_user_email: 'ada@example.com' });
    const [storedKey] = await service.rawCollection('settings').find({}).toArray();
    expect(JSON.stringify(storedKey)).not.toContain(LLM_KEY);
  });

  it('shows validation errors next to the field they are about', async () => {
    await open('/settings');
    await page.fill('#mcp_config', JSON.stringify({ stdio_servers: [{ name: 'bad name', command: 'npx' }] }));
    await page.click('button:has-text("Save settings")');
    const fieldError = await page.waitForSelector('.field-error[data-field="mcp_config.stdio_servers.0.name"]');
    expect(await fieldError.textContent()).toBe(
      'stdio_servers.0.name: Server name can only contain letters, numbers, hyphens, and underscores',
    );
    // The message sits right under the field it is about, and what was typed is kept.
    expect(await fieldError.evaluate((element) => element.previousElementSibling?.id)).toBe('mcp_config');
    expect(await page.inputValue('#mcp_config')).toContain('bad name');
    await notice('Please correct the marked fields.');
    await browser.screenshot(page, '2-settings-validation');
    expect((await call(service, 'GET', '/api/settings', { key })).body.mcp_config.stdio_servers).toHaveLength(1);
  });

  it('connects a git provider and stores a secret', async () => {
    await open('/git-providers');
    await page.fill('#token', 'ghp_wrong');
    await page.click('button:has-text("Connect")');
    await notice('Invalid token. Please make sure it is a valid github token.');
    await page.fill('#token', 'ghp_browser');
    await page.click('button:has-text("Connect")');
    await notice('github connected.');
    await page.waitForSelector('#providers td:has-text("github")');
    await browser.screenshot(page, '3-git-providers');

    await open('/secrets');
    await page.fill('#name', 'NPM_TOKEN');
    await page.fill('#value', SECRET_VALUE);
    await page.fill('#description', 'registry');
    await page.click('button:has-text("Add secret")');
    await notice('Secret NPM_TOKEN stored.');
    await page.waitForSelector('#secrets td:has-text("NPM_TOKEN")');
    expect(await page.content()).not.toContain(SECRET_VALUE);
    await browser.screenshot(page, '4-secrets');
  });

  let sandboxId: string;

  it('starts a conversation and follows its start task live to READY', async () => {
    await open('/conversations');
    const subscriptionUrls: string[] = [];
    page.on('request', (request) => {
      if (request.url().includes('watchStartTask')) subscriptionUrls.push(request.url());
    });
    // Record every status the page shows, as it shows it.
    // (Browser code as strings: this repository type-checks without the DOM library.)
    await page.evaluate(`
      window.seenStatuses = [];
      new MutationObserver(() => {
        const status = document.querySelector('#start-task')?.getAttribute('data-status');
        if (status && window.seenStatuses.at(-1) !== status) window.seenStatuses.push(status);
      }).observe(document.body, { subtree: true, childList: true, attributes: true, attributeFilter: ['data-status'] });
    `);
    await page.fill('#message', 'Hello from the browser');
    await page.click('button:has-text("Start conversation")');
    await page.waitForSelector('#start-task[data-status="READY"]', { timeout: 60_000 });
    const seen = (await page.evaluate('window.seenStatuses')) as string[];
    expect(seen[0]).toBe('WORKING');
    expect(seen.at(-1)).toBe('READY');
    expect(seen).toContain('WAITING_FOR_SANDBOX');
    expect(seen).toContain('STARTING_CONVERSATION');
    const order: string[] = StartTaskStatusSchema.options;
    expect(seen.map((s) => order.indexOf(s))).toEqual([...seen.map((s) => order.indexOf(s))].sort((a, b) => a - b));
    // The subscription ran in the browser, against this app's origin (forwarded to the service).
    expect(subscriptionUrls.length).toBeGreaterThan(0);
    expect(subscriptionUrls.every((url) => url.startsWith(`${example.url}/trpc/appConversations.watchStartTask`))).toBe(true);

    conversationId = (await page.textContent('#start-task .notice.ok'))!.match(/Conversation (\S+) is ready/)![1]!;
    await page.waitForSelector(`tr[data-conversation="${conversationId}"]`);
    await browser.screenshot(page, '5-conversation-ready');
    const [conversation] = (await call(service, 'GET', `/api/v1/app-conversations?ids=${conversationId}`, { key })).body;
    expect(conversation).toMatchObject({ id: conversationId, sandbox_status: 'RUNNING', llm_model: 'openai/stub' });
    sandboxId = conversation.sandbox_id;
  });

  it('follows the conversation live on its page: its events, a follow-up, pause and resume, its changes', async () => {
    await open('/conversations');
    await Promise.all([
      page.waitForURL(`${example.url}/conversations/${conversationId}`),
      page.click(`tr[data-conversation="${conversationId}"] a`),
    ]);
    // The run's events arrive by the subscription (the agent's answer came by webhook after the start).
    await page.waitForSelector('#events li[data-kind="message"]:has-text("Hello from the fake agent.")');
    await page.fill('#message', 'And add a test');
    await page.click('button:has-text("Send")');
    await page.waitForSelector('#events li[data-kind="message"]:has-text("And add a test")');
    const messages = await page.$$eval('#events li[data-kind="message"]', (items) => items.map((li) => li.textContent));
    expect(messages.filter((text) => text?.includes('And add a test'))).toHaveLength(1);
    expect(messages.filter((text) => text?.includes('Hello from the fake agent.'))).toHaveLength(1);
    await browser.screenshot(page, '5b-conversation-live');

    // Pause and resume reach the agent server (the fake records them).
    const agentControls = async () => {
      const [conversation] = (await call(service, 'GET', `/api/v1/app-conversations?ids=${conversationId}`, { key })).body;
      const agentUrl = conversation.conversation_url.replace(/\/api\/conversations\/.*$/, '');
      const [info] = (await (
        await fetch(`${agentUrl}/api/conversations?ids=${conversationId}`, {
          headers: { 'x-session-api-key': conversation.session_api_key },
        })
      ).json()) as { controls?: { control: string }[] }[];
      return (info?.controls ?? []).map((c) => c.control);
    };
    await page.click('#pause');
    await expect.poll(agentControls).toEqual(['pause']);
    await page.click('#resume');
    await expect.poll(agentControls).toEqual(['pause', 'run']);
    // A workspace without a repository has no changes to show.
    await page.click('#show-changes');
    await page.waitForSelector('#changes:has-text("No changes.")');
  });

  it("pauses and resumes the conversation's sandbox, and shows the rate limit's retry hint", async () => {
    await open('/sandboxes');
    expect(await statusOf(sandboxId)).toBe('RUNNING');
    await page.click(`tr[data-sandbox="${sandboxId}"] button:has-text("Pause")`);
    await page.waitForSelector(`tr[data-sandbox="${sandboxId}"] td.status[data-status="PAUSED"]`);
    expect((await call(service, 'GET', `/api/v1/sandboxes?id=${sandboxId}`, { key })).body[0].status).toBe('PAUSED');
    await browser.screenshot(page, '6-sandbox-paused');

    await page.click(`tr[data-sandbox="${sandboxId}"] button:has-text("Resume")`);
    await page.waitForSelector(`tr[data-sandbox="${sandboxId}"] td.status[data-status="RUNNING"]`, { timeout: 30_000 });
    expect((await call(service, 'GET', `/api/v1/sandboxes?id=${sandboxId}`, { key })).body[0].status).toBe('RUNNING');
    await browser.screenshot(page, '7-sandbox-resumed');

    // One running sandbox is this user's limit: a second start is a 429 with its retry hint.
    await page.click('button:has-text("Start a sandbox")');
    await notice('Sandbox limit reached (1 running). Try again in 30 s.');
    await browser.screenshot(page, '8-rate-limited');

    await page.click(`tr[data-sandbox="${sandboxId}"] button:has-text("Delete")`);
    await page.waitForSelector(`tr[data-sandbox="${sandboxId}"]`, { state: 'detached' });
    expect((await call(service, 'GET', `/api/v1/sandboxes?id=${sandboxId}`, { key })).body).toEqual([null]);
  });

  it('never lets the API key or the session id reach browser JavaScript', async () => {
    await open('/conversations');
    const visible = await page.evaluate(`({
      cookies: document.cookie,
      storage: JSON.stringify({ ...localStorage }) + JSON.stringify({ ...sessionStorage }),
      html: document.documentElement.outerHTML,
    })`);
    expect(JSON.stringify(visible)).not.toContain(key);
    expect(JSON.stringify(visible)).not.toContain(key.split('_').pop()!);
    expect(JSON.stringify(visible)).not.toContain(sessionId);
  });

  it('signs out: the session ends on the service, and its id opens nothing any more', async () => {
    await open('/conversations');
    await page.click('header button:has-text("Sign out")');
    await page.waitForURL(`${example.url}/signin`);
    expect(await sessionCookie()).toBeUndefined();
    expect((await sessionOnService(sessionId)).status).toBe(401);
    await open('/sandboxes');
    expect(page.url()).toBe(`${example.url}/signin?next=%2Fsandboxes`);
    await browser.screenshot(page, '9-signed-out');

    // The old id, put back into the browser: pages send it to sign in, and calls through /trpc are refused.
    await page.context().addCookies([{ name: 'acp_session', value: sessionId, url: example.url, httpOnly: true, sameSite: 'Strict' }]);
    await open('/settings');
    expect(new URL(page.url()).pathname).toBe('/signin');
    const viaApp = await page.evaluate(`fetch('/trpc/settings.get?input=' + encodeURIComponent('{"json":{}}')).then((r) => r.status)`);
    expect(viaApp).toBe(401);
    const sandboxes = async () => (await call(service, 'GET', '/api/v1/sandboxes/search', { key })).body.items.length;
    const before = await sandboxes();
    const start = await page.evaluate(
      `fetch('/trpc/sandboxes.start', { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"json":{}}' }).then((r) => r.status)`,
    );
    expect(start).toBe(401);
    expect(await sandboxes()).toBe(before);
  });
});
