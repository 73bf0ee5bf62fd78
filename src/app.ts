// createApp(deps): the express application, without listening (tests start it on port 0).
//
// Order matters:
//   request log/metrics → CORS → health and metrics (open, unlimited) → /trpc (src/trpc-edge.ts)
//   → the REST edge (src/rest/) → the sign-in page and web UI (src/web/) → JSON 404 → error handler.
import crypto from 'node:crypto';
import express, { type Request, type RequestHandler } from 'express';
import type { Deps } from './context.js';
import { errorHandler, notFound, restApi } from './rest/index.js';
import { trpcApi } from './trpc-edge.js';
import { webRoutes } from './web/index.js';

export function createApp(deps: Deps): express.Express {
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  // Which proxies may name the client address (X-Forwarded-For: the per-IP rate limit) and its
  // protocol and host (X-Forwarded-Proto/-Host: the session cookie's Secure flag, origin checks).
  app.set('trust proxy', deps.config.http.trustProxy);

  app.use(requestLog(deps));
  app.use(cors(deps.config.http.corsOrigins));

  app.get('/alive', (_req, res) => {
    res.json({ status: 'ok' });
  });
  app.get('/health', (_req, res) => {
    res.json('OK'); // reference answers the JSON string "OK"
  });
  app.get('/ready', async (_req, res) => {
    const database = await deps.db.ping();
    res.status(database ? 200 : 503).json({ status: database ? 'ready' : 'not ready', checks: { database } });
  });
  app.get('/metrics', async (_req, res) => {
    res.type(deps.metrics.registry.contentType).send(await deps.metrics.registry.metrics());
  });

  app.use('/trpc', trpcApi(deps));

  app.use(restApi(deps));
  app.use(webRoutes(deps));
  app.use(notFound);
  app.use(errorHandler(deps));
  return app;
}

function requestLog(deps: Deps): RequestHandler {
  return (req, res, next) => {
    const started = performance.now();
    const id = (typeof req.headers['x-request-id'] === 'string' && req.headers['x-request-id'].slice(0, 128)) || crypto.randomUUID();
    res.setHeader('x-request-id', id);
    const log = deps.log.child({ reqId: id });
    (req as Request & { log: typeof log }).log = log;
    res.on('finish', () => {
      const group = req.path.startsWith('/trpc') ? 'trpc' : req.path.startsWith('/api') ? 'api' : 'other';
      deps.metrics.httpRequests.inc({ method: req.method, route: group, status: String(res.statusCode) });
      // Path only: query strings and headers may carry credentials.
      log.info(
        { method: req.method, path: req.path, status: res.statusCode, durationMs: Math.round(performance.now() - started) },
        'request',
      );
    });
    next();
  };
}

/** Reference behaviour: localhost origins unless PERMITTED_CORS_ORIGINS lists others. */
function cors(permitted: string[]): RequestHandler {
  const allowed = (origin: string) =>
    permitted.length > 0 ? permitted.includes(origin) : /^https?:\/\/(localhost|127\.0\.0\.1)(:\d+)?$/.test(origin);
  return (req, res, next) => {
    const origin = req.headers.origin;
    if (origin && allowed(origin)) {
      res.setHeader('access-control-allow-origin', origin);
      res.setHeader('access-control-allow-credentials', 'true');
      res.setHeader('vary', 'Origin');
      if (req.method === 'OPTIONS') {
        res.setHeader('access-control-allow-methods', 'GET,POST,PUT,PATCH,DELETE,OPTIONS');
        res.setHeader('access-control-allow-headers', req.headers['access-control-request-headers'] ?? '*');
        res.status(204).end();
        return;
      }
    }
    next();
  };
}
