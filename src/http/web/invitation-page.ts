// The page an invitation link opens (/invitations/accept?token=…, docs/organizations.md): behind
// the browser sign-in (a signed-out visit goes through /signin and comes back), it shows which
// organisation invites the signed-in user and with which role; "Join" posts the token to
// POST /api/organizations/members/invite/accept (a cookie request under the origin rules of every
// state change), makes the organisation the current one and opens the web UI. Opening the link
// changes nothing by itself. No external assets; the CSP allows exactly the page's script.
import crypto from 'node:crypto';
import type { NextFunction, Request, Response } from 'express';
import type { Deps } from '../../trpc/context.js';
import { createRequestContext } from '../request-context.js';
import { escapeHtml, pageHeaders } from './html.js';

const SCRIPT = `
  const offer = document.getElementById('offer');
  const result = document.getElementById('result');
  document.getElementById('join')?.addEventListener('click', async (event) => {
    event.target.disabled = true;
    const post = (path, body) => fetch(path, {
      method: 'POST', credentials: 'same-origin', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body),
    });
    try {
      const res = await post('/api/organizations/members/invite/accept', { token: offer.dataset.token });
      const body = await res.json().catch(() => ({}));
      if (!res.ok) { result.textContent = MESSAGES[body.detail] || 'That did not work (HTTP ' + res.status + ').'; return; }
      await post('/api/organizations/' + encodeURIComponent(body.org_id) + '/switch', {});
      location.assign('/');
    } catch (e) {
      result.textContent = 'The service could not be reached.';
    }
  });
  const MESSAGES = {
    invitation_invalid: 'This invitation was already used or revoked.',
    invitation_expired: 'This invitation has expired: ask for a new one.',
    email_mismatch: 'This invitation is for another email address: sign in as that person.',
    already_member: 'You are a member already.',
  };`;

const CSP = [
  "default-src 'none'",
  `script-src 'sha256-${crypto.createHash('sha256').update(SCRIPT).digest('base64')}'`,
  "connect-src 'self'",
  "frame-ancestors 'none'",
  "base-uri 'none'",
].join('; ');

const TOKEN = /^inv-[0-9A-Za-z]{48}$/;

export function invitationPage(deps: Deps) {
  const requestContext = createRequestContext(deps, 'rest');
  return (req: Request, res: Response, next: NextFunction): void => {
    pageHeaders(res, 'no-referrer'); // the token is in this page's URL
    requestContext(req, res)
      .then(async (ctx) => {
        if (!ctx.user) return res.redirect(302, `/signin?next=${encodeURIComponent(req.originalUrl)}`);
        const token = typeof req.query.token === 'string' && TOKEN.test(req.query.token) ? req.query.token : null;
        const offer = token ? await deps.services.orgInvitations.peek(token) : null;
        const body = !offer
          ? '<p id="unknown">This invitation is unknown, was already used or was revoked.</p>'
          : offer.state === 'expired'
            ? '<p id="expired">This invitation has expired: ask for a new one.</p>'
            : `<section id="offer" data-token="${escapeHtml(token!)}">
      <p><strong id="org">${escapeHtml(offer.orgName)}</strong> invites <strong>${escapeHtml(offer.email)}</strong>
         to join as <strong id="role">${escapeHtml(offer.role)}</strong>.</p>
      <button id="join" type="button">Join</button>
    </section>`;
        res.setHeader('content-security-policy', CSP);
        res.type('html').send(`<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><title>Join an organization</title></head>
<body>
  <h1>Join an organization</h1>
  <p>Signed in as <strong id="user">${escapeHtml(ctx.user.id)}</strong>.</p>
  ${body}
  <p id="result" role="status"></p>
  <script>${SCRIPT}</script>
</body>
</html>`);
      })
      .catch(next);
  };
}
