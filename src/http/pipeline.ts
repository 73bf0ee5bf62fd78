// What every request goes through once, whatever serves it, before anything reads it:
//   1. a request id (X-Request-Id, taken from the client or made) and a logger bound to it;
//      the access line and the request metric when the answer is finished;
//   2. CORS (the `cors` package): the reference's rule, localhost origins unless
//      PERMITTED_CORS_ORIGINS lists others; a preflight is answered here;
//   3. the client's address and protocol under TRUST_PROXY (`proxy-addr`, express's rule):
//      X-Forwarded-For and -Proto count only from a trusted proxy; X-Forwarded-Host nowhere.
// The facts are kept beside the request (factsOf), never written onto it. The per-IP limit
// and credentials come next, from the transports (src/http/app.ts): the per-IP limit only for
// requests no credential vouches for (chargeClient).
import crypto from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import cors from 'cors';
import proxyaddr from 'proxy-addr';
import type { Deps } from '../trpc/context.js';
import { accessLogOf, type Logger } from '../logger.js';

export interface RequestFacts {
  id: string;
  log: Logger;
  /** The path as sent, without the query string. */
  path: string;
  /** The query string without "?" ('' when none). */
  search: string;
  /** The client's address: the socket's, or X-Forwarded-For's as far as TRUST_PROXY trusts it. */
  clientAddress: string;
  /** https when the socket is TLS or a trusted proxy says so. */
  protocol: 'http' | 'https';
  /** The edge left the request's charge to its credentials (chargeClient): chargeLeftCall charges the address. */
  chargeLeft: boolean;
}

const FACTS = new WeakMap<IncomingMessage, RequestFacts>();

/** The pipeline's facts about a request (every request of the service passes it first). */
export function factsOf(req: IncomingMessage): RequestFacts {
  const facts = FACTS.get(req);
  if (!facts) throw new Error('a request reached a handler without passing the pipeline');
  return facts;
}

/**
 * A class, not an object literal: an accessor in a literal costs about 0.4 µs per object, and
 * every request makes one.
 */
class Facts implements RequestFacts {
  chargeLeft = false;
  #log: Logger | undefined;
  readonly #serviceLog: Logger;
  constructor(
    readonly id: string,
    serviceLog: Logger,
    readonly path: string,
    readonly search: string,
    readonly clientAddress: string,
    readonly protocol: 'http' | 'https',
  ) {
    this.#serviceLog = serviceLog;
  }
  // Made when first used: a pino child runs its bindings through the redaction (~10 µs), and
  // most requests log nothing but their access line.
  get log(): Logger {
    return (this.#log ??= this.#serviceLog.child({ reqId: this.id }));
  }
}

type Trust = (address: string, hop: number) => boolean;

/** Returns `begin`: true when the request goes on, false when the pipeline answered it (a preflight). */
export function createPipeline(deps: Deps): (req: IncomingMessage, res: ServerResponse) => boolean {
  const access = accessLogOf(deps.log);
  const trust = compileTrust(deps.config.http.trustProxy);
  const corsCheck = corsHandler(deps.config.http.corsOrigins);
  return (req, res) => {
    const started = performance.now();
    const header = req.headers['x-request-id'];
    const id = (typeof header === 'string' && header.slice(0, 128)) || crypto.randomUUID();
    res.setHeader('x-request-id', id);
    const url = req.url ?? '/';
    const queryAt = url.indexOf('?');
    const path = queryAt < 0 ? url : url.slice(0, queryAt);
    const facts = new Facts(id, deps.log, path, queryAt < 0 ? '' : url.slice(queryAt + 1), proxyaddr(req, trust), protocolOf(req, trust));
    FACTS.set(req, facts);
    res.on('finish', () => {
      const group = path.startsWith('/trpc') ? 'trpc' : path.startsWith('/api') ? 'api' : 'other';
      deps.metrics.httpRequests.inc({ method: req.method, route: group, status: String(res.statusCode) });
      // Path only: query strings and headers may carry credentials.
      access({ reqId: id, method: req.method ?? '', path, status: res.statusCode, durationMs: Math.round(performance.now() - started) });
    });
    return corsCheck(req, res);
  };
}

/** express's "trust proxy" setting as a function of (address, hop). */
function compileTrust(setting: boolean | number | string): Trust {
  if (setting === true) return () => true;
  if (setting === false) return () => false;
  if (typeof setting === 'number') return (_address, hop) => hop < setting;
  return proxyaddr.compile(setting.split(',').map((part) => part.trim()));
}

function protocolOf(req: IncomingMessage, trust: Trust): 'http' | 'https' {
  const own = (req.socket as { encrypted?: boolean }).encrypted ? 'https' : 'http';
  if (!trust(req.socket.remoteAddress ?? '', 0)) return own;
  const forwarded = req.headers['x-forwarded-proto'];
  const first = (Array.isArray(forwarded) ? forwarded[0] : forwarded)?.split(',')[0]?.trim().toLowerCase();
  return first === 'https' || first === 'http' ? first : own;
}

/** True when the request goes on; a preflight of an allowed origin is answered (204). */
function corsHandler(permitted: string[]): (req: IncomingMessage, res: ServerResponse) => boolean {
  const allowed = (origin: string | undefined) =>
    origin !== undefined &&
    (permitted.length > 0 ? permitted.includes(origin) : /^https?:\/\/(localhost|127\.0\.0\.1)(:\d+)?$/.test(origin));
  const handle = cors({
    origin: (origin, callback) => callback(null, allowed(origin)),
    credentials: true,
    methods: ['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'],
  });
  return (req, res) => {
    let goesOn = false;
    // The callback runs synchronously: the origin check above answers at once.
    handle(req, res, () => (goesOn = true));
    return goesOn;
  };
}

/**
 * The per-client-IP limit, charged by each transport before it reads the request (a tRPC
 * batch costs one per call): throws AppError rate_limited, which each answers in its shape.
 * Only a request without credentials is charged here. One with a key, a token or the session
 * cookie is charged per call to what they prove, once checked (src/trpc/procedures.ts): the user's
 * bucket, the sandbox's, or this address's after all when they prove nothing (chargeLeftCall).
 * So a user or a sandbox behind a shared address (every local sandbox calls back from
 * 127.0.0.1) spends its own requests, not its neighbours'. `leaveToCredentials`: the request
 * carries some (credentials.ts carriesCredential) and a procedure will check them; a request no
 * procedure will check (a path no route takes, a refused batch) is charged here whatever it carries.
 */
export function chargeClient(deps: Deps, req: IncomingMessage, cost: number, leaveToCredentials: boolean): void {
  const facts = factsOf(req);
  facts.chargeLeft = leaveToCredentials;
  if (!leaveToCredentials) deps.limits.ip(facts.clientAddress, cost);
}

/**
 * One call of a request whose charge the edge left to its credentials, which proved nothing (or
 * were never checked: a body refused before any procedure ran): its address pays after all.
 * Nothing for any other request.
 */
export function chargeLeftCall(deps: Deps, req: IncomingMessage): void {
  const facts = factsOf(req);
  if (facts.chargeLeft) deps.limits.ip(facts.clientAddress);
}
