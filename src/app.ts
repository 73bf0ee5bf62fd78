// createApp(deps): the request listener, without listening (tests start it on port 0).
//
// Every request: request id, access log and metrics → CORS. Then, on plain node:http:
//   health and metrics (open, unlimited) → /trpc (src/trpc-edge.ts) → the REST procedure
//   lane (src/rest/procedure-lane.ts);
// anything else goes to express: the rest of the REST edge (OpenAPI document, docs, upload
// and raw routes) → the sign-in page and web UI (src/web/) → JSON 404 → error handler. The hot
// requests skip express because its per-request setup (swapping the prototypes of req and
// res, its router) cost more CPU than the whole settings read it wraps (README, "Performance").
import crypto from 'node:crypto';
import type { IncomingMessage, RequestListener, ServerResponse } from 'node:http';
import express from 'express';
import type { Deps } from './context.js';
import { accessLogOf } from './logger.js';
import { errorHandler, notFound, procedureLane, rawRoutes, restRoutes, uploadRoute } from './rest/index.js';
import { trpcHandler } from './trpc-edge.js';
import { webRoutes } from './web/index.js';

export function createApp(deps: Deps): RequestListener {
  const raw = rawRoutes(deps);
  const upload = uploadRoute(deps);
  const fallback = express();
  fallback.disable('x-powered-by');
  fallback.set('etag', false);
  // Which proxies may name the client address (X-Forwarded-For: the per-IP rate limit) and its
  // protocol (X-Forwarded-Proto: the session cookie's Secure flag, the own origin's scheme).
  fallback.set('trust proxy', deps.config.http.trustProxy);
  fallback.use(restRoutes(deps, raw, upload));
  fallback.use(webRoutes(deps));
  fallback.use(notFound);
  fallback.use(errorHandler(deps));

  const observe = requestObserver(deps);
  const preflight = cors(deps.config.http.corsOrigins);
  const forwarded = forwardedFacts(fallback.get('trust proxy fn') as TrustProxy);
  const health = healthRoutes(deps);
  const trpc = trpcHandler(deps);
  const lane = procedureLane(deps, [raw, upload]);
  return (req, res) => {
    try {
      observe(req, res);
      if (preflight(req, res)) return;
      const url = req.url ?? '/';
      const queryAt = url.indexOf('?');
      const pathname = queryAt < 0 ? url : url.slice(0, queryAt);
      if (health(req, res, pathname)) return;
      forwarded.set(req);
      if (/^\/trpc(\/|$)/i.test(pathname)) return trpc(req, res, pathname);
      if (lane(req, res, pathname, queryAt < 0 ? '' : url.slice(queryAt + 1))) return;
      forwarded.unset(req); // express's own getters answer for the requests it serves
      fallback(req, res);
    } catch (error) {
      failed(deps, req, res, error);
    }
  };
}

type TrustProxy = (address: string | undefined, hop: number) => boolean;

/**
 * The request's client address and protocol as express reads them (X-Forwarded-For and -Proto
 * only from a trusted proxy, with express's own TRUST_PROXY rule), for the requests served
 * without it: the per-IP rate limit and the session cookie's Secure flag read them.
 * X-Forwarded-Host counts nowhere (src/browser-session.ts).
 */
function forwardedFacts(trust: TrustProxy) {
  const first = (value: string | string[] | undefined) => {
    const text = Array.isArray(value) ? value[0] : value;
    const comma = text?.indexOf(',') ?? -1;
    return comma >= 0 ? text!.slice(0, comma).trim() : text?.trim();
  };
  return {
    set(req: IncomingMessage) {
      const trusted = trust(req.socket.remoteAddress, 0);
      const own = (req.socket as { encrypted?: boolean }).encrypted ? 'https' : 'http';
      const protocol = (trusted && first(req.headers['x-forwarded-proto'])) || own;
      Object.assign(req, { protocol, ip: clientAddress(req, trust) });
    },
    unset(req: IncomingMessage) {
      delete (req as { protocol?: string }).protocol;
      delete (req as { ip?: string }).ip;
    },
  };
}

/**
 * The socket's address, then X-Forwarded-For from its last entry back, for as long as each
 * address passed is a trusted proxy (the rule express's req.ip applies).
 */
