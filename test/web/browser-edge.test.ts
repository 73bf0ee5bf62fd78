// The browser edge, probed as a hostile page would: X-Forwarded-Host never makes a foreign
// origin ours (even with TRUST_PROXY trusting the browser's own address), ?next= never leaves
// the origin, the UI cannot be framed by other sites nor its files sniffed, nothing of the UI
// build is served before sign-in (also through "..", encoded or not), and DATA_DIR and its
// key files are owner-only whatever modes the operator's folder had.
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ENCRYPTION_KEY_FILE, ensureDataDir, loadSecretBox } from '../../src/bootstrap.js';
import { loadConfig } from '../../src/config/config.js';
import { generateKeyText } from '../../src/crypto.js';
import { createLogger } from '../../src/logger.js';
import { sameOriginPath } from '../../src/http/web/signin-page.js';
import { call, startTestApp, testDatabaseUri, type TestApp } from '../helpers/app.js';
import { ENTRY_SCRIPT, writeFixtureUi } from '../helpers/fixture-ui.js';
import { runCli } from '../helpers/processes.js';
import { signIn } from '../helpers/session.js';

const FOREIGN = 'http://localhost:5555'; // another page on this machine
let app: TestApp;
let uiDir: string;
let cookie: string;

beforeAll(async () => {
  uiDir = writeFixtureUi();
  // The browser connects from 127.0.0.1, which TRUST_PROXY=loopback trusts as a proxy.
  app = await startTestApp('browser-edge', { WEB_UI_DIR: uiDir, TRUST_PROXY: 'loopback' });
  cookie = (await signIn(app, await app.keyFor('edge-user'))).cookie;
});
afterAll(async () => {
  await app?.stop();
  fs.rmSync(uiDir, { recursive: true, force: true });
});

describe('the origin check never trusts X-Forwarded-Host', () => {
  const save = (headers: Record<string, string>) =>
    call(app, 'POST', '/api/settings', { body: { llm_model: 'from-a-page' }, headers: { cookie, ...headers } });

  it('refuses a cookie write, a tRPC mutation and a read from a foreign page that names itself there', async () => {
    const spoof = { origin: FOREIGN, 'x-forwarded-host': 'localhost:5555', 'x-forwarded-proto': 'http' };
    expect(await save(spoof)).toMatchObject({ status: 403, body: { detail: 'Forbidden' } });
    const trpc = await call(app, 'POST', '/trpc/settings.save', { body: { json: { llm_model: 'x' } }, headers: { cookie, ...spoof } });
    expect(trpc.status).toBe(403);
    expect((await call(app, 'GET', '/api/settings', { headers: { cookie, ...spoof } })).status).toBe(403);
    const signInAs = await call(app, 'POST', '/api/auth/session', { body: { api_key: await app.keyFor('victim') }, headers: spoof });
    expect(signInAs.status).toBe(403);
    expect(signInAs.headers.getSetCookie()).toEqual([]);
  });

  it('still takes our own origin (the Host header) and ignores a forwarded host naming it', async () => {
    expect((await save({ origin: app.url })).status).toBe(200);
    expect((await save({ origin: app.url, 'x-forwarded-host': 'elsewhere.example' })).status).toBe(200);
  });
});

describe('?next= of the sign-in page', () => {
  const HOSTILE = [
    '//evil.example/',
    '/.//evil.example/',
    '/./../..//evil.example',
    '///evil.example',
    '/\\evil.example',
    '/\t/evil.example',
    '/\n/evil.example',
    '/%2F%2Fevil.example',
    '/%2f%5cevil.example',
    '/%5C%5Cevil.example',
    'https://evil.example/',
    'http:/evil.example',
    'javascript:alert(1)',
    'evil.example',
    '',
  ];
  it.each(HOSTILE)('sends %j to /', (next) => expect(sameOriginPath(next)).toBe('/'));

  it.each([
    ['/settings', '/settings'],
    ['/conversations/abc?tab=files#x', '/conversations/abc?tab=files#x'],
    ['/settings/./mcp', '/settings/mcp'],
    ['/a%20b', '/a%20b'],
  ])('keeps the same-origin path %j', (next, expected) => expect(sameOriginPath(next)).toBe(expected));

  it('writes the checked path into the page the server sends (also for the encoded query forms)', async () => {
    const target = async (query: string) => /data-next="([^"]*)"/.exec(await (await fetch(`${app.url}/signin?${query}`)).text())?.[1];
    expect(await target('next=%2Fsettings%2Fmcp')).toBe('/settings/mcp');
    for (const next of HOSTILE) expect(await target(`next=${encodeURIComponent(next)}`), next).toBe('/');
    expect(await target('next=%252F%252Fevil.example')).toBe('/'); // decoded once by the query: "/%2F%2Fevil.example"
    expect(await target('next=a&next=//evil.example')).toBe('/');
    expect(await target('next=%2F%22%3E%3Cscript%3E')).toBe('/%22%3E%3Cscript%3E'); // escaped by the URL, never markup
  });
});

