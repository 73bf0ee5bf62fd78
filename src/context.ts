// Request context shared by both transports. createContextInner is transport-free (tests
// build it directly); createContextFactory adapts an HTTP request of either adapter.
import type { IncomingMessage } from 'node:http';
import { browserRequest, configuredOrigins, type BrowserRequest, type HeaderWriter } from './browser-session.js';
import type { Config } from './config.js';
import type { Database } from './db/database.js';
import { databaseUnavailable, isDatabaseUnavailable } from './db/unavailable.js';
import { toTRPCError } from './errors.js';
import type { Logger } from './logger.js';
import type { Metrics } from './metrics.js';
import type { RateLimits } from './rate-limit.js';
import type { SandboxRuntime } from './sandbox/runtime.js';
import type { Services } from './domain.js';

export interface Deps {
  config: Config;
  log: Logger;
  db: Database;
  services: Services;
  metrics: Metrics;
  runtime: SandboxRuntime;
  limits: RateLimits;
}

export interface User {
  id: string;
}

export type Transport = 'rest' | 'trpc' | 'internal';

/** How ctx.user was authenticated: X-Session-API-Key, the browser session cookie, or not at all. */
export type AuthVia = 'header' | 'cookie' | null;

/** A transport's fix-up of the raw input before validation; `route` is the procedure's REST path template. */
export type InputAdapter = (raw: unknown, route: string | undefined) => unknown;

export interface Context {
  deps: Deps;
  services: Services;
  user: User | null;
  transport: Transport;
  log: Logger;
  /** The raw X-Session-API-Key (webhooks authenticate it as a sandbox key). */
  sessionKey: string | undefined;
  /** X-Access-Token (the git-token lookup of agents). */
  accessToken: string | undefined;
  /** Set by the REST edge (src/rest/context.ts): decodes path parameters. */
  adaptInput: InputAdapter | undefined;
  authVia: AuthVia;
  /** The browser session that authenticated the request (authVia "cookie"). */
  session: { id: string; expiresAt: Date } | null;
  /** The HTTP request's browser facts and session-cookie writer; undefined for internal calls. */
  browser: BrowserRequest | undefined;
}

export function createContextInner(
  deps: Deps,
  user: User | null,
  transport: Transport = 'internal',
  headers: Partial<Pick<Context, 'sessionKey' | 'accessToken'>> = {},
): Context {
  return {
    deps,
    services: deps.services,
    user,
    transport,
    log: deps.log,
    sessionKey: headers.sessionKey,
    accessToken: headers.accessToken,
    adaptInput: undefined,
    authVia: user ? 'header' : null,
    session: null,
    browser: undefined,
  };
}

export const SESSION_HEADER = 'x-session-api-key';

export function createContextFactory(deps: Deps, transport: Transport) {
  const trustedOrigins = configuredOrigins(deps.config);
  return async ({ req, res }: { req: IncomingMessage; res?: HeaderWriter }): Promise<Context> => {
    const key = headerValue(req, SESSION_HEADER);
    const browser = res ? browserRequest(req, res, deps.config, trustedOrigins) : undefined;
    const log = (req as { log?: Logger }).log ?? deps.log;
    const inner = createContextInner(deps, null, transport, { sessionKey: key, accessToken: headerValue(req, 'x-access-token') });
    // A failed lookup (the database is down) must reach clients as its own code, not a 500;
    // the hot-path lookups use the driver directly, outside mongoose's error mapping.
    const auth = await authenticate(deps, key, browser?.sessionId).catch((error: unknown) =>
      Promise.reject(toTRPCError(isDatabaseUnavailable(error) ? databaseUnavailable(error) : error)),
    );
    return { ...inner, ...auth, log, browser };
  };
}

/** The header, when present, wins; otherwise the session cookie. */
async function authenticate(deps: Deps, key: string | undefined, sessionId: string | undefined) {
  if (key !== undefined) {
    const user = key ? await deps.services.apiKeys.authenticate(key) : null;
    return { user, authVia: (user ? 'header' : null) as AuthVia, session: null };
  }
  const session = sessionId ? await deps.services.sessions.authenticate(sessionId) : null;
  if (!session || !sessionId) return { user: null, authVia: null, session: null };
  return { user: { id: session.userId }, authVia: 'cookie' as const, session: { id: sessionId, expiresAt: session.expiresAt } };
}

function headerValue(req: IncomingMessage, name: string): string | undefined {
  const value = req.headers[name];
  return Array.isArray(value) ? value[0] : value;
}
