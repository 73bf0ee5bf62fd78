// Serving a built web UI from WEB_UI_DIR next to the API: hashed assets cached for a year,
// index.html never cached, the single-page app at every other page path, API paths untouched,
// and unauthenticated page visits sent to the sign-in page.
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, startTestApp, type TestApp } from '../helpers/app.js';
import { ENTRY_SCRIPT, writeFixtureUi } from '../helpers/fixture-ui.js';
import { signIn } from '../helpers/session.js';

let app: TestApp;
let uiDir: string;
let cookie: string;

beforeAll(async () => {
  uiDir = writeFixtureUi();
  app = await startTestApp('web-ui', { WEB_UI_DIR: uiDir });
  cookie = (await signIn(app, await app.keyFor('viewer'))).cookie;
});
afterAll(async () => {
  await app?.stop();
  fs.rmSync(uiDir, { recursive: true, force: true });
});

const page = (urlPath: string, headers: Record<string, string> = {}, method = 'GET') =>
  fetch(app.url + urlPath, { method, headers: { accept: 'text/html,application/xhtml+xml', ...headers }, redirect: 'manual' });

describe('the web UI from WEB_UI_DIR', () => {
  it('serves hashed assets with a year-long immutable cache, and other files revalidated (to a signed-in browser)', async () => {
    const script = await fetch(`${app.url}/${ENTRY_SCRIPT}`, { headers: { cookie } });
    expect(script.status).toBe(200);
    expect(script.headers.get('content-type')).toMatch(/javascript/);
    expect(script.headers.get('cache-control')).toBe('public, max-age=31536000, immutable');
    expect(await script.text()).toContain("xhr('GET', '/api/options/config')");
    const locale = await fetch(`${app.url}/locales/en/translation.json`, { headers: { cookie } });
    expect(locale.status).toBe(200);
    expect(locale.headers.get('cache-control')).toBe('no-cache');
    expect((await fetch(`${app.url}/favicon.ico`, { headers: { cookie } })).headers.get('cache-control')).toBe('no-cache');
  });

  it.each(['/', '/settings', '/settings/mcp', '/conversations/0123456789abcdef0123456789abcdef', '/index.html'])(
    'sends an unauthenticated visit of %s to the sign-in page',
    async (urlPath) => {
      const res = await page(urlPath);
      expect(res.status).toBe(302);
      expect(res.headers.get('location')).toBe(`/signin?next=${encodeURIComponent(urlPath)}`);
    },
  );

  it.each(['/', '/settings/integrations', '/conversations/0123456789abcdef0123456789abcdef', '/microagent-management'])(
    'serves index.html, uncached, for %s to a signed-in browser',
    async (urlPath) => {
      const res = await page(urlPath, { cookie });
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toMatch(/^text\/html/);
      expect(res.headers.get('cache-control')).toBe('no-cache, no-store, must-revalidate');
      expect(res.headers.get('etag')).toBeNull();
      expect(await res.text()).toContain(`<script type="module" src="/${ENTRY_SCRIPT}">`);
    },
  );

  it('answers HEAD like GET, and a non-browser without credentials with 401', async () => {
    expect((await page('/', { cookie }, 'HEAD')).status).toBe(200);
    expect(await call(app, 'GET', '/settings', { headers: { accept: 'application/json' } })).toMatchObject({
      status: 401,
      body: { detail: 'Unauthorized' },
    });
  });

  it('leaves API paths to the API and missing assets 404', async () => {
    expect(await call(app, 'GET', '/api/nope', { headers: { cookie } })).toMatchObject({ status: 404, body: { detail: 'Not Found' } });
    expect((await call(app, 'GET', '/api/options/config', { headers: { cookie } })).body.APP_MODE).toBe('oss');
    expect((await page('/assets/entry.client-Missing1.js', { cookie })).status).toBe(404);
    expect((await page('/trpc/nope', { cookie })).headers.get('content-type')).toMatch(/json/);
  });

  it('never serves files outside the build', async () => {
    fs.writeFileSync(path.join(path.dirname(uiDir), 'outside-secret.txt'), 'secret');
    for (const attempt of ['/..%2foutside-secret.txt', '/%2e%2e/outside-secret.txt', '/assets/..%2f..%2foutside-secret.txt']) {
      const res = await page(attempt, { cookie });
      expect(await res.text()).not.toContain('secret');
    }
    fs.rmSync(path.join(path.dirname(uiDir), 'outside-secret.txt'));
  });
});

describe('WEB_UI_DIR layouts', () => {
  it("finds React Router's build/client/index.html", async () => {
    const dir = writeFixtureUi('react-router');
    const other = await startTestApp('web-ui-rr', { WEB_UI_DIR: dir });
    try {
      const { cookie: c } = await signIn(other, await other.keyFor('viewer'));
      const res = await fetch(`${other.url}/settings`, { headers: { cookie: c, accept: 'text/html' } });
      expect(await res.text()).toContain(ENTRY_SCRIPT);
    } finally {
      await other.stop();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it('serves a build inside a dot-folder (~/.cache/…), pages and assets alike', async () => {
    const built = writeFixtureUi();
    const home = fs.mkdtempSync(path.join(path.dirname(built), 'acp-home-'));
    const hidden = path.join(home, '.cache', 'build');
    fs.mkdirSync(path.dirname(hidden), { recursive: true });
    fs.renameSync(built, hidden);
    const other = await startTestApp('web-ui-hidden', { WEB_UI_DIR: hidden });
    try {
      const { cookie: c } = await signIn(other, await other.keyFor('viewer'));
      for (const page of ['/', '/conversations/abc', '/index.html']) {
        const res = await fetch(`${other.url}${page}`, { headers: { cookie: c, accept: 'text/html' } });
        expect(res.status, page).toBe(200);
        expect(await res.text()).toContain(ENTRY_SCRIPT);
      }
    } finally {
      await other.stop();
      fs.rmSync(home, { recursive: true, force: true });
    }
  });

  it('refuses to start on a folder without a build', async () => {
    const empty = fs.mkdtempSync(path.join(path.dirname(uiDir), 'acp-empty-ui-'));
    await expect(startTestApp('web-ui-empty', { WEB_UI_DIR: empty })).rejects.toThrow(/holds no index\.html/);
    fs.rmSync(empty, { recursive: true, force: true });
  });
});