describe('headers of the UI', () => {
  const expectGuarded = (res: Response, label: string) => {
    expect(res.headers.get('content-security-policy'), label).toContain("frame-ancestors 'self'");
    expect(res.headers.get('x-frame-options'), label).toBe('SAMEORIGIN');
    expect(res.headers.get('x-content-type-options'), label).toBe('nosniff');
  };

  it('guards pages and files against framing by other sites and content sniffing', async () => {
    for (const urlPath of ['/', '/settings/mcp', '/index.html', `/${ENTRY_SCRIPT}`, '/locales/en/translation.json']) {
      const res = await fetch(app.url + urlPath, { headers: { cookie, accept: 'text/html' } });
      expect(res.status, urlPath).toBe(200);
      expectGuarded(res, urlPath);
    }
  });

  it('guards the sign-in page and the home page without a UI the same way (they allow no framing at all)', async () => {
    const signin = await fetch(`${app.url}/signin`);
    expect(signin.headers.get('x-content-type-options')).toBe('nosniff');
    expect(signin.headers.get('x-frame-options')).toBe('DENY');
    const bare = await startTestApp('browser-edge-home');
    try {
      const home = await fetch(`${bare.url}/`, { headers: { cookie: (await signIn(bare, await bare.keyFor('h'))).cookie } });
      expect(home.status).toBe(200);
      expect(home.headers.get('content-security-policy')).toContain("frame-ancestors 'none'");
      expect(home.headers.get('x-frame-options')).toBe('SAMEORIGIN');
      expect(home.headers.get('x-content-type-options')).toBe('nosniff');
    } finally {
      await bare.stop();
    }
  });
});

/** GET with the path exactly as given (fetch would resolve "..", "%2e%2e" and "." first, as browsers do). */
function rawGet(urlPath: string, headers: Record<string, string>) {
  return new Promise<{ status: number; location: string | undefined; cacheControl: string | undefined; text: string }>(
    (resolve, reject) => {
      const req = http.get(`${app.url}/`, { path: urlPath, headers }, (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (text += chunk));
        res.on('end', () =>
          resolve({ status: res.statusCode!, location: res.headers.location, cacheControl: res.headers['cache-control'], text }),
        );
      });
      req.on('error', reject);
    },
  );
}

describe('nothing of the UI before sign-in', () => {
  const INDEX_MARK = `<script type="module" src="/${ENTRY_SCRIPT}">`;

  it.each([
    '/index.html',
    '/locales/../index.html',
    '/locales/%2e%2e/index.html',
    '/locales/%2E%2E/index.html',
    '/assets/../index.html',
    '/./index.html',
    '/locales/en/../../index.html',
    '/%69ndex.html',
    `/${ENTRY_SCRIPT}`,
    `/locales/../${ENTRY_SCRIPT}`,
    '/locales/en/translation.json',
    '/favicon.ico',
  ])('%s: no file without a session (302 to sign-in for a browser, 401 otherwise)', async (urlPath) => {
    for (const accept of ['text/html', 'application/json', '*/*']) {
      const res = await rawGet(urlPath, { accept });
      expect([302, 401], `${urlPath} ${accept}`).toContain(res.status);
      expect(res.text).not.toContain(INDEX_MARK);
      expect(res.text).not.toContain("xhr('GET'");
      if (res.status === 302) expect(res.location).toMatch(/^\/signin\?next=/);
    }
  });

  it('serves the normalised path to a signed-in browser: "/locales/../index.html" is the app, uncached', async () => {
    const res = await rawGet('/locales/../index.html', { cookie });
    expect(res.status).toBe(200);
    expect(res.cacheControl).toBe('no-cache, no-store, must-revalidate');
    expect(res.text).toContain(INDEX_MARK);
  });
});

describe('DATA_DIR is owner-only whatever its modes were', () => {
  const log = createLogger('silent');
  const mode = (file: string) => fs.statSync(file).mode & 0o777;
  const operatorFolder = () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'acp-data-modes-'));
    fs.chmodSync(dir, 0o755); // as an operator's "mkdir" leaves it
    return dir;
  };

  it('tightens the folder and writes the generated encryption key 0600', () => {
    const dir = operatorFolder();
    try {
      const config = loadConfig({ DATA_DIR: dir });
      ensureDataDir(config, log);
      loadSecretBox(config, log);
      expect(mode(dir)).toBe(0o700);
      expect(mode(path.join(dir, ENCRYPTION_KEY_FILE))).toBe(0o600);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it('tightens it when the service starts (and its key files left readable), and when the CLI runs', async () => {
    const dir = operatorFolder();
    fs.writeFileSync(path.join(dir, ENCRYPTION_KEY_FILE), generateKeyText() + '\n', { mode: 0o644 });
    const service = await startTestApp('data-modes', { DATA_DIR: dir });
    try {
      expect(mode(dir)).toBe(0o700);
      expect(mode(path.join(dir, ENCRYPTION_KEY_FILE))).toBe(0o600);
      expect(mode(path.join(dir, 'default-api-key'))).toBe(0o600); // the first key, minted at start
      fs.chmodSync(dir, 0o755);
      const cli = await runCli(['keys', 'list'], {
        DATA_DIR: dir,
        MONGODB_URI: testDatabaseUri(service.dbName),
        ENCRYPTION_KEY: generateKeyText(),
      });
      expect(cli.code, cli.stderr).toBe(0);
      expect(mode(dir)).toBe(0o700);
    } finally {
      await service.stop();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
