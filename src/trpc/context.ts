// The request context, transport-free: what every procedure sees (tRPC's own examples keep it
// this way, so a procedure runs the same through createCaller, tRPC or REST). The HTTP wing
// builds it from a request (src/http/request-context.ts); tests and internal callers use
// createContextInner directly.
import type { Config } from '../config/config.js';
import type { Database } from '../db/database.js';
import type { Logger } from '../logger.js';
import type { Metrics } from '../metrics.js';
import type { RateLimits } from '../rate-limit.js';
import type { SandboxRuntime } from '../sandbox/index.js';
import type { Services } from '../domain.js';

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
  /** The API key the request authenticated with (none for a browser session): GET /api/keys/current. */
  keyId?: string;
  /** The organisation that key is bound to (src/organizations/org-access.ts). */
  boundOrgId?: string | null;
  /** That key is an automation key: it opens only what runs use (AUTOMATION_KEY_PROCEDURES). */
  automationKey?: boolean;
}

export type Transport = 'rest' | 'trpc' | 'internal';

/** How ctx.user was authenticated: an API key header, the browser session cookie, or not at all. */
export type AuthVia = 'header' | 'cookie' | null;

/** What a browser's request tells the procedures (built by src/http/browser.ts). */
export interface BrowserRequest {
  /** The acp_session cookie's value, if the request carries one. */
  sessionId: string | undefined;
  /** The request's Origin header is ours (scheme and Host header, PUBLIC_URL/WEB_URL) or in TRUSTED_ORIGINS. */
  originTrusted: boolean;
  /** The request carries an Origin header at all. */
  originPresent: boolean;
  /** Sec-Fetch-Site says the request was made by another site's page. */
  crossSite: boolean;
  /** POST, PUT, PATCH, DELETE… (the method alone, whatever the procedure). */
  unsafeMethod: boolean;
  setSessionCookie(sessionId: string, maxAgeSeconds: number): void;
  clearSessionCookie(): void;
}

/** Who asks, as the request says it (the device flow shows it to the person who approves). */
export interface Requester {
  /** This service's origin as the request reached it (its scheme and Host), or null when the Host is no host. */
  origin: string | null;
  userAgent: string | null;
  /** The client's address under TRUST_PROXY. */
  address: string;
}

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
  /** X-Org-Id: the organisation the request acts in (src/organizations/org-access.ts). */
  orgHeader: string | undefined;
  authVia: AuthVia;
  /** The browser session that authenticated the request (authVia "cookie"). */
  session: { id: string; expiresAt: Date } | null;
  /** The HTTP request's browser facts and session-cookie writer; undefined for internal calls. */
  browser: BrowserRequest | undefined;
  /** Who sent the HTTP request; undefined for internal calls. */
  requester: Requester | undefined;
  /**
   * Charges the client's address for this call when the HTTP edge left the charge to the
   * request's credentials and they proved nothing (src/http/pipeline.ts); a no-op otherwise.
   * Undefined for internal calls.
   */
  chargeAddress: (() => void) | undefined;
}

export function createContextInner(
  deps: Deps,
  user: User | null,
  transport: Transport = 'internal',
  headers: Partial<Pick<Context, 'sessionKey' | 'accessToken' | 'orgHeader'>> = {},
): Context {
  return {
    deps,
    services: deps.services,
    user,
    transport,
    log: deps.log,
    sessionKey: headers.sessionKey,
    accessToken: headers.accessToken,
    orgHeader: headers.orgHeader,
    authVia: user ? 'header' : null,
    session: null,
    browser: undefined,
    requester: undefined,
    chargeAddress: undefined,
  };
}
