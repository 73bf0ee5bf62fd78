// The browser test, in Debian chromium against a served UI build (the fixture replays
// the OpenHands UI's own start-up calls: same-origin XHR, no auth header, the cookie only):
// a visit is sent to sign-in; after signing in the page loads /api/options/config, finds no
// settings, loads the settings modal's options, saves settings and reads them back; with a
// GitHub token stored it loads the git user, suggested tasks, repositories and branches. A page
// of a foreign origin is refused with the cookie; signing out ends access.
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, startTestApp, type TestApp } from '../helpers/app.js';
import { launchBrowser, type TestBrowser } from '../helpers/browser.js';
import { startFakeGitHub } from '../helpers/fake-providers/github.js';
import type { FakeProvider } from '../helpers/fake-providers/server.js';
import { writeFixtureUi } from '../helpers/fixture-ui.js';

interface Call {
  method: string;
  url: string;
  status: number;
  data: any;
}

let app: TestApp;
let github: FakeProvider;
let browser: TestBrowser;
let foreign: http.Server;
let foreignUrl: string;
let uiDir: string;
let key: string;

beforeAll(async () => {
  uiDir = writeFixtureUi();
  github = await startFakeGitHub();
  github.validTokens.add('ghp_browser');
  app = await startTestApp('browser-web-ui', { WEB_UI_DIR: uiDir, GITHUB_API_URL: github.url });
  key = await app.keyFor('frank');
  // Another origin of the same site (127.0.0.1, another port): SameSite=Strict still sends the cookie.
  foreign = http.createServer((_req, res) =>
    res.writeHead(200, { 'content-type': 'text/html' }).end('<!doctype html><title>foreign</title>'),
  );
  await new Promise<void>((resolve) => foreign.listen(0, '127.0.0.1', resolve));
  foreignUrl = `http://127.0.0.1:${(foreign.address() as AddressInfo).port}`;
  browser = await launchBrowser('web-ui');
});
afterAll(async () => {
  await browser?.close();
  await app?.stop();
  await github?.close();
  await new Promise((resolve) => foreign?.close(resolve));
  fs.rmSync(uiDir, { recursive: true, force: true });
});

const callsOf = async (page: Page): Promise<Call[]> => JSON.parse(String(await page.evaluate('JSON.stringify(window.__calls)')));
const waitForPhase = (page: Page, phase: string) => page.waitForSelector(`body[data-phase="${phase}"]`, { timeout: 20_000 });

describe('the web UI in a browser, signed in by cookie', () => {
  it('signs in, starts the UI, saves and reads settings, browses repositories, refuses a foreign origin, signs out', async () => {
    const page = await browser.newPage();
    const sentAuthHeaders: string[] = [];
    page.on('request', (request) => {
      const headers = request.headers();
      if (request.url().startsWith(`${app.url}/api/`) && (headers['x-session-api-key'] || headers.authorization))
        sentAuthHeaders.push(request.url());
    });

    await page.goto(`${app.url}/`);
    expect(new URL(page.url()).pathname).toBe('/signin');
    await page.fill('#api-key', key);
    await Promise.all([page.waitForURL(`${app.url}/`), page.click('button[type=submit]')]);

    // First start: no settings yet.
    await waitForPhase(page, 'ready');
    expect(await page.textContent('#title')).toBe('OpenHands (fixture build)');
    let calls = await callsOf(page);
    const seen = calls.map((c) => `${c.method} ${c.url} ${c.status}`);
    expect(seen.slice(0, 3)).toEqual(['GET /api/options/config 200', 'GET /api/options/config 200', 'GET /api/settings 404']);
    // The settings modal's options, one after the other; the conversation list alongside them.
    expect(seen.slice(3).filter((c) => c.includes('/api/options/'))).toEqual([
      'GET /api/options/models 200',
      'GET /api/options/agents 200',
      'GET /api/options/security-analyzers 200',
    ]);
    expect(seen.slice(3).filter((c) => !c.includes('/api/options/'))).toEqual(['GET /api/conversations?limit=10 200']);
    expect(calls[1]!.data).toMatchObject({
      APP_MODE: 'oss',
      POSTHOG_CLIENT_KEY: '',
      FEATURE_FLAGS: { ENABLE_BILLING: false, HIDE_LLM_SETTINGS: false },
    });
    expect(calls[3]!.data).toContain('openhands/claude-sonnet-4-20250514');
    await browser.screenshot(page, 'first start');

    await page.click('#save');
    await waitForPhase(page, 'saved');
    calls = await callsOf(page);
    expect(calls.at(-2)).toMatchObject({ method: 'POST', url: '/api/settings', status: 200, data: { message: 'Settings stored' } });
    expect(calls.at(-1)).toMatchObject({
      method: 'GET',
      url: '/api/settings',
      status: 200,
      data: {
        llm_model: 'openhands/claude-sonnet-4-20250514',
        llm_api_key_set: true,
        llm_api_key: null,
        user_consents_to_analytics: false,
      },
    });
    expect(JSON.stringify(calls)).not.toContain('sk-from-the-settings-modal');
    await browser.screenshot(page, 'settings saved');

    // With a GitHub token stored, the UI's git features start.
    expect(
      (await call(app, 'POST', '/api/add-git-providers', { key, body: { provider_tokens: { github: { token: 'ghp_browser' } } } })).status,
    ).toBe(200);
    await page.reload();
    await waitForPhase(page, 'ready');
    calls = await callsOf(page);
    expect(calls.map((c) => `${c.method} ${c.url.split('?')[0]} ${c.status}`)).toEqual(
      expect.arrayContaining([
        'GET /api/settings 200',
        'GET /api/user/info 200',
        'GET /api/user/suggested-tasks 200',
        'GET /api/user/repositories 200',
        'GET /api/user/repository/branches 200',
      ]),
    );
    const repos = calls.find((c) => c.url.startsWith('/api/user/repositories'))!;
    expect(repos.url).toBe('/api/user/repositories?selected_provider=github&sort=pushed&page=1&per_page=30');
    expect(repos.data).toHaveLength(30);
    expect(repos.data[0].link_header).toContain('rel="next"');
    expect(calls.find((c) => c.url === '/api/user/info')!.data.login).toBe('octo');
    await browser.screenshot(page, 'git features');

    // A page of another origin, with the cookie (same site): refused, reads and writes alike.
    const intruder = await page.context().newPage();
    await intruder.goto(foreignUrl);
    const attempt = await intruder.evaluate(`Promise.all([
      fetch('${app.url}/api/settings', { credentials: 'include' }).then((r) => r.status),
      fetch('${app.url}/api/settings', { method: 'POST', credentials: 'include', headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ llm_model: 'intruder' }) }).then((r) => r.status),
    ])`);
    expect(attempt).toEqual([403, 403]);
    expect((await call(app, 'GET', '/api/settings', { key })).body.llm_model).toBe('openhands/claude-sonnet-4-20250514');

    expect(sentAuthHeaders).toEqual([]); // the cookie alone authenticated the UI

    // Sign out from the page's origin: the session ends, the UI is behind the sign-in page again.
    expect(await page.evaluate(`fetch('/api/auth/session', { method: 'DELETE' }).then((r) => r.status)`)).toBe(200);
    expect(await page.evaluate(`fetch('/api/options/config').then((r) => r.status)`)).toBe(401);
    await page.goto(`${app.url}/settings`);
    expect(page.url()).toBe(`${app.url}/signin?next=%2Fsettings`);
    await browser.screenshot(page, 'signed out');
  });
});
