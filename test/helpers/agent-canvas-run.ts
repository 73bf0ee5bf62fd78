// Agent Canvas (npm @openhands/agent-canvas, unmodified) driven in Debian chromium against the
// service, the real agent server and a loopback fake LLM whose agent runs `echo hello` (the agent
// server's `terminal` tool) and then finishes. Two test files use it, one per way Canvas signs in
// (test/browser/agent-canvas-cookie.test.ts, agent-canvas-device.test.ts), so that the two runs
// take two workers of the real-timing group. After sign-in both save LLM settings, see the
// backend connected, start a conversation from the home box and see the message, the command,
// its output and the final message; create and delete a secret; save the application settings
// and an LLM profile; rename and delete the conversation. Every request of the pages is
// recorded: no 404 or 5xx from the service, no outside host but the harmless ones.
import fs from 'node:fs';
import path from 'node:path';
import type { Page, Request } from 'playwright-core';
import { expect } from 'vitest';
import { call, startTestApp, type TestApp } from './app.js';
import { agentCanvasBuild, HARMLESS_OUTSIDE_HOSTS, recordTraffic, serveCanvasElsewhere } from './agent-canvas.js';
import { launchBrowser, SCREENSHOT_DIR, type TestBrowser } from './browser.js';
import { startStubLlm, type StubLlm } from './stub-llm.js';
import { startTlsFront, type TlsFront } from './tls-front.js';

export const RUN_TIMEOUT = 8 * 60_000;
const FINAL_MESSAGE = 'Done: the command printed hello.';

export const bearer = (key: string) => ({ headers: { authorization: `Bearer ${key}` } });

export interface CanvasRig {
  app: TestApp;
  llm: StubLlm;
  browser: TestBrowser;
  shot(page: Page, name: string): Promise<string>;
  close(): Promise<void>;
  /** Where its conversation's sandbox comes from: started for it, or taken from the warm pool. */
  sandboxSource: 'cold_start' | 'warm_pool';
}

/** The service behind TLS on a hostname (as deployed), Canvas served by it: cookie mode off loopback. */
export interface HostnameRig extends CanvasRig {
  front: TlsFront;
}

export interface ElsewhereRig extends CanvasRig {
  /** Canvas's build served from another origin (localhost), locked to `front`. */
  elsewhere: Awaited<ReturnType<typeof serveCanvasElsewhere>>;
  /** The service behind TLS, as deployed: Canvas opens the device flow's verification page only over https. */
  front: TlsFront;
}

/** The service serving Canvas, its LLM and a browser; with `elsewhere`, Canvas also served from another origin. */
export async function startCanvasRig(name: string): Promise<CanvasRig>;
export async function startCanvasRig(name: string, options: { elsewhere: true }): Promise<ElsewhereRig>;
export async function startCanvasRig(name: string, options: { hostname: string }): Promise<HostnameRig>;
export async function startCanvasRig(name: string, options: { elsewhere?: boolean; hostname?: string } = {}): Promise<CanvasRig> {
  const canvasDir = agentCanvasBuild();
  // What is started, stopped last first by close() or when a later step of the set-up fails.
  const stops: (() => Promise<unknown>)[] = [];
  const stopAll = async () => {
    for (const stop of stops.splice(0).reverse()) await stop(); // once: a second call has nothing left
  };
  try {
    const llm = await startStubLlm({
      reply: 'Echo hello', // the conversation's title
      steps: [
        { tool: 'terminal', arguments: { command: 'echo hello' } },
        { tool: 'finish', arguments: { message: FINAL_MESSAGE } },
      ],
    });
    stops.push(() => llm.close());
    const elsewhere = options.elsewhere ? await serveCanvasElsewhere(canvasDir) : undefined;
    if (elsewhere) stops.push(() => elsewhere.close());
    const front = options.elsewhere || options.hostname ? await startTlsFront(options.hostname ?? null) : undefined;
    if (front) stops.push(() => front.close());
    const app = await startTestApp(name, {
      WEB_UI: 'canvas',
      AGENT_CANVAS_DIR: canvasDir,
      SANDBOX_STARTUP_TIMEOUT_MS: '180000',
      // As deployed on a hostname: the TLS front's X-Forwarded-Proto (Secure cookies) and where browsers reach the service (its agent servers allow that origin).
      ...(options.hostname && front && { TRUST_PROXY: 'loopback', PUBLIC_URL: front.url }),
      ...(elsewhere && {
        // Canvas served elsewhere calls the agent servers from its own origin: they must allow it.
        TRUSTED_ORIGINS: elsewhere.url,
        TRUST_PROXY: 'loopback', // the TLS front's X-Forwarded-Proto
        DEVICE_CODE_INTERVAL_SECONDS: '1', // Canvas polls as often as the service says (5 s by default)
        // Its conversation starts in a sandbox the warm pool started while the browser signed in
        // (the cookie run starts one cold): both ways a user's first conversation begins.
        SANDBOX_WARM_POOL_SIZE: '1',
      }),
    });
    stops.push(() => app.stop());
    front?.forwardTo(app.url);
    if (front) elsewhere?.lockTo(front.url);
    const browser = await launchBrowser('agent-canvas', process.env, options.hostname ? [options.hostname] : []); // both files' screenshots under one prefix
    stops.push(() => browser.close());
    return {
      app,
      llm,
      browser,
      ...(front && { front }),
      ...(elsewhere && { elsewhere }),
      sandboxSource: options.elsewhere ? 'warm_pool' : 'cold_start',
      shot: (page, shotName) => browser.screenshot(page, shotName),
      close: stopAll,
    };
  } catch (error) {
    await stopAll();
    throw error;
  }
}

