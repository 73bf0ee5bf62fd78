// The browser helper drives the real Debian chromium: a page served on 127.0.0.1, a click that
// runs the page's JavaScript and calls back to the server, and a screenshot on disk.
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BrowserMissingError, chromiumExecutable, launchBrowser, SCREENSHOT_DIR, type TestBrowser } from '../helpers/browser.js';

const PAGE = `<!doctype html>
<html><head><meta charset="utf-8"><title>helper check</title></head>
<body>
  <button id="go">Count</button>
  <p id="out">not clicked</p>
  <script>
    document.getElementById('go').addEventListener('click', async () => {
      const res = await fetch('/api/clicked', { method: 'POST' });
      document.getElementById('out').textContent = 'server saw ' + (await res.json()).clicks + ' click(s)';
    });
  </script>
</body></html>`;

let server: http.Server;
let baseUrl: string;
let clicks = 0;
let browser: TestBrowser;

beforeAll(async () => {
  server = http.createServer((req, res) => {
    if (req.method === 'POST' && req.url === '/api/clicked') {
      clicks++;
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ clicks }));
    } else if (req.url === '/') {
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(PAGE);
    } else {
      res.writeHead(404).end();
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  browser = await launchBrowser('browser-helper');
});

afterAll(async () => {
  await browser?.close();
  await new Promise((resolve) => server?.close(resolve));
});

describe('browser helper', () => {
  it('loads a local page, clicks, and writes a screenshot', async () => {
    const page = await browser.newPage();
    await page.goto(baseUrl);
    expect(await page.title()).toBe('helper check');
    await page.click('#go');
    await page.locator('#out', { hasText: 'server saw' }).waitFor();
    expect(await page.textContent('#out')).toBe('server saw 1 click(s)');
    expect(clicks).toBe(1);

    const expected = path.join(SCREENSHOT_DIR, 'browser-helper-after-click.png');
    fs.rmSync(expected, { force: true }); // left by an earlier run
    expect(await browser.screenshot(page, 'after click')).toBe(expected);
    const png = fs.readFileSync(expected);
    expect(png.subarray(0, 8)).toEqual(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]));
    expect(png.length).toBeGreaterThan(1000);
  });

  it('gives each page its own cookies', async () => {
    const first = await browser.newPage();
    await first.goto(baseUrl);
    // Strings, not functions: the project's tsconfig has no DOM types.
    await first.evaluate("document.cookie = 'who=first'");
    const second = await browser.newPage();
    await second.goto(baseUrl);
    expect(await second.evaluate('document.cookie')).toBe('');
    expect(await first.evaluate('document.cookie')).toBe('who=first');
  });

  it('names the missing browser and the install command', () => {
    const missing = '/nonexistent/chromium';
    expect(() => chromiumExecutable({ CHROMIUM_PATH: missing })).toThrow(BrowserMissingError);
    expect(() => chromiumExecutable({ CHROMIUM_PATH: missing })).toThrow(
      /\/nonexistent\/chromium \(from CHROMIUM_PATH\)[\s\S]*bash scripts\/setup-browser\.sh/,
    );
  });
});
