// Every credential a request can carry, read in one place: the API key header
// (X-Session-API-Key; for webhooks the same header is a sandbox's key), the git-token header
// agents send (X-Access-Token), and the browser session cookie. Which one decides the user is
// here too, so a new scheme is one change.
import type { IncomingMessage } from 'node:http';
import type { AuthVia, Deps, User } from '../context.js';
import { databaseUnavailable, isDatabaseUnavailable } from '../db/unavailable.js';
import { toTRPCError } from '../errors.js';
import { cookieValue, SESSION_COOKIE } from './browser.js';

export const SESSION_HEADER = 'x-session-api-key';

export interface Credentials {
  /** X-Session-API-Key as sent: a user's API key, or a sandbox's session key on the webhook routes. */
  sessionKey: string | undefined;
  /** X-Access-Token: the short-lived token agents present to fetch a git token. */
  accessToken: string | undefined;
  /** The acp_session cookie. */
  sessionId: string | undefined;
}

export function credentialsOf(req: IncomingMessage): Credentials {
  return {
    sessionKey: headerValue(req, SESSION_HEADER),
    accessToken: headerValue(req, 'x-access-token'),
    sessionId: cookieValue(req.headers.cookie, SESSION_COOKIE),
  };
}

export interface Authenticated {
  user: User | null;
  authVia: AuthVia;
  session: { id: string; expiresAt: Date } | null;
}

/**
 * The user: the key header, when present, decides (an unknown key is no user, whatever the
 * cookie says); otherwise the session cookie. A database outage during the lookup is its own
 * failure (503), not a 500: these lookups use the driver directly, outside mongoose's mapping.
 */
export async function authenticate(deps: Deps, credentials: Credentials): Promise<Authenticated> {
  try {
    const { sessionKey, sessionId } = credentials;
    if (sessionKey !== undefined) {
      const user = sessionKey ? await deps.services.apiKeys.authenticate(sessionKey) : null;
      return { user, authVia: user ? 'header' : null, session: null };
    }
    const session = sessionId ? await deps.services.sessions.authenticate(sessionId) : null;
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
