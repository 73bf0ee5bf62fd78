// The page at / when no web UI is served (WEB_UI=none, or Agent Canvas could not be fetched at
// start): who is signed in, where the API and its docs are, and a sign-out button. No external
// assets.
import crypto from 'node:crypto';
import type { Request, Response } from 'express';
import { escapeHtml } from './html.js';

const SCRIPT = `
  document.getElementById('signout').addEventListener('click', async () => {
    await fetch('/api/auth/session', { method: 'DELETE', credentials: 'same-origin' });
    location.assign(document.getElementById('signout').dataset.next);
  });`;

const CSP = `default-src 'none'; script-src 'sha256-${crypto.createHash('sha256').update(SCRIPT).digest('base64')}'; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'`;

/** signOutTo: where the browser goes once signed out (the identity provider's sign-out, with OpenID Connect). */
export function homePage(_req: Request, res: Response, userId: string, signOutTo = '/signin'): void {
  res.setHeader('content-security-policy', CSP);
  res.setHeader('cache-control', 'no-cache, no-store, must-revalidate');
  res.type('html').send(`<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><title>Agent control plane</title></head>
<body>
  <h1>Agent control plane</h1>
  <p>Signed in as <strong id="user">${escapeHtml(userId)}</strong>.</p>
  <p>No web UI is served here (<code>WEB_UI=none</code>, or Agent Canvas could not be fetched at start:
     the service's log says why). The API is documented at <a href="/api/docs">/api/docs</a>.</p>
  <button id="signout" type="button" data-next="${escapeHtml(signOutTo)}">Sign out</button>
  <script>${SCRIPT}</script>
</body>
</html>`);
}
