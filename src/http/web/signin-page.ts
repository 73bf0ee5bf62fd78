// The sign-in page: one field for an API key, posted with fetch to POST /api/auth/session on
// the same origin, then on to ?next=<path>. The server decides where that is (sameOriginPath:
// same-origin paths only; anything else → /) and writes it into the page. No external assets;
// the Content-Security-Policy allows exactly the page's own script and style.
import crypto from 'node:crypto';
import type { Request, Response } from 'express';
import { escapeHtml, pageHeaders } from './html.js';

const STYLE = `
  body { font: 16px/1.5 system-ui, sans-serif; background: #f4f5f7; color: #1d2230; margin: 0; }
  main { max-width: 26rem; margin: 12vh auto; background: #fff; padding: 2rem; border-radius: 8px;
         box-shadow: 0 1px 4px rgba(0,0,0,.12); }
  h1 { font-size: 1.35rem; margin: 0 0 1rem; }
  label { display: block; font-weight: 600; margin-bottom: .35rem; }
  input { box-sizing: border-box; width: 100%; padding: .55rem .65rem; font: inherit; border: 1px solid #b8bfcc; border-radius: 6px; }
  button { margin-top: 1rem; width: 100%; padding: .6rem; font: inherit; font-weight: 600; color: #fff;
           background: #2956d6; border: 0; border-radius: 6px; cursor: pointer; }
  #error { color: #b42318; min-height: 1.5em; margin: .75rem 0 0; }
  p.hint { color: #5b6275; font-size: .875rem; }
  a.oidc { display: block; text-align: center; padding: .6rem; border: 1px solid #2956d6; border-radius: 6px; color: #2956d6;
           font-weight: 600; text-decoration: none; }`;

const SCRIPT = `
  const form = document.getElementById('signin');
  const error = document.getElementById('error');
  // Where to go after signing in: checked by the server (a path on this origin), checked again here.
  function target() {
    const next = form.dataset.next || '/';
    return /^\\/(?![\\/\\\\])/.test(next) ? next : '/';
  }
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    error.textContent = '';
    const apiKey = document.getElementById('api-key').value.trim();
    try {
      const res = await fetch('/api/auth/session', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ api_key: apiKey }),
        credentials: 'same-origin',
      });
      if (res.ok) {
        location.assign(target());
        return;
      }
      error.textContent = res.status === 401 ? 'That API key is not valid.' : 'Sign-in failed (HTTP ' + res.status + ').';
    } catch (e) {
      error.textContent = 'The service could not be reached.';
    }
  });`;

const page = (next: string, oidcLabel: string | null) => `<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <meta name="viewport" content="width=device-width, initial-scale=1">
  <title>Sign in · Agent control plane</title>
  <style>${STYLE}</style>
</head>
<body>
  <main>
    <h1>Sign in</h1>
    <form id="signin" data-next="${escapeHtml(next)}">
      <label for="api-key">API key</label>
      <input id="api-key" name="api_key" type="password" autocomplete="current-password" required autofocus>
      <button type="submit">Sign in</button>
      <p id="error" role="alert"></p>
    </form>
    ${
      oidcLabel
        ? `<p><a class="oidc" id="oidc" href="/oauth/oidc/login?next=${encodeURIComponent(next)}">${escapeHtml(oidcLabel)}</a></p>`
        : ''
    }
    <p class="hint">Ask your operator for a key (<code>npm run cli -- keys create --user &lt;you&gt;</code>).</p>
  </main>
  <script>${SCRIPT}</script>
</body>
</html>`;

const hash = (text: string) => `'sha256-${crypto.createHash('sha256').update(text).digest('base64')}'`;

const CSP = [
  "default-src 'none'",
  `script-src ${hash(SCRIPT)}`,
  `style-src ${hash(STYLE)}`,
  "connect-src 'self'",
  "form-action 'self'",
  "frame-ancestors 'none'",
  "base-uri 'none'",
].join('; ');

const BASE = 'http://signin.invalid';
/** Starts with one "/" and not "//" or "/\\" (which browsers read as another host). */
const LOCAL_PATH = /^\/(?![/\\])/;

/**
 * The path to go to after signing in: `next` when it is a path on this origin, else "/". What
 * a browser would make of it decides: "/.//evil.com" resolves to "//evil.com" (another host),
 * tabs and newlines vanish, "\\" is "/"; a path whose decoded form starts like another host
 * ("/%2F%2Fevil.com") and anything with a scheme are refused as well.
 */
export function sameOriginPath(next: unknown): string {
  if (typeof next !== 'string' || next.length > 2048 || !LOCAL_PATH.test(next) || /[\x00-\x20\x7f\\]/.test(next)) return '/';
  let url: URL;
  let decoded: string;
  try {
    url = new URL(next, BASE);
    decoded = decodeURIComponent(url.pathname);
  } catch {
    return '/';
  }
  const resolved = url.pathname + url.search + url.hash;
  return url.origin === BASE && LOCAL_PATH.test(resolved) && LOCAL_PATH.test(decoded) ? resolved : '/';
}

/** The page; with OIDC configured, a link to sign in at the identity provider beside the key field. */
export const signInPage =
  (oidcLabel: string | null) =>
  (req: Request, res: Response): void => {
    res.setHeader('content-security-policy', CSP);
    pageHeaders(res, 'same-origin');
    res.type('html').send(page(sameOriginPath(req.query.next), oidcLabel));
  };
