// OpenID Connect sign-in's two browser stops (docs/oidc.md; the flow: src/services/identity/
// oidc.service.ts): /oauth/oidc/login sends the browser to the provider with a sealed cookie of
// its own; /oauth/oidc/callback finishes there and opens the session; /oauth/oidc/logout sends
// a browser that signed out here on to the provider's sign-out. The callback answers a
// small page that moves on to `next`: the session cookie is SameSite=Strict, and a browser does
// not send it on a redirect chain that began at the provider's site.
import type { Request, Response, Router } from 'express';
import express from 'express';
import { appErrorOf, toTRPCError } from '../../errors.js';
import { OIDC_COOKIE } from '../../services/identity/oidc.service.js';
import type { Deps } from '../../trpc/context.js';
import { browserRequest, configuredOrigins, cookieValue } from '../browser.js';
import { factsOf } from '../pipeline.js';
import { toRestError } from '../rest/legacy-errors.js';
import { sameOriginPath } from './signin-page.js';
import { escapeHtml } from './html.js';

const CALLBACK = '/oauth/oidc/callback';
/** After signing out here: ends the identity provider's session too (RP-initiated logout), then back to sign-in. */
export const OIDC_LOGOUT = '/oauth/oidc/logout';

export function oidcRoutes(deps: Deps): Router {
  const routes = express.Router();
  const trusted = configuredOrigins(deps.config);
  const origin = (req: Request) => deps.config.publicUrl?.replace(/\/+$/, '') ?? `${factsOf(req).protocol}://${req.headers.host}`;
  const cookieFlags = (req: Request) =>
    `; HttpOnly; SameSite=Lax; Path=/oauth/oidc${deps.config.session.cookieSecure || factsOf(req).protocol === 'https' ? '; Secure' : ''}`;

  routes.get('/oauth/oidc/login', async (req, res) => {
    const service = deps.services.oidc;
    if (!service) return failed(res, 404, 'OpenID Connect sign-in is not configured here');
    try {
      const { url, cookie } = await service.begin(origin(req) + CALLBACK, sameOriginPath(req.query.next));
      res.setHeader('set-cookie', `${OIDC_COOKIE}=${encodeURIComponent(cookie)}; Max-Age=600${cookieFlags(req)}`);
      res.setHeader('cache-control', 'no-store');
      res.redirect(302, url);
    } catch (error) {
      answerError(res, error, deps.log);
    }
  });

  // Changes nothing here (the session ended with DELETE /api/auth/session): only sends the browser
  // to the provider's end_session_endpoint, which comes back to the sign-in page; without one, there.
  routes.get(OIDC_LOGOUT, async (req, res) => {
    const service = deps.services.oidc;
    if (!service) return failed(res, 404, 'OpenID Connect sign-in is not configured here');
    res.setHeader('cache-control', 'no-store');
    try {
      res.redirect(302, (await service.endSessionUrl(`${origin(req)}/signin`)) ?? '/signin');
    } catch (error) {
      answerError(res, error, deps.log);
    }
  });

  routes.get(CALLBACK, async (req, res) => {
    const service = deps.services.oidc;
    if (!service) return failed(res, 404, 'OpenID Connect sign-in is not configured here');
    res.setHeader('cache-control', 'no-store');
    const browser = browserRequest(req, res, deps.config, trusted);
    try {
      const opened = await service.finish(
        new URL(req.originalUrl, origin(req)),
        cookieValue(req.headers.cookie, OIDC_COOKIE),
        browser.sessionId,
      );
      res.setHeader('set-cookie', `${OIDC_COOKIE}=; Max-Age=0${cookieFlags(req)}`);
      browser.setSessionCookie(opened.sessionId, Math.floor((opened.expiresAt.getTime() - Date.now()) / 1000));
      deps.services.audit.record({ userId: opened.userId, action: 'oidc.signIn', outcome: 'ok', input: {}, via: 'web' });
      page(res, 200, 'Signed in', `<p>Signed in as ${escapeHtml(opened.userId)}.</p>`, opened.next);
    } catch (error) {
      // A refused sign-in is nobody's yet, as a refused key sign-in ("-").
      deps.services.audit.record({
        userId: '-',
        action: 'oidc.signIn',
        outcome: appErrorOf(error)?.code ?? 'INTERNAL_SERVER_ERROR',
        input: {},
        via: 'web',
      });
      answerError(res, error, deps.log);
    }
  });
  return routes;
}

function answerError(res: Response, error: unknown, log: Deps['log']): void {
  const appError = appErrorOf(error);
  if (!appError) {
    log.error({ err: error }, 'OIDC sign-in failed');
    return failed(res, 500, 'Sign-in failed');
  }
  failed(res, toRestError(toTRPCError(appError), 'auth.signIn').status, appError.message);
}

function failed(res: Response, status: number, message: string): void {
  page(res, status, 'Sign-in failed', `<p>${escapeHtml(message)}</p><p><a href="/signin">Back to sign-in</a></p>`);
}

function page(res: Response, status: number, title: string, body: string, next?: string): void {
  const refresh = next ? `<meta http-equiv="refresh" content="0;url=${escapeHtml(next)}">` : '';
  res.setHeader('content-security-policy', "default-src 'none'; frame-ancestors 'none'; base-uri 'none'");
  res.setHeader('x-frame-options', 'DENY');
  res
    .status(status)
    .type('html')
    .send(`<!doctype html><html lang="en"><head><meta charset="utf-8">${refresh}<title>${title}</title></head><body>${body}</body></html>`);
}
