// The pages and files browsers ask for, on express (static files, redirects, content
// negotiation): the API docs page, the sign-in page, the device flow's verification page, an
// organisation invitation's page, a public conversation's page and the web UI (or the small home page without one); whatever nothing here takes is the JSON 404.
import type { RequestListener } from 'node:http';
import express from 'express';
import type { Deps } from '../../trpc/context.js';
import { writeRestError, NOT_FOUND } from '../rest/answers.js';
import { devicePage } from './device-page.js';
import { INVITATION_PAGE } from '../../organizations/index.js';
import { invitationPage } from './invitation-page.js';
import { SHARED_PAGE, sharedPage } from './shared-page.js';
import { oidcRoutes } from './oidc-routes.js';
import { docsRouter } from './docs.js';
import type { ServedUi } from './served-ui.js';
import { signInPage } from './signin-page.js';
import { webUi } from './web-ui.js';

export function webRoutes(deps: Deps, ui: ServedUi): RequestListener {
  const web = express();
  web.disable('x-powered-by');
  web.set('etag', false);
  web.use(docsRouter());
  web.get('/signin', signInPage(deps.services.oidc?.buttonLabel ?? null));
  // Agent Canvas's sign-in link (cookie mode on a real hostname): the sign-in page, then back to returnTo.
  web.get('/login', (req, res) => {
    const returnTo = typeof req.query.returnTo === 'string' ? req.query.returnTo : '/';
    res.redirect(302, `/signin?next=${encodeURIComponent(returnTo)}`);
  });
  web.use(oidcRoutes(deps));
  web.get('/oauth/device', devicePage(deps));
  web.get(INVITATION_PAGE, invitationPage(deps));
  web.get(SHARED_PAGE, sharedPage(deps));
  web.use(webUi(deps, ui));
  web.use((_req, res) => writeRestError(res, NOT_FOUND));
  web.use(((error, _req, res, _next) => {
    deps.log.error({ err: error }, 'unhandled error');
    if (!res.headersSent) writeRestError(res, { status: 500, body: { detail: 'Internal Server Error' } });
  }) as express.ErrorRequestHandler);
  return web as unknown as RequestListener;
}