function clientAddress(req: IncomingMessage, trust: TrustProxy): string | undefined {
  const header = req.headers['x-forwarded-for'];
  const forwardedFor = typeof header === 'string' ? header.split(',').map((a) => a.trim()) : [];
  const chain = [req.socket.remoteAddress, ...forwardedFor.reverse()];
  let hop = 0;
  while (hop < chain.length - 1 && trust(chain[hop], hop)) hop += 1;
  return chain[hop];
}

/** An unexpected failure outside a procedure: logged, answered 500 (as express's error handler did). */
function failed(deps: Deps, req: IncomingMessage, res: ServerResponse, error: unknown): void {
  ((req as { log?: Deps['log'] }).log ?? deps.log).error({ err: error }, 'unhandled error');
  if (!res.headersSent) sendJson(res, 500, { detail: 'Internal Server Error' });
  else res.destroy();
}

function requestObserver(deps: Deps) {
  const access = accessLogOf(deps.log);
  return (req: IncomingMessage, res: ServerResponse) => {
    const started = performance.now();
    const header = req.headers['x-request-id'];
    const id = (typeof header === 'string' && header.slice(0, 128)) || crypto.randomUUID();
    res.setHeader('x-request-id', id);
    (req as IncomingMessage & { log: Deps['log'] }).log = deps.log.child({ reqId: id });
    res.on('finish', () => {
      const url = req.url ?? '/';
      const queryAt = url.indexOf('?');
      // Path only: query strings and headers may carry credentials.
      const path = queryAt < 0 ? url : url.slice(0, queryAt);
      const group = path.startsWith('/trpc') ? 'trpc' : path.startsWith('/api') ? 'api' : 'other';
      deps.metrics.httpRequests.inc({ method: req.method, route: group, status: String(res.statusCode) });
      access({ reqId: id, method: req.method ?? '', path, status: res.statusCode, durationMs: Math.round(performance.now() - started) });
    });
  };
}

/** Reference behaviour: localhost origins unless PERMITTED_CORS_ORIGINS lists others. True when it answered a preflight. */
function cors(permitted: string[]) {
  const allowed = (origin: string) =>
    permitted.length > 0 ? permitted.includes(origin) : /^https?:\/\/(localhost|127\.0\.0\.1)(:\d+)?$/.test(origin);
  return (req: IncomingMessage, res: ServerResponse): boolean => {
    const origin = req.headers.origin;
    if (!origin || !allowed(origin)) return false;
    res.setHeader('access-control-allow-origin', origin);
    res.setHeader('access-control-allow-credentials', 'true');
    res.setHeader('vary', 'Origin');
    if (req.method !== 'OPTIONS') return false;
    res.setHeader('access-control-allow-methods', 'GET,POST,PUT,PATCH,DELETE,OPTIONS');
    res.setHeader('access-control-allow-headers', req.headers['access-control-request-headers'] ?? '*');
    res.statusCode = 204;
    res.end();
    return true;
  };
}

const sendJson = (res: ServerResponse, status: number, value: unknown) => {
  const text = JSON.stringify(value);
  res.statusCode = status;
  res.setHeader('Content-Type', 'application/json; charset=utf-8');
  res.setHeader('Content-Length', Buffer.byteLength(text));
  res.end(text);
};

/** GET (and HEAD) of /alive, /health, /ready and /metrics; true when it answered. */
function healthRoutes(deps: Deps) {
  return (req: IncomingMessage, res: ServerResponse, pathname: string): boolean => {
    if (req.method !== 'GET' && req.method !== 'HEAD') return false;
    // Paths match as express matched them: any case, a trailing slash allowed.
    switch (pathname.toLowerCase().replace(/\/$/, '')) {
      case '/alive':
        sendJson(res, 200, { status: 'ok' });
        return true;
      case '/health':
        sendJson(res, 200, 'OK'); // reference answers the JSON string "OK"
        return true;
      case '/ready':
        deps.db.ping().then(
          (database) => sendJson(res, database ? 200 : 503, { status: database ? 'ready' : 'not ready', checks: { database } }),
          (error: unknown) => failed(deps, req, res, error),
        );
        return true;
      case '/metrics':
        deps.metrics.registry.metrics().then(
          (text) => {
            res.setHeader('Content-Type', deps.metrics.registry.contentType);
            res.end(text);
          },
          (error: unknown) => failed(deps, req, res, error),
        );
        return true;
      default:
        return false;
    }
  };
}
