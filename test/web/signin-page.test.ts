// The sign-in page and the redirect of unauthenticated browsers, over HTTP (the browser test
// in test/browser/signin.test.ts drives the same page in chromium).
import crypto from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, startTestApp, type TestApp } from '../helpers/app.js';
import { signIn } from '../helpers/session.js';

let app: TestApp;

beforeAll(async () => {
  app = await startTestApp('signin-page');
});
afterAll(() => app.stop());

describe('GET /signin', () => {
  it('serves a self-contained page whose policy allows exactly its own script and style', async () => {
    const res = await fetch(`${app.url}/signin?next=%2Fsettings`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/html/);
    expect(res.headers.get('cache-control')).toBe('no-store');
    expect(res.headers.get('x-frame-options')).toBe('DENY');
    const html = await res.text();
    expect(html).toContain('<input id="api-key" name="api_key" type="password"');
    expect(html).not.toMatch(/\s(src|href)=/); // no external assets
    const script = /<script>([\s\S]*?)<\/script>/.exec(html)![1]!;
    const style = /<style>([\s\S]*?)<\/style>/.exec(html)![1]!;
    expect(() => new Function(script)).not.toThrow(); // the page's script parses (it is built in a template string)
    const sha = (text: string) => `'sha256-${crypto.createHash('sha256').update(text).digest('base64')}'`;
    const csp = res.headers.get('content-security-policy')!;
    expect(csp).toContain(`script-src ${sha(script)}`);
    expect(csp).toContain(`style-src ${sha(style)}`);
    expect(csp).toContain("default-src 'none'");
    expect(csp).toContain("connect-src 'self'");
  });
});

describe('GET / without a web UI', () => {
  it('sends an unauthenticated browser to the sign-in page', async () => {
    const res = await fetch(`${app.url}/?tab=1`, { headers: { accept: 'text/html,application/xhtml+xml' }, redirect: 'manual' });
    expect(res.status).toBe(302);
    expect(res.headers.get('location')).toBe('/signin?next=%2F%3Ftab%3D1');
  });

  it('answers 401 to a non-browser client', async () => {
    expect(await call(app, 'GET', '/', { headers: { accept: 'application/json' } })).toMatchObject({
      status: 401,
      body: { detail: 'Unauthorized' },
    });
  });

  it('shows a signed-in browser who it is and where the API is', async () => {
    const key = await app.keyFor('orian@example.com');
    const { cookie } = await signIn(app, key);
    const res = await fetch(`${app.url}/`, { headers: { cookie, accept: 'text/html' } });
    expect(res.status).toBe(200);
    const html = await res.text();
    expect(html).toContain('Signed in as <strong id="user">orian@example.com</strong>');
    expect(html).toContain('WEB_UI=none');
  });

  it('serves no single-page-app paths (they stay JSON 404s)', async () => {
    const key = await app.keyFor('someone');
    expect(await call(app, 'GET', '/settings', { key })).toMatchObject({ status: 404, body: { detail: 'Not Found' } });
  });
});
