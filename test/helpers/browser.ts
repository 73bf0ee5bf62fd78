// Headless Debian chromium driven by playwright-core, for tests that need a real browser.
// scripts/setup-browser.sh installs chromium (npm test runs it before the whole suite); playwright-core never
// downloads a browser. A missing browser fails the test with what to run: browser features are
// core, so they are never skipped quietly.
import fs from 'node:fs';
import path from 'node:path';
import { chromium, type Browser, type BrowserContext, type BrowserContextOptions, type Page } from 'playwright-core';
import { fileURLToPath } from 'node:url';

export const DEFAULT_CHROMIUM = '/usr/bin/chromium';

/** Where screenshots land (git-ignored): <repository>/test-results/screenshots, newest file wins. */
export const SCREENSHOT_DIR = fileURLToPath(new URL('../../test-results/screenshots/', import.meta.url));

/**
 * What this machine needs: root has no usable sandbox, there is no GPU, and the network is
 * closed, so every background connection (updates, sync, QUIC probes) must stay off or it is
 * refused noisily and slows start-up. playwright-core adds a fresh --user-data-dir of its own
 * for every launch (a temporary profile it deletes on close), and rejects one passed here.
 * Names other than loopback fail at once instead of after the resolver's timeout: a page
 * asking for outside hosts (Canvas's MCP marketplace logos, web fonts) otherwise waited about
 * 5 s for the closed network's DNS before its requests settled. They are still requested, and
 * the tests still see and check each of them.
 */
export const CHROMIUM_ARGS = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE localhost, EXCLUDE 127.0.0.1',
];

export class BrowserMissingError extends Error {
  constructor(executable: string, fromEnv: boolean) {
    super(
      [
        `No Chromium at ${executable}${fromEnv ? ' (from CHROMIUM_PATH)' : ''}: the browser tests need Debian's chromium.`,
        'Install it with:  bash scripts/setup-browser.sh   (npm test runs it before the whole suite; it needs root or password-less sudo)',
        'or point CHROMIUM_PATH at another Chromium executable.',
      ].join('\n'),
    );
    this.name = 'BrowserMissingError';
  }
}

/** The chromium executable to drive; throws BrowserMissingError when there is none. */
export function chromiumExecutable(env: NodeJS.ProcessEnv = process.env): string {
  const fromEnv = Boolean(env.CHROMIUM_PATH);
  const executable = env.CHROMIUM_PATH || DEFAULT_CHROMIUM;
  try {
    fs.accessSync(executable, fs.constants.X_OK);
  } catch {
    throw new BrowserMissingError(executable, fromEnv);
  }
  return executable;
}

export interface TestBrowser {
  browser: Browser;
  /** A new isolated context (own cookies and storage, like a separate person) and a page in it. */
  newPage(options?: BrowserContextOptions): Promise<Page>;
  /** Writes a full-page PNG to SCREENSHOT_DIR/<prefix>-<name>.png and returns its path. */
  screenshot(page: Page, name: string): Promise<string>;
  close(): Promise<void>;
}

/**
 * Launches headless chromium. `prefix` (e.g. the test file's name) groups its screenshots;
 * `hosts`: names it resolves to 127.0.0.1 (a deployment's hostname, served on loopback).
 */
export async function launchBrowser(prefix: string, env: NodeJS.ProcessEnv = process.env, hosts: string[] = []): Promise<TestBrowser> {
  const mapped = hosts.map((host) => `MAP ${host} 127.0.0.1, `).join('');
  const browser = await chromium.launch({
    executablePath: chromiumExecutable(env),
    headless: true,
    args: CHROMIUM_ARGS.map((arg) => arg.replace('--host-resolver-rules=', `--host-resolver-rules=${mapped}`)),
    timeout: 60_000, // a cold start on a busy 2-core machine
  });
  const contexts: BrowserContext[] = [];
  return {
    browser,
    async newPage(options) {
      const context = await browser.newContext(options);
      contexts.push(context);
      return context.newPage();
    },
    async screenshot(page, name) {
      fs.mkdirSync(SCREENSHOT_DIR, { recursive: true });
      const file = path.join(SCREENSHOT_DIR, `${safeName(prefix)}-${safeName(name)}.png`);
      await page.screenshot({ path: file, fullPage: true });
      return file;
    },
    async close() {
      for (const context of contexts) await context.close().catch(() => undefined);
      await browser.close();
    },
  };
}

function safeName(text: string): string {
  return text.replace(/[^A-Za-z0-9._-]+/g, '-').replace(/^-+|-+$/g, '') || 'page';
}