/** Canvas's first-run onboarding: the OpenHands agent, then its LLM form (Advanced: any model, a base URL, a key). */
async function onboard(rig: CanvasRig, page: Page, run: string): Promise<void> {
  await page.getByTestId('onboarding-agent-next').click();
  await page.getByTestId('sdk-section-advanced-toggle').click();
  await fillLlm(rig, page);
  await rig.shot(page, `${run}-2-llm-settings`);
  await page.getByTestId('onboarding-llm-next').click();
}

async function fillLlm(rig: CanvasRig, page: Page): Promise<void> {
  await page.getByTestId('llm-custom-model-input').fill('openai/stub-model');
  await page.getByTestId('base-url-input').fill(rig.llm.url);
  await page.getByTestId('llm-api-key-input').fill('sk-canvas-llm-key');
}

/** From the home box to the conversation page showing the message, the command, its output and the final message. */
async function runConversation(rig: CanvasRig, page: Page, run: string, key: string): Promise<string> {
  // The agent-server sockets Canvas opens (their resend parameters), for a failure's report.
  const sockets: string[] = [];
  // Canvas pairs a command's result with the command only when its socket to the agent server
  // subscribed before the command ran (docs/agent-server-notes.md: the agent server's resend
  // race, upstream). A real LLM takes seconds; this one answers once that socket's first frame
  // came, so the run shows Canvas's rendering, not the race (which made the test flaky under load).
  rig.llm.hold();
  const subscribed = new Promise<void>((resolve) =>
    page.on('websocket', (ws) => {
      sockets.push(ws.url().replace(/session_api_key=[^&]*/, 'session_api_key=…'));
      if (ws.url().includes('/sockets/events/')) ws.once('framereceived', () => resolve());
    }),
  );
  await page.locator('[contenteditable=true]').first().click();
  await page.keyboard.type('Please run echo hello');
  await page.keyboard.press('Enter');
  await page.waitForURL(/\/conversations\/[0-9a-f]{32}/, { timeout: 5 * 60_000 });
  let timer: NodeJS.Timeout | undefined;
  const noSocket = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no agent-server socket: ${JSON.stringify(sockets)}`)), 60_000);
  });
  await Promise.race([subscribed, noSocket]).finally(() => {
    clearTimeout(timer);
    rig.llm.release();
  });
  const id = /\/conversations\/([0-9a-f]{32})/.exec(page.url())![1]!;
  await page
    .getByText(FINAL_MESSAGE)
    .first()
    .waitFor({ timeout: 3 * 60_000 });
  const ran = page.getByTestId('generic-event-message-title').filter({ hasText: 'Ran echo hello' });
  // Canvas sometimes renders the command's card already open (a "Collapse" button): open it if not.
  await ran
    .getByRole('button', { name: /^(Expand|Collapse)$/ })
    .waitFor()
    .catch(async (error: Error) => {
      // What Canvas shows instead (e.g. "Running echo hello": the result never reached its view).
      await rig.shot(page, `${run}-4-no-result`);
      const titles = await page.getByTestId('generic-event-message-title').allInnerTexts();
      const stored = await eventsOf(rig, id, key).catch((e: Error) => e.message);
      throw new Error(`${error.message}\nevent titles shown: ${JSON.stringify(titles)}\nsockets: ${JSON.stringify(sockets)}\n${stored}`);
    });
  const expand = ran.getByRole('button', { name: 'Expand', exact: true });
  if ((await expand.count()) > 0) await expand.click();
  const transcript = String(await page.evaluate('document.body.innerText'));
  // The user's message, then the command, its output, the final message, in this order.
  expect(transcript).toMatch(/Please run echo hello[\s\S]*Ran echo hello\s+echo hello\s+hello\s+Done: the command printed hello\./);
  await rig.shot(page, `${run}-4-conversation`);
  // Its sidebar entry has a name (the untitled one if the list was read before the title came), never a blank.
  const entryTitle = page.locator(`a[href^="/conversations/${id}"]`).first().getByTestId('conversation-card-title');
  expect((await entryTitle.innerText()).trim()).toMatch(/^(Conversation [0-9a-f]{5}|Echo hello|Please run echo hello)$/);
  return id;
}

/** The conversation's events as the service keeps them (Canvas's history) and as its agent server does. */
async function eventsOf(rig: CanvasRig, id: string, key: string): Promise<string> {
  const kinds = (items: { kind: string; timestamp: string }[]) => items.map((e) => `${e.kind}@${e.timestamp}`).join(', ');
  const ours = (await call(rig.app, 'GET', `/api/v1/conversation/${id}/events/search?limit=100`, bearer(key))).body;
  const [conversation] = (await call(rig.app, 'GET', `/api/v1/app-conversations?ids=${id}`, bearer(key))).body;
  const agent = await fetch(`${conversation.conversation_url}/events/search?limit=100`, {
    headers: { 'x-session-api-key': conversation.session_api_key },
  });
  return `events kept here: ${kinds(ours.items)}\nevents of the agent server: ${kinds(((await agent.json()) as { items: [] }).items)}`;
}

/** Creates a secret on Canvas's Secrets page, sees it listed (and stored), deletes it. */
async function secretRoundTrip(rig: CanvasRig, page: Page, base: string, run: string, key: string): Promise<void> {
  await page.goto(`${base}/settings/secrets`);
  await page.getByTestId('add-secret-button').click();
  await page.getByTestId('name-input').fill('CANVAS_TOKEN');
  await page.getByTestId('value-input').fill('canvas-secret-value');
  await page.getByTestId('description-input').fill('made in Agent Canvas');
  await page.getByTestId('submit-button').click();
  await page.getByTestId('secret-item').filter({ hasText: 'CANVAS_TOKEN' }).waitFor();
  await rig.shot(page, `${run}-5-secret`);
  const stored = await call(rig.app, 'GET', '/api/v1/secrets/search', bearer(key));
  expect(stored.body.items).toEqual([{ name: 'CANVAS_TOKEN', description: 'made in Agent Canvas' }]);
  await page.getByTestId('delete-secret-button').click();
  await page.getByTestId('confirm-button').click();
  await page.getByTestId('secrets-empty').waitFor();
  expect((await call(rig.app, 'GET', '/api/v1/secrets/search', bearer(key))).body.items).toEqual([]);
}

/** Canvas's LLM settings page: a profile saved through the schema form (Advanced: any model, a base URL, a key), maybe activated. */
async function addLlmProfile(rig: CanvasRig, page: Page, run: string, key: string, activate = false): Promise<void> {
  await page.getByRole('button', { name: 'Add LLM Profile' }).click();
  await page.getByTestId('profile-name-input').fill('stub-profile');
  await page.getByTestId('sdk-section-advanced-toggle').click();
  await fillLlm(rig, page);
  await page.getByTestId('save-profile-btn').click();
  const row = page.getByTestId('profile-row').filter({ hasText: 'stub-profile' });
  await row.waitFor();
  if (activate) {
    // Made the settings' LLM from its row's menu.
    await row.getByTestId('profile-menu-trigger').click();
    await page.getByTestId('profile-set-active').click();
    await row.getByTestId('profile-active-badge').waitFor();
  }
  await rig.shot(page, `${run}-llm-profile`);
  const profiles = (await call(rig.app, 'GET', '/api/v1/settings/profiles', bearer(key))).body.profiles;
  expect(profiles).toEqual([expect.objectContaining({ name: 'stub-profile', model: 'openai/stub-model', api_key_set: true })]);
}

/** The application settings page saves. */
async function appSettings(rig: CanvasRig, page: Page, key: string): Promise<void> {
  await openInApp(page, '/settings/app');
  await page.getByTestId('git-user-name-input').fill('Canvas Tester');
  await page.getByTestId('submit-button').click();
  await expect.poll(async () => (await call(rig.app, 'GET', '/api/v1/settings', bearer(key))).body.git_user_name).toBe('Canvas Tester');
}

/**
 * Canvas's other pages (automations aside: not available here), each opened within the app until
 * its requests settle; the recorder checks their answers. Within the app, as its own links do:
 * loading each by URL re-ran Canvas's start-up nine times (16 s of CPU a run). The secrets page,
 * the LLM page and the first page of each run are loaded by URL.
 */
const OTHER_PAGES = [
  '/settings/agent',
  '/settings/agents',
  '/settings/condenser',
  '/settings/agent-context',
  '/settings/verification',
  '/customize',
  '/skills',
  '/plugins',
  '/mcp',
];

async function visitOtherPages(rig: CanvasRig, page: Page, run: string): Promise<void> {
  const requests = inFlight(page); // not across a load: the page before leaves requests that never end
  await openInApp(page, '/');
  await page.locator('[data-testid=backend-status-dot][data-status=connected]').first().waitFor();
  await requests.settled();
  const home = String(await page.evaluate('document.body.innerText'));
  for (const pathname of OTHER_PAGES) {
    await openInApp(page, pathname);
    await requests.settled();
    // Polled: React Router keeps the page before on screen while a route's code loads and runs,
    // which on a loaded machine outlasts the requests' quiet time.
    await expect
      .poll(async () => String(await page.evaluate('document.body.innerText')), {
        message: `${pathname} shows the home page`,
        timeout: 15_000,
      })
      .not.toBe(home);
    await rig.shot(page, `${run}-page${pathname.replaceAll('/', '-')}`);
  }
}

/** Opens a page of Canvas within the app (React Router follows the history on popstate, as for the back button). */
async function openInApp(page: Page, pathname: string): Promise<void> {
  await page.evaluate(`history.pushState(null, '', ${JSON.stringify(pathname)}); dispatchEvent(new PopStateEvent('popstate'))`);
}

/** The page's requests under way; settled() once none has been for QUIET_MS (Playwright's networkidle, for navigations within a page). */
function inFlight(page: Page): { settled(): Promise<void> } {
  const QUIET_MS = 500;
  const pending = new Set<Request>();
  let lastChange = Date.now();
  const change = (request: Request, under: boolean) => {
    if (under) pending.add(request);
    else pending.delete(request);
    lastChange = Date.now();
  };
  page.on('request', (request) => change(request, true));
  page.on('requestfinished', (request) => change(request, false));
  page.on('requestfailed', (request) => change(request, false));
  return {
    settled: async () => {
      const quiet = () => pending.size === 0 && Date.now() - lastChange >= QUIET_MS;
      const under = () => [...pending].map((r) => `${r.method()} ${r.url()}`);
      await expect.poll(() => (quiet() ? [] : under()), { timeout: 30_000, interval: 100 }).toEqual([]);
    },
  };
}

/** Renames the conversation from the list's menu, then deletes it from there. */
async function renameAndDelete(rig: CanvasRig, page: Page, run: string, id: string, key: string): Promise<void> {
  await openInApp(page, '/');
  const card = page.locator(`a[href^="/conversations/${id}"]`).first();
  await card.hover();
  await card.getByTestId('ellipsis-button').click();
  await page.getByTestId('edit-button').click();
  const title = page.getByTestId('conversation-card-title');
  await title.fill('Renamed in Canvas');
  await title.press('Enter');
  await page.locator(`a[href^="/conversations/${id}"]`, { hasText: 'Renamed in Canvas' }).waitFor();
  expect((await call(rig.app, 'GET', `/api/v1/app-conversations?ids=${id}`, bearer(key))).body[0].title).toBe('Renamed in Canvas');
  await rig.shot(page, `${run}-7-renamed`);
  await card.hover();
  await card.getByTestId('ellipsis-button').click();
  await page.getByTestId('delete-button').click();
  await page.getByRole('button', { name: 'Confirm Delete' }).click();
  await page.locator(`a[href^="/conversations/${id}"]`).waitFor({ state: 'detached' });
  expect((await call(rig.app, 'GET', `/api/v1/app-conversations?ids=${id}`, bearer(key))).body).toEqual([null]);
}

/**
 * Everything after sign-in, the same in both runs but the LLM's setup: Canvas's onboarding
 * when it shows (the cookie run), else its "Set up LLM" banner leading to the profiles page.
 * `otherPages`: the settings pages' round (one run does it: their calls are the same in both
 * modes but for the credential, which every call of the conversation and secrets shows).
 */
export async function afterSignIn(rig: CanvasRig, page: Page, base: string, run: string, key: string, otherPages: boolean): Promise<void> {
  const onboarding = page.getByTestId('onboarding-agent-next');
  const banner = page.getByRole('button', { name: 'Set up LLM' });
  await onboarding.or(banner).first().waitFor();
  await rig.shot(page, `${run}-1-signed-in`);
  if (await onboarding.isVisible()) {
    await onboard(rig, page, run);
  } else {
    await banner.click();
    await addLlmProfile(rig, page, `${run}-2`, key, true);
    await page.goto(`${base}/`);
  }
  await page.locator('[data-testid=backend-status-dot][data-status=connected]').first().waitFor();
  await rig.shot(page, `${run}-3-home`);
  const stored = (await call(rig.app, 'GET', '/api/v1/settings', bearer(key))).body;
  expect(stored).toMatchObject({ agent_settings: { llm: { model: 'openai/stub-model', base_url: rig.llm.url } }, llm_api_key_set: true });
  const id = await runConversation(rig, page, run, key);
  const tasks = (await call(rig.app, 'GET', '/api/v1/app-conversations/start-tasks/search', bearer(key))).body.items;
  expect(tasks.find((t: { app_conversation_id: string }) => t.app_conversation_id === id)).toMatchObject({
    sandbox_source: rig.sandboxSource,
  });
  await secretRoundTrip(rig, page, base, run, key);
  if (otherPages) {
    await appSettings(rig, page, key);
    await visitOtherPages(rig, page, run);
  }
  if (!(await call(rig.app, 'GET', '/api/v1/settings/profiles', bearer(key))).body.profiles.length) {
    await page.goto(`${base}/settings/llm`);
    await addLlmProfile(rig, page, `${run}-6`, key);
  }
  await renameAndDelete(rig, page, run, id, key);
}

/** No 404/5xx from us, only harmless outside hosts; their list is kept beside the screenshots. */
export function expectHarmless(traffic: ReturnType<typeof recordTraffic>, service: string, run: string): void {
  fs.mkdirSync(SCREENSHOT_DIR, { recursive: true });
  fs.writeFileSync(
    path.join(SCREENSHOT_DIR, `agent-canvas-${run}-outside-requests.json`),
    JSON.stringify(traffic.outsideRequests(), null, 2),
  );
  expect(traffic.problems()).toEqual([]);
  for (const host of traffic.outsideHosts()) expect(HARMLESS_OUTSIDE_HOSTS).toContain(host);
  expect(traffic.seen.filter((s) => s.url.startsWith(service)).length).toBeGreaterThan(40);
}
