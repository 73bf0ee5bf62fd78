// The device flow's verification page (/oauth/device?user_code=…, docs/browser.md): behind the
// browser sign-in (an unauthenticated visit goes through /signin and comes back), it shows who
// approves what — the signed-in user, the code, and what the requesting device said about
// itself — and posts the decision to POST /oauth/device/verify-authenticated, a cookie request
// under the origin rules of every state change. Everything the device sent is escaped; no
// external assets, and a Content-Security-Policy that allows exactly the page's script and style.
import crypto from 'node:crypto';
import { TRPCError } from '@trpc/server';
import type { NextFunction, Request, Response } from 'express';
import { createCaller } from '../../../routers/index.js';
import type { Deps } from '../../trpc/context.js';
import { createRequestContext } from '../request-context.js';
import { escapeHtml, pageHeaders } from './html.js';

const STYLE = `
  body { font: 16px/1.5 system-ui, sans-serif; background: #f4f5f7; color: #1d2230; margin: 0; }
  main { max-width: 30rem; margin: 10vh auto; background: #fff; padding: 2rem; border-radius: 8px;
         box-shadow: 0 1px 4px rgba(0,0,0,.12); }
  h1 { font-size: 1.35rem; margin: 0 0 1rem; }
  .code { font: 600 1.8rem/1.2 ui-monospace, monospace; letter-spacing: .15em; text-align: center; margin: 1rem 0;
          padding: .6rem; border: 1px dashed #b8bfcc; border-radius: 6px; }
  dl { display: grid; grid-template-columns: max-content 1fr; gap: .25rem 1rem; font-size: .925rem; }
  dt { color: #5b6275; } dd { margin: 0; overflow-wrap: anywhere; }
  .buttons { display: flex; gap: .75rem; margin-top: 1.25rem; }
  button { flex: 1; padding: .6rem; font: inherit; font-weight: 600; border: 0; border-radius: 6px; cursor: pointer; }
  #approve, #continue { color: #fff; background: #2956d6; } #deny { color: #1d2230; background: #e4e7ee; }
  input { box-sizing: border-box; width: 100%; padding: .55rem .65rem; font: inherit; border: 1px solid #b8bfcc; border-radius: 6px; }
  #result { min-height: 1.5em; margin: 1rem 0 0; font-weight: 600; }
  p.hint { color: #5b6275; font-size: .875rem; }
  .link { background: none; color: #2956d6; padding: 0; font-weight: 400; flex: none; }`;

const SCRIPT = `
  const request = document.getElementById('request');
  const result = document.getElementById('result');
  async function decide(action) {
    for (const button of document.querySelectorAll('#request button')) button.disabled = true;
    try {
      const res = await fetch('/oauth/device/verify-authenticated', {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ user_code: request.dataset.code, action }),
        credentials: 'same-origin',
      });
      const body = await res.json().catch(() => ({}));
      if (res.ok) {
        result.textContent = action === 'approve'
          ? 'Approved. Return to your device: it receives a new API key of yours and is signed in.'
          : 'Denied. The device gets no key.';
        result.dataset.status = body.status;
        return;
      }
      result.textContent = typeof body.detail === 'string' ? body.detail : 'That did not work (HTTP ' + res.status + ').';
    } catch (e) {
      result.textContent = 'The service could not be reached.';
    }
  }
  if (request) {
    document.getElementById('approve').addEventListener('click', () => decide('approve'));
    document.getElementById('deny').addEventListener('click', () => decide('deny'));
  }
  document.getElementById('signout').addEventListener('click', async () => {
    await fetch('/api/auth/session', { method: 'DELETE', credentials: 'same-origin' });
    location.reload();
  });`;

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

interface Pending {
  user_code: string;
  client_name: string | null;
  user_agent: string | null;
  requested_from: string | null;
  requested_at: string;
  expires_at: string;
}

function requestSection(pending: Pending): string {
  const row = (label: string, value: string | null, id: string) =>
    `<dt>${label}</dt><dd id="${id}">${value === null ? '<em>not said</em>' : escapeHtml(value)}</dd>`;
  return `<section id="request" data-code="${escapeHtml(pending.user_code)}">
      <p>A device asks to sign in as you. It will receive an <strong>API key of your account</strong>,
         listed and revocable like your other keys.</p>
      <div class="code" id="user-code">${escapeHtml(pending.user_code)}</div>
      <p class="hint">Approve only if you started this sign-in and your device shows this same code.</p>
      <dl>
        ${row('Client', pending.client_name, 'client')}
        ${row('User agent', pending.user_agent, 'user-agent')}
        ${row('From address', pending.requested_from, 'requested-from')}
        ${row('Requested', pending.requested_at, 'requested-at')}
        ${row('Valid until', pending.expires_at, 'expires-at')}
      </dl>
      <div class="buttons"><button id="approve" type="button">Approve</button><button id="deny" type="button">Deny</button></div>
    </section>`;
}

const codeForm = (code: string) => `<form id="code-form" method="get" action="/oauth/device">
      ${code ? '<p id="unknown">This code is unknown, has expired or was already used.</p>' : ''}
      <p>Enter the code your device shows.</p>
      <input id="code-input" name="user_code" autocomplete="off" required value="${escapeHtml(code)}">
      <div class="buttons"><button id="continue" type="submit">Continue</button></div>
    </form>`;

const page = (userId: string, code: string, pending: Pending | null) => `<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <meta name="viewport" content="width=device-width, initial-scale=1">
  <title>Connect a device · Agent control plane</title>
  <style>${STYLE}</style>
</head>
<body>
  <main>
    <h1>Connect a device</h1>
    <p>Signed in as <strong id="user">${escapeHtml(userId)}</strong>
       <button id="signout" class="link" type="button">(not you? sign out)</button></p>
    ${pending ? requestSection(pending) : codeForm(code)}
    <p id="result" role="status"></p>
  </main>
  <script>${SCRIPT}</script>
</body>
</html>`;

export function devicePage(deps: Deps) {
  const requestContext = createRequestContext(deps, 'rest');
  return (req: Request, res: Response, next: NextFunction): void => {
    pageHeaders(res, 'same-origin');
    requestContext(req, res)
      .then(async (ctx) => {
        if (!ctx.user) {
          if (req.accepts(['html', 'json']) === 'html') return res.redirect(302, `/signin?next=${encodeURIComponent(req.originalUrl)}`);
          return void res.status(401).json({ detail: 'Unauthorized' });
        }
        const code = typeof req.query.user_code === 'string' ? req.query.user_code.slice(0, 50) : '';
        let pending: Pending | null = null;
        try {
          pending = code ? await createCaller(ctx).deviceFlow.pending({ user_code: code }) : null;
        } catch (error) {
          // A cookie request another site made (the origin rules), or a NUL in the code: no lookup.
          if (!(error instanceof TRPCError) || !['FORBIDDEN', 'BAD_REQUEST'].includes(error.code)) throw error;
          if (error.code === 'FORBIDDEN') return void res.status(403).json({ detail: 'Forbidden' });
        }
        res.setHeader('content-security-policy', CSP);
        res.type('html').send(page(ctx.user.id, code, pending));
      })
      .catch(next);
  };
}
