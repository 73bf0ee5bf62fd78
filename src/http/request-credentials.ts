// Every credential a request can carry, read in one place: `Authorization: Bearer <api key>`
// (today's clients), the API key header (X-Session-API-Key: the d6 clients' user key; for
// webhooks and sandbox routes the same header is a sandbox's key), the git-token header agents
// send (X-Access-Token), and the browser session cookie. Which one decides the user is here too.
import type { IncomingMessage } from 'node:http';
import type { AuthVia, Deps, User } from '../trpc/context.js';
import { databaseUnavailable, isDatabaseUnavailable } from '../db/unavailable.js';
import { toTRPCError } from '../errors.js';
import { cookieValue, SESSION_COOKIE } from './browser.js';

export const SESSION_HEADER = 'x-session-api-key';

export interface Credentials {
  /** The token of `Authorization: Bearer`: a user's API key. */
  bearer: string | undefined;
  /** X-Session-API-Key as sent: a user's API key, or a sandbox's session key on the webhook routes. */
  sessionKey: string | undefined;
  /** X-Access-Token: the short-lived token agents present to fetch a git token. */
  accessToken: string | undefined;
  /** The acp_session cookie. */
  sessionId: string | undefined;
}

export function credentialsOf(req: IncomingMessage): Credentials {
  return {
    bearer: /^bearer\s+(\S+)\s*$/i.exec(headerValue(req, 'authorization') ?? '')?.[1],
    sessionKey: headerValue(req, SESSION_HEADER),
    accessToken: headerValue(req, 'x-access-token'),
    sessionId: cookieValue(req.headers.cookie, SESSION_COOKIE),
  };
}

/**
 * Whether the request carries any credential at all, valid or not: then the per-client-IP
 * limit is charged only if it proves nothing (pipeline.ts chargeClient).
 */
export function carriesCredential(req: IncomingMessage): boolean {
  const { bearer, sessionKey, accessToken, sessionId } = credentialsOf(req);
  return bearer !== undefined || sessionKey !== undefined || accessToken !== undefined || sessionId !== undefined;
}

export interface Authenticated {
  user: User | null;
  authVia: AuthVia;
  session: { id: string; expiresAt: Date } | null;
}

/**
 * The user: a Bearer key decides when present; else X-Session-API-Key (which, beside a Bearer
 * key, is a sandbox's key that only scopes what that sandbox may see); an unknown key is no
 * user, whatever else the request carries. Without either, the session cookie. A database
 * outage during the lookup is its own failure (503), not a 500: these lookups use the driver
 * directly, outside mongoose's mapping.
 */
export async function authenticateRequest(deps: Deps, credentials: Credentials): Promise<Authenticated> {
  try {
    const { sessionId } = credentials;
    const key = credentials.bearer ?? credentials.sessionKey;
    if (key !== undefined) {
      const identity = key ? await deps.services.apiKeys.authenticateApiKey(key) : null;
      const user = identity
        ? { id: identity.userId, keyId: identity.keyId, boundOrgId: identity.orgId, automationKey: identity.purpose === 'automation' }
        : null;
      return { user, authVia: user ? 'header' : null, session: null };
    }
    const session = sessionId ? await deps.services.sessions.authenticateSession(sessionId) : null;
    if (!session || !sessionId) return { user: null, authVia: null, session: null };
    return { user: { id: session.userId }, authVia: 'cookie', session: { id: sessionId, expiresAt: session.expiresAt } };
  } catch (error) {
    throw toTRPCError(isDatabaseUnavailable(error) ? databaseUnavailable(error) : error);
  }
}

function headerValue(req: IncomingMessage, name: string): string | undefined {
  const value = req.headers[name];
  return Array.isArray(value) ? value[0] : value;
}
