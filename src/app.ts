// createApp(deps): the express application, without listening (tests start it on port 0).
//
// Order matters:
//   request log/metrics → CORS → health and docs (open) → /trpc (tRPC parses its own body)
//   → /api body parsing and legacy shims → REST handler → JSON 404 → error handler.
import crypto from 'node:crypto';
import { createExpressMiddleware } from '@trpc/server/adapters/express';
import express, { type ErrorRequestHandler, type NextFunction, type Request, type RequestHandler, type Response } from 'express';
import { appRouter } from '../routers/index.js';
import { createContextFactory, type Deps } from './context.js';
import { docsRouter } from './rest/docs.js';
import { openApiDocument } from './rest/openapi-document.js';
import { sandboxSpecIdFromQuery } from './rest/legacy-shims.js';
import { rawRoutes } from './rest/raw-routes.js';
import { createRestHandler } from './rest/openapi-handler.js';

const BODY_METHODS = new Set(['POST', 'PUT', 'PATCH']);

export function createApp(deps: Deps): express.Express {
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);

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
  app.get('/api/openapi.json', (_req, res) => {
    res.json(openApiDocument());
  });
  app.use(docsRouter());

  app.use(
    '/trpc',
    createExpressMiddleware({
      router: appRouter,
      createContext: createContextFactory(deps, 'trpc'),
      maxBodySize: parseSize(deps.config.http.maxBodySize),
    }),
  );

  app.use('/api', noCache, defaultJsonContentType, express.json({ limit: deps.config.http.maxBodySize, strict: false }));
  app.use(rawRoutes(deps)); // before the object-body check: the events webhook takes a JSON array
  app.use('/api', requireJsonObject, sandboxSpecIdFromQuery);
  app.use(createRestHandler(deps));

  app.use((_req, res) => {
    res.status(404).json({ detail: 'Not Found' });
  });
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

function noCache(_req: Request, res: Response, next: NextFunction): void {
  res.setHeader('cache-control', 'no-cache, no-store, must-revalidate, max-age=0');
  res.setHeader('pragma', 'no-cache');
  res.setHeader('expires', '0');
  next();
}

/** Legacy: the reference parses a body sent without a content type as JSON (FastAPI). */
function defaultJsonContentType(req: Request, _res: Response, next: NextFunction): void {
  if (BODY_METHODS.has(req.method) && !req.headers['content-type']) req.headers['content-type'] = 'application/json';
  next();
}

/** A JSON body must be an object; the adapter would otherwise spread a string or array into one. */
function requireJsonObject(req: Request, res: Response, next: NextFunction): void {
  if (
    BODY_METHODS.has(req.method) &&
    req.is('application/json') &&
    (typeof req.body !== 'object' || req.body === null || Array.isArray(req.body))
  ) {
    res.status(422).json({
      detail: [
        { type: 'model_attributes_type', loc: ['body'], msg: 'Input should be a valid dictionary or object to extract fields from' },
      ],
    });
    return;
  }
  next();
}

function errorHandler(deps: Deps): ErrorRequestHandler {
  return (err: { type?: string; status?: number; message?: string }, req, res, _next) => {
    if (res.headersSent) return;
    if (err.type === 'entity.too.large') {
      res.status(413).json({ detail: `Request body too large (limit ${deps.config.http.maxBodySize})` });
      return;
    }
    if (err.type === 'entity.parse.failed') {
      res.status(422).json({ detail: [{ type: 'json_invalid', loc: ['body'], msg: 'JSON decode error' }] });
      return;
    }
    if (typeof err.status === 'number' && err.status >= 400 && err.status < 500) {
      res.status(err.status).json({ detail: err.message ?? 'Bad Request' });
      return;
    }
    ((req as Request & { log?: Deps['log'] }).log ?? deps.log).error({ err }, 'unhandled error');
    res.status(500).json({ detail: 'Internal Server Error' });
  };
}

function parseSize(size: string): number {
  const match = /^(\d+)(b|kb|mb)?$/i.exec(size);
  const n = Number(match?.[1] ?? 1_000_000);
  const unit = (match?.[2] ?? 'b').toLowerCase();
  return n * (unit === 'mb' ? 1024 * 1024 : unit === 'kb' ? 1024 : 1);
}
