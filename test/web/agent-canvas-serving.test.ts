// Serving Agent Canvas's build (the cached package, scripts/setup-agent-canvas.sh): the package's
// files as published, index.html with one script added that locks Canvas to the address the
// browser used (or PUBLIC_URL) and turns its telemetry off, a Content-Security-Policy that
// allows exactly the page's inline scripts by hash, the caching and framing rules of the web UI,
// nothing before sign-in; a start whose fetch fails serves no UI and says so.
import crypto from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { agentCanvasBuild } from '../helpers/agent-canvas.js';
import { signIn } from '../helpers/session.js';

let app: TestApp;
let dir: string;
let cookie: string;
let original: string;

beforeAll(async () => {
  dir = agentCanvasBuild();
  original = fs.readFileSync(path.join(dir, 'index.html'), 'utf8');
  app = await startTestApp('canvas-serving', { WEB_UI: 'canvas', AGENT_CANVAS_DIR: dir });
  cookie = (await signIn(app, await app.keyFor('canvas-viewer'))).cookie;
});
afterAll(() => app?.stop());

/** A GET with a Host header of our choosing (fetch cannot set one). */
function rawGet(target: string, host: string, headers: Record<string, string> = {}) {
  return new Promise<{ status: number; headers: http.IncomingHttpHeaders; body: string }>((resolve, reject) => {
    const url = new URL(target, app.url);
    const req = http.get({ host: url.hostname, port: url.port, path: url.pathname, headers: { host, ...headers } }, (res) => {
      let body = '';
      res.on('data', (c: Buffer) => (body += c));
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body }));
    });
    req.on('error', reject);
  });
}

