// The browser side of the service, next to the API on one origin: the web UI chosen at start
// (served-ui.ts: Agent Canvas, or the OpenHands d6 frontend built into WEB_UI_DIR), or without
// one a small page.
//   - Files of the build are served as they are: hashed assets cached for a year (immutable),
//     everything else revalidated.
//   - Every other GET that is not an API path is the single-page app: index.html, never cached
//     (Canvas's with this service's settings added at serve time: agent-canvas.ts).
//   - Nothing of the build is served before sign-in (the sign-in page needs none of it):
//     unauthenticated visitors asking for a page (Accept: text/html) go to /signin?next=<path>;
//     other unauthenticated requests get 401. Paths are normalised before any check, so
//     "/locales/../index.html" is "/index.html".
//   - Every answer may be framed only by this origin, and its content type is not sniffed.
import path from 'node:path';
import express, { type NextFunction, type Request, type Response, type Router } from 'express';
import type { Deps } from '../../trpc/context.js';
import { createRequestContext } from '../request-context.js';
import { writeRestError } from '../rest/answers.js';
import { factsOf } from '../pipeline.js';
import { loadCanvasIndex, requestOrigin } from './agent-canvas.js';
import { homePage } from './home-page.js';
import { OIDC_LOGOUT } from './oidc-routes.js';
import type { ServedUi } from './served-ui.js';

/** Paths the UI never answers (the API, tRPC, operations): they fall through to the JSON 404. */
const NOT_UI = /^\/(api|trpc|oauth|alive|health|ready|metrics|docs)(\/|$)/i;
/** Vite/React Router put content-hashed files ("entry.client-B4xk9Qz1.js") under assets/. */
const HASHED_ASSET = /^assets\/(.+\/)?[^/]*[.-][A-Za-z0-9_-]{8,}\.(js|mjs|css|woff2?|ttf|svg|png|jpe?g|webp|gif|ico|wasm|json)$/;
const YEAR_SECONDS = 365 * 24 * 3600;

/** The path a file server makes of the request's: decoded and normalised; null when undecodable. */
function normalisedPath(requestPath: string): string | null {
  try {
    const decoded = decodeURIComponent(requestPath);
    return decoded.includes('\0') ? null : path.posix.normalize(decoded);
  } catch {
    return null;
  }
}

/** Clickjacking and MIME sniffing: only our own pages may frame the UI, and types are as sent. */
function uiHeaders(res: Response): void {
  res.setHeader('content-security-policy', "frame-ancestors 'self'");
  res.setHeader('x-frame-options', 'SAMEORIGIN');
  res.setHeader('x-content-type-options', 'nosniff');
}

export function webUi(deps: Deps, served: ServedUi): Router {
  const ui = express.Router();
  const requestContext = createRequestContext(deps, 'rest');
  const root = served.kind === 'none' ? null : served.root;
  const isPage = (req: Request, normal: string) => (req.method === 'GET' || req.method === 'HEAD') && !NOT_UI.test(normal);

  /** Serves a page to a signed-in user; sends anyone else to the sign-in page. */
  const page = (serve: (req: Request, res: Response, userId: string) => void) => (req: Request, res: Response, next: NextFunction) => {
    requestContext(req, res)
      .then(({ user }) => {
        if (user) serve(req, res, user.id);
        else if (req.accepts(['html', 'json']) === 'html') res.redirect(302, `/signin?next=${encodeURIComponent(req.originalUrl)}`);
        else res.status(401).json({ detail: 'Unauthorized' });
      })
      .catch(next);
  };

  if (!root) {
    const signOutTo = deps.services.oidc ? OIDC_LOGOUT : '/signin';
    ui.get('/', (req, res, next) => (uiHeaders(res), page((q, s, user) => homePage(q, s, user, signOutTo))(req, res, next)));
    return ui;
  }

  const files = express.static(root, {
    index: false,
    dotfiles: 'ignore',
    setHeaders: (response, file) => {
      const hashed = HASHED_ASSET.test(path.relative(root, file).split(path.sep).join('/'));
      response.setHeader('cache-control', hashed ? `public, max-age=${YEAR_SECONDS}, immutable` : 'no-cache');
    },
  });
  const canvas = served.kind === 'canvas' ? loadCanvasIndex(root) : null;
  const publicOrigin = deps.config.publicUrl ? new URL(deps.config.publicUrl).origin : null;
  const sendIndex = (req: Request, res: Response) => {
    res.setHeader('cache-control', 'no-cache, no-store, must-revalidate');
    // Relative to root: send refuses a path with a dot-folder in it (a build under ~/.cache).
    if (!canvas) return res.sendFile('index.html', { root, etag: false, lastModified: false });
    // Locked to the address people open: PUBLIC_URL, else the one this request reached.
    const origin = publicOrigin ?? requestOrigin(factsOf(req).protocol, req.headers.host);
    if (!origin) return writeRestError(res, { status: 400, body: { detail: 'Bad Request' } });
    const page = canvas.render(origin);
    res.setHeader('content-security-policy', page.csp);
    res.type('html').send(page.html);
  };
  ui.use((req, res, next) => {
    const normal = normalisedPath(req.path);
    if (normal === null || !isPage(req, normal)) return next();
    uiHeaders(res);
    page(() => {
      if (normal === '/index.html') return sendIndex(req, res);
      files(req, res, () => {
        // A missing file name with an extension (a stale asset) is a 404, not the app's HTML.
        if (path.extname(normal) !== '') return next();
        sendIndex(req, res);
      });
    })(req, res, next);
  });
  return ui;
}
