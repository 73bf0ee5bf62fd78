// The real d6 web UI build (OpenHands frontend 0.62, commit d6fab190) in headless chromium,
// served by the service with its sign-in, its conversation on the real agent server 1.0.0a6 with a
// loopback LLM that runs `echo hello` and finishes. No registry carries that build
// (docs/openhands-ui-notes.md): this file runs where D6_UI_DIR names one (its build/ folder)
// and says so loudly where it does not. What it checks without the build runs in CI in
// test/e2e/d6-agent-server.test.ts and test/rest/sessions.test.ts.
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, startTestApp, type TestApp } from '../helpers/app.js';
import { recordTraffic } from '../helpers/agent-canvas.js';
import { launchBrowser, SCREENSHOT_DIR, type TestBrowser } from '../helpers/browser.js';
import { startToolCallLlm, type ToolCallLlm } from '../helpers/tool-call-llm.js';

const D6_UI_DIR = process.env.D6_UI_DIR;
const present = Boolean(D6_UI_DIR && fs.existsSync(D6_UI_DIR));
if (!present) console.warn(`\n${'!'.repeat(78)}\n!! THE REAL d6 UI NOT EXERCISED: set D6_UI_DIR to its build folder\n${'!'.repeat(78)}\n`);

let app: TestApp;
let llm: ToolCallLlm;
let browser: TestBrowser;
let key: string;

