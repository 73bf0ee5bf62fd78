// The real OpenHands CLI (PyPI `openhands` 1.16.0, installed into the cache by
// scripts/setup-openhands-cli.sh) logs in against the service through the device flow: it asks
// for a code, "opens" the verification address (BROWSER is a script that writes it down, and
// headless chromium opens it, signs in and approves), polls until it gets the key, and saves it
// where it keeps it. The saved key then works as Bearer, and is an ordinary key of that user.
// The CLI needs Python 3.12; without one the setup script fails and so does this test, loudly.
import { execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchBrowser, type TestBrowser } from '../helpers/browser.js';
import { call, startTestApp, type TestApp } from '../helpers/app.js';
import { eventually } from '../helpers/eventually.js';
import { FAKE_AGENT_SPEC, writeSpecsFile } from '../helpers/specs.js';

const SETUP = fileURLToPath(new URL('../../scripts/setup-openhands-cli.sh', import.meta.url));
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'acp-cli-login-'));
let cli: string;
let app: TestApp;
let browser: TestBrowser;
let erin: string;

beforeAll(async () => {
  // Installs on first use (a few minutes), then a file test.
  cli = execFileSync('bash', [SETUP], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'], timeout: 900_000 })
    .trim()
    .split('\n')
    .pop()!;
  // Conversations the CLI starts run on the fake agent server (the start path is what is tested here).
  app = await startTestApp('cli-login', {
    DEVICE_CODE_INTERVAL_SECONDS: '1',
    SANDBOX_SPECS_FILE: writeSpecsFile(tmp, [{ ...FAKE_AGENT_SPEC, initial_env: { FAKE_WEBHOOKS: '1' } }]),
  });
  erin = await app.keyFor('erin');
  await call(app, 'POST', '/api/v1/secrets', { key: erin, body: { name: 'ERIN_SECRET', value: 'erin-value' } });
  await call(app, 'POST', '/api/settings', { key: erin, body: { llm_model: 'openai/cli-model', llm_api_key: 'sk-cli' } });
  browser = await launchBrowser('cli-device-login');
}, 960_000);
afterAll(async () => {
  await browser?.close();
  await app?.stop();
  fs.rmSync(tmp, { recursive: true, force: true });
});

const persistence = path.join(tmp, 'persistence');
const cliEnv = () => ({
  PATH: process.env.PATH ?? '/usr/bin:/bin',
  HOME: tmp,
  OPENHANDS_PERSISTENCE_DIR: persistence,
  NO_PROXY: '127.0.0.1,localhost',
  TERM: 'dumb',
});

describe('openhands login --server-url <this service>', () => {
  it('gets an API key of the user who approved in the browser, saves it, and the key works as Bearer', { timeout: 120_000 }, async () => {
    const opened = path.join(tmp, 'opened-urls');
    const openBrowser = path.join(tmp, 'open-browser.sh');
    fs.writeFileSync(openBrowser, `#!/bin/sh\nprintf '%s\\n' "$1" >> '${opened}'\n`, { mode: 0o755 });
    const child = spawn(cli, ['login', '--server-url', app.url], {
      env: { ...cliEnv(), BROWSER: openBrowser },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    const exited = new Promise<number | null>((resolve) => child.on('exit', resolve));

    try {
      const url = await eventually(
        'the CLI to open the verification address',
        async () => (fs.existsSync(opened) ? fs.readFileSync(opened, 'utf8').trim().split('\n')[0] : null) || null,
        60_000,
      );
      expect(url).toMatch(new RegExp(`^${app.url}/oauth/device\\?user_code=[A-Z]{4}-[A-Z]{4}$`));
      const page = await browser.newPage();
      await page.goto(url);
      await page.fill('#api-key', erin);
      await Promise.all([page.waitForURL((u) => u.pathname === '/oauth/device'), page.click('button[type=submit]')]);
      expect(await page.textContent('#user')).toBe('erin');
      expect(await page.textContent('#user-agent')).toMatch(/^python-httpx\//);
      await page.click('#approve');
      await page.locator('#result', { hasText: 'Approved' }).waitFor();
      await browser.screenshot(page, 'approved for the CLI');

      expect(await Promise.race([exited, new Promise((r) => setTimeout(() => r('still running'), 60_000))]), output).toBe(0);
    } finally {
      child.kill();
    }
    expect(output).toContain('Logged into OpenHands Cloud');
    const saved = fs.readFileSync(path.join(persistence, 'cloud', 'api_key.txt'), 'utf8').trim();
    expect(saved).toMatch(/^ohk_/);
    expect(output).not.toContain(saved);
    const bearer = { authorization: `Bearer ${saved}` };
    expect((await call(app, 'GET', '/api/v1/secrets/search', { headers: bearer })).body.items).toEqual([
      { name: 'ERIN_SECRET', description: '' },
    ]);
    const keys = await app.server.deps.services.apiKeys.list('erin');
    expect(keys.map((k) => k.label)).toContainEqual(expect.stringMatching(/^device: python-httpx\//));
  });

  it('then starts a conversation with the saved key: openhands cloud -t <task>', { timeout: 120_000 }, async () => {
    const run = spawn(cli, ['cloud', '--server-url', app.url, '-t', 'Say hello to the CLI'], {
      env: cliEnv(),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    run.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    run.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    const code = await new Promise<number | null>((resolve) => run.on('exit', resolve));
    expect(code, output).toBe(0);
    const shown = new RegExp(`${app.url.replace(/[.:/]/g, '\\$&')}/conversations/([0-9a-f-]+)`).exec(output);
    expect(shown, output).not.toBeNull();
    const id = shown![1]!.replace(/-/g, '');
    const [conversation] = (await call(app, 'GET', `/api/v1/app-conversations?ids=${id}`, { key: erin })).body;
    expect(conversation).toMatchObject({ id, sandbox_status: 'RUNNING' });
    const events = await eventually('the task to reach the agent', async () => {
      const found = (await call(app, 'GET', `/api/v1/conversation/${id}/events/search?limit=10`, { key: erin })).body;
      return found.items?.length ? found.items : null;
    });
    expect(JSON.stringify(events)).toContain('Say hello to the CLI');
  });
});