const LOCK =
  /<script>\(function\(\)\{window\.__AGENT_CANVAS_LOCK_TO_CLOUD__=("[^"]*");window\.__AGENT_CANVAS_DO_NOT_TRACK__=true;\}\(\)\);<\/script><\/head>/;
const hashOf = (script: string) => `'sha256-${crypto.createHash('sha256').update(script).digest('base64')}'`;

describe('Agent Canvas served by the service', () => {
  it('sends nothing of it before sign-in', async () => {
    const home = await fetch(`${app.url}/`, { headers: { accept: 'text/html' }, redirect: 'manual' });
    expect(home.status).toBe(302);
    expect(home.headers.get('location')).toBe('/signin?next=%2F');
    const asset = original.match(/\/assets\/entry\.client-[^"]+\.js/)![0];
    expect((await fetch(app.url + asset, { headers: { accept: 'application/javascript' } })).status).toBe(401);
    const asPage = await fetch(app.url + asset, { redirect: 'manual' }); // */* reads as a page: sign in first
    expect([asPage.status, asPage.headers.get('location')]).toEqual([302, `/signin?next=${encodeURIComponent(asset)}`]);
  });

  it('serves index.html as published plus the lock to the address the browser used, never cached', async () => {
    const res = await fetch(`${app.url}/`, { headers: { cookie, accept: 'text/html' } });
    expect(res.status).toBe(200);
    expect(res.headers.get('cache-control')).toBe('no-cache, no-store, must-revalidate');
    expect(res.headers.get('x-frame-options')).toBe('SAMEORIGIN');
    expect(res.headers.get('x-content-type-options')).toBe('nosniff');
    const html = await res.text();
    const lock = LOCK.exec(html)!;
    expect(JSON.parse(lock[1]!)).toBe(app.url);
    expect(html.replace(lock[0], '</head>')).toBe(original); // nothing else changed
    // A client route is the same page; another spelling of the host is locked to itself.
    const route = await rawGet('/conversations/0123', new URL(app.url).host.replace('127.0.0.1', 'localhost'), {
      cookie,
      accept: 'text/html',
    });
    expect(JSON.parse(LOCK.exec(route.body)![1]!)).toBe(app.url.replace('127.0.0.1', 'localhost'));
  });

  it('allows its inline scripts by their hashes, no unsafe-inline, framing by itself only', async () => {
    const res = await fetch(`${app.url}/settings/app`, { headers: { cookie, accept: 'text/html' } });
    const csp = res.headers.get('content-security-policy')!;
    const inline = [...(await res.text()).matchAll(/<script\b([^>]*)>([\s\S]*?)<\/script>/g)].filter(([, attrs]) => !/src=/.test(attrs!));
    expect(inline.length).toBeGreaterThan(3);
    const scriptSrc = csp.split(';').find((part) => part.trim().startsWith('script-src'))!;
    for (const [, , body] of inline) expect(scriptSrc).toContain(hashOf(body!));
    expect(csp).toContain("frame-ancestors 'self'");
    expect(csp).toContain("object-src 'none'");
    expect(csp).not.toContain('unsafe-inline');
    expect(csp).not.toContain('unsafe-eval');
  });

  it('serves the files as published: hashed assets immutable for a year, others revalidated, a missing asset 404', async () => {
    for (const asset of fs
      .readdirSync(path.join(dir, 'assets'))
      .filter((f) => f.endsWith('.js'))
      .slice(0, 5)) {
      const res = await fetch(`${app.url}/assets/${asset}`, { headers: { cookie } });
      expect(res.headers.get('cache-control'), asset).toBe('public, max-age=31536000, immutable');
      expect(Buffer.from(await res.arrayBuffer()).equals(fs.readFileSync(path.join(dir, 'assets', asset))), asset).toBe(true);
    }
    const locale = await fetch(`${app.url}/locales/en/openhands.json`, { headers: { cookie } });
    expect(locale.headers.get('cache-control')).toBe('no-cache');
    expect((await fetch(`${app.url}/assets/gone-0123abcd.js`, { headers: { cookie } })).status).toBe(404);
  });

  it('answers a Host that is no host with 400, not a page locked to it', async () => {
    const res = await rawGet('/', 'evil.example"><script>', { cookie, accept: 'text/html' });
    expect(res.status).toBe(400);
    expect(res.body).not.toContain('evil');
  });

  it("answers Canvas's /api/cloud-proxy calls with the 404 Canvas reads as an endpoint missing", async () => {
    const body = JSON.stringify({ host: 'http://127.0.0.1:1', method: 'GET', path: '/api/git/commits', headers: {}, body: null });
    const proxied = (headers: Record<string, string>) =>
      fetch(`${app.url}/api/cloud-proxy`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body });
    const signedIn = await proxied({ cookie, origin: app.url });
    expect(signedIn.status).toBe(404);
    expect(await signedIn.json()).toEqual({ detail: expect.stringContaining('cloud proxy is not available') });
    expect((await proxied({})).status).toBe(401);
  });

  it("answers the Model Router's meta-profile calls as not available here, to a signed-in user only", async () => {
    const base = `${app.url}/api/organizations/${'1'.repeat(32)}/meta-profiles`;
    for (const [method, path] of [
      ['GET', base],
      ['POST', `${base}/fast-and-cheap`],
      ['POST', `${base}/fast-and-cheap/activate`],
      ['DELETE', `${base}/fast-and-cheap`],
    ] as const) {
      const signedIn = await fetch(path, {
        method,
        headers: { cookie, origin: app.url, 'content-type': 'application/json' },
        body: method === 'POST' ? '{}' : undefined,
      });
      expect(signedIn.status, `${method} ${path}`).toBe(404);
      expect(await signedIn.json()).toEqual({ detail: expect.stringContaining('model router (meta-profiles) is not available') });
      expect((await fetch(path, { method })).status).toBe(401);
    }
  });

  it('locks to PUBLIC_URL when it is set', async () => {
    const other = await startTestApp('canvas-public-url', { WEB_UI: 'canvas', AGENT_CANVAS_DIR: dir, PUBLIC_URL: 'https://acp.example/' });
    try {
      const signed = await signIn(other, await other.keyFor('canvas-public'));
      const html = await (await fetch(`${other.url}/`, { headers: { cookie: signed.cookie, accept: 'text/html' } })).text();
      expect(JSON.parse(LOCK.exec(html)![1]!)).toBe('https://acp.example');
    } finally {
      await other.stop();
    }
  });

  it('stops at start for an AGENT_CANVAS_DIR without index.html', async () => {
    const empty = fs.mkdtempSync(path.join(os.tmpdir(), 'acp-canvas-empty-'));
    await expect(startTestApp('canvas-empty', { WEB_UI: 'canvas', AGENT_CANVAS_DIR: empty })).rejects.toThrow(
      /AGENT_CANVAS_DIR .* holds no index\.html/,
    );
    fs.rmSync(empty, { recursive: true, force: true });
  });

  it('starts without a UI, saying so once, when Canvas cannot be fetched', { timeout: 60_000 }, async () => {
    const cache = fs.mkdtempSync(path.join(os.tmpdir(), 'acp-canvas-cache-'));
    const saved = { registry: process.env.npm_config_registry, npmCache: process.env.npm_config_cache };
    // An empty cache and a registry nobody answers at: the first start on a machine without network.
    process.env.npm_config_registry = 'http://127.0.0.1:9/';
    process.env.npm_config_cache = path.join(cache, 'npm');
    const lines: string[] = [];
    try {
      const offline = await startTestApp(
        'canvas-offline',
        { WEB_UI: 'canvas', AGENT_CP_CACHE_DIR: cache, LOG_LEVEL: 'info' },
        { logLines: lines },
      );
      try {
        const signed = await signIn(offline, await offline.keyFor('canvas-offline'));
        const html = await (await fetch(`${offline.url}/`, { headers: { cookie: signed.cookie, accept: 'text/html' } })).text();
        expect(html).toContain('No web UI is served here');
        const said = lines
          .map((line) => JSON.parse(line) as { msg: string; reason?: string })
          .filter((l) => /Agent Canvas|web UI/.test(l.msg));
        expect(said.map((l) => l.msg)).toEqual([
          'fetching the web UI (npm @openhands/agent-canvas, the package tarball only) for the first start',
          'Agent Canvas could not be fetched: starting without a web UI (the API is unaffected)',
        ]);
        expect(said[1]!.reason).toMatch(/npm pack .* failed/);
        expect(fs.existsSync(path.join(cache, 'agent-canvas-1.20.0'))).toBe(false);
      } finally {
        await offline.stop();
      }
    } finally {
      for (const [name, value] of [
        ['npm_config_registry', saved.registry],
        ['npm_config_cache', saved.npmCache],
      ] as const) {
        if (value === undefined) delete process.env[name];
        else process.env[name] = value;
      }
      fs.rmSync(cache, { recursive: true, force: true });
    }
  });
});