describe.runIf(present)('the real d6 web UI, signed in, on agent server 1.0.0a6', () => {
  beforeAll(async () => {
    llm = await startToolCallLlm({ command: 'echo hello | tee hello.txt' });
    app = await startTestApp('d6-ui-real', {
      WEB_UI_DIR: D6_UI_DIR!,
      // Isolated, a sandbox also sees its workspace at /workspace/project, where the UI's Changes tab looks.
      SANDBOX_ISOLATION: 'bubblewrap',
      SANDBOX_STARTUP_TIMEOUT_MS: '180000',
      START_TASK_POLL_MS: '200',
    });
    key = await app.keyFor('d6-browser');
    await call(app, 'POST', '/api/settings', {
      key,
      body: { user_consents_to_analytics: false }, // no consent modal; the LLM is set on the UI's settings page
    });
    browser = await launchBrowser('d6-ui-real');
  });
  afterAll(async () => {
    await browser?.close();
    await app?.stop();
    await llm?.close();
  });

  it(
    'saves the LLM, starts a conversation: its command, the output in the Terminal tab, the file in the Changes tab, the final message; after a resume "Ran …" and the final message; rename, delete, a secret made and deleted; Logout signs out',
    { timeout: 12 * 60_000 },
    async () => {
      const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
      const traffic = recordTraffic(page, [app.url]);
      const step = async <T>(name: string, work: () => Promise<T>): Promise<T> => {
        try {
          return await work();
        } catch (error) {
          await browser.screenshot(page, `failed-${name}`);
          throw error;
        }
      };
      await page.goto(`${app.url}/`);
      await page.fill('#api-key', key);
      await Promise.all([page.waitForURL(`${app.url}/`), page.click('button[type=submit]')]);
      await step('home', () => page.waitForSelector('[data-testid="launch-new-conversation-button"]', { timeout: 60_000 }));
      await browser.screenshot(page, '1-home');

      // The LLM, on the settings page's advanced form: model, base URL (the loopback LLM), key.
      await page.goto(`${app.url}/settings`);
      const advanced = page.locator('[data-testid="llm-settings-form-advanced"]');
      await step('settings-page', () => page.getByText('Advanced', { exact: true }).waitFor({ timeout: 60_000 }));
      // The page opens on the advanced form when the stored settings already go beyond the basic one.
      if (!(await advanced.isVisible())) await page.getByText('Advanced', { exact: true }).click();
      await step('advanced', () => advanced.locator('[data-testid="llm-custom-model-input"]').fill('openai/stub'));
      await advanced.locator('[data-testid="base-url-input"]').fill(llm.url);
      await advanced.locator('[data-testid="llm-api-key-input"]').fill('sk-d6');
      await page.click('[data-testid="submit-button"]');
      const settings = async () => (await call(app, 'GET', '/api/settings', { key })).body;
      await step('settings', () =>
        expect
          .poll(settings, { timeout: 30_000 })
          .toMatchObject({ llm_model: 'openai/stub', llm_base_url: llm.url, llm_api_key_set: true }),
      );
      expect(JSON.stringify(await settings())).not.toContain('sk-d6');
      await page.goto(`${app.url}/`);
      await page.waitForSelector('[data-testid="launch-new-conversation-button"]', { timeout: 60_000 });

      await page.click('[data-testid="launch-new-conversation-button"]');
      await page.waitForURL(/\/conversations\/[0-9a-f]{32}$/, { timeout: 60_000 });
      const input = page.locator('[data-testid="chat-input"]');
      // The chat box takes input once the agent server's socket is open (the sandbox runs).
      await step('ready', () =>
        page
          .getByText('Waiting for task')
          .first()
          .waitFor({ timeout: 8 * 60_000 }),
      );
      await browser.screenshot(page, '2-conversation-ready');
      await input.click();
      await page.keyboard.type('Run echo hello, then finish.');
      await page.click('[data-testid="submit-button"]');

      await step('finished', () =>
        page
          .getByText(llm.finalMessage)
          .first()
          .waitFor({ timeout: 4 * 60_000 }),
      );
      // Live, the chat keeps "Running …" for the command: the UI re-renders its list only when the
      // list grows (Messages' memo compares lengths), and the observation replaces its action.
      expect(await page.locator('body').innerText()).toContain(llm.command);
      // The Changes tab (open beside the chat) lists the file the command wrote.
      await step('changes', () => page.getByText('hello.txt').first().waitFor({ timeout: 60_000 }));
      await browser.screenshot(page, '3-ran-and-finished');

      // The Terminal tab (xterm.js, its DOM renderer) shows the command and its output.
      await page.getByRole('button', { name: 'Terminal (read-only)' }).click();
      const terminal = page.locator('.xterm-rows');
      const terminalLines = async () => (await terminal.innerText()).split('\n').map((line) => line.trim());
      await step('terminal', () =>
        expect.poll(terminalLines, { timeout: 60_000 }).toEqual(expect.arrayContaining([`$ ${llm.command}`, 'hello'])),
      );
      await browser.screenshot(page, '4-terminal');

      // Paused (as the idle pauser would), then opened again: the UI resumes the sandbox and renders
      // the history: "Ran …" and the finish card holding the final message.
      const conversationId = new URL(page.url()).pathname.split('/').at(-1)!;
      const [conversation] = (await call(app, 'GET', `/api/v1/app-conversations?ids=${conversationId}`, { key })).body;
      const sandboxStatus = async () =>
        (await call(app, 'GET', `/api/v1/sandboxes?id=${conversation.sandbox_id}`, { key })).body[0]?.status;
      expect((await call(app, 'POST', `/api/v1/sandboxes/${conversation.sandbox_id}/pause`, { key })).status).toBe(200);
      expect(await sandboxStatus()).toBe('PAUSED');
      await page.reload();
      await step('resumed', () => expect.poll(sandboxStatus, { timeout: 4 * 60_000 }).toBe('RUNNING'));
      await step('resumed-ran', () =>
        page
          .getByText(/^Ran\s+echo hello/)
          .first()
          .waitFor({ timeout: 4 * 60_000 }),
      );
      await page.getByText('FINISH', { exact: true }).first().getByRole('button').click(); // the card's expand arrow
      await step('resumed-finish', () => page.getByText(llm.finalMessage).first().waitFor({ timeout: 30_000 }));
      expect(await page.locator('body').innerText()).not.toContain('Unknown event');
      await browser.screenshot(page, '5-resumed');

      // Rename from the conversation's title (double-click, type, Enter), then delete from its menu.
      await page.dblclick('[data-testid="conversation-name-title"]');
      await page.fill('[data-testid="conversation-name-input"]', 'Renamed by the d6 UI');
      await page.keyboard.press('Enter');
      const title = async () => (await call(app, 'GET', `/api/conversations/${conversationId}`, { key })).body?.title;
      await step('renamed', () => expect.poll(title, { timeout: 30_000 }).toBe('Renamed by the d6 UI'));
      await step('delete', async () => {
        await page.locator('[data-testid="conversation-name"] [data-testid="ellipsis-button"]').click();
        await page.click('[data-testid="delete-button"]');
        await page.getByRole('button', { name: 'Confirm Delete' }).click();
      });
      // The V1 read (the V0 one answers 200 null for an unknown id: the reference's quirk, docs/conversations.md).
      const found = async () => (await call(app, 'GET', `/api/v1/app-conversations?ids=${conversationId}`, { key })).body;
      await step('deleted', () => expect.poll(found, { timeout: 60_000 }).toEqual([null]));

      // A secret made and deleted on the secrets page (its value never comes back to the page).
      await page.goto(`${app.url}/settings/secrets`);
      await page.click('[data-testid="add-secret-button"]');
      await page.fill('input[name="secret-name"]', 'D6_SECRET');
      await page.fill('[name="secret-value"]', 'value-from-the-d6-ui');
      await page.click('[data-testid="submit-button"]');
      const item = page.locator('[data-testid="secret-item"]', { hasText: 'D6_SECRET' });
      await step('secret', () => item.waitFor({ timeout: 30_000 }));
      const secretNames = async () =>
        ((await call(app, 'GET', '/api/secrets', { key })).body.custom_secrets as { name: string }[]).map((secret) => secret.name);
      expect(await secretNames()).toContain('D6_SECRET');
      expect(await page.locator('body').innerText()).not.toContain('value-from-the-d6-ui');
      await browser.screenshot(page, '6-secret');
      await item.locator('[data-testid="delete-secret-button"]').click();
      await page.click('[data-testid="confirmation-modal"] [data-testid="confirm-button"]');
      await step('secret-deleted', () => item.waitFor({ state: 'detached', timeout: 30_000 }));
      expect(await secretNames()).not.toContain('D6_SECRET');

      // The UI's Logout (the avatar's menu; OSS mode: POST /api/unset-provider-tokens, then a
      // reload) ends the browser session here, so the reload lands on the sign-in page.
      await page.goto(`${app.url}/`);
      await page.click('[data-testid="user-avatar"]');
      await Promise.all([
        page.waitForResponse((response) => response.url().endsWith('/api/unset-provider-tokens') && response.status() === 200),
        page.getByText('Logout', { exact: true }).click(),
      ]);
      await step('signed-out', () => page.waitForURL(/\/signin/, { timeout: 30_000 }));
      expect(await page.evaluate(async () => (await fetch('/api/settings')).status)).toBe(401);

      // No 404 or 5xx from the service, and the outside hosts the pages asked for, listed beside the screenshots.
      fs.mkdirSync(SCREENSHOT_DIR, { recursive: true });
      fs.writeFileSync(path.join(SCREENSHOT_DIR, 'd6-ui-real-outside-requests.json'), JSON.stringify(traffic.outsideRequests(), null, 2));
      expect(traffic.problems()).toEqual([]); // outside hosts: the UI's font stylesheet (fonts.googleapis.com), refused here
    },
  );
});
