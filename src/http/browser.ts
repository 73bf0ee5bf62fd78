// What a browser's HTTP request tells the service: the session cookie it carries, whether it
// came from one of our origins (cross-site protection), whether it arrived over https (the
// cookie's Secure flag), and how to set or clear the cookie on the answer. Both transports
// build it from the request (src/http/request-context.ts); procedures decide what it permits.
import type { IncomingMessage } from 'node:http';
import type { Config } from '../config/config.js';
import type { BrowserRequest } from '../trpc/context.js';
import { factsOf } from './pipeline.js';

export type { BrowserRequest } from '../trpc/context.js';

export const SESSION_COOKIE = 'acp_session';

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/** The value of one cookie in a Cookie header (the first one of that name, as browsers order them). */
export function cookieValue(header: string | undefined, name: string): string | undefined {
  for (const part of (header ?? '').split(';')) {
    const eq = part.indexOf('=');
    if (eq > 0 && part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim();
  }
  return undefined;
}

/** Origins (scheme://host[:port]) that are this service's own, from configuration. */
export function configuredOrigins(config: Config): Set<string> {
  const urls = [config.publicUrl, config.webUrl, ...config.session.trustedOrigins];
  return new Set(urls.flatMap((url) => (url ? [new URL(url).origin] : [])));
}

/** The part of an HTTP/1 or HTTP/2 response the cookie writer needs. */
export interface HeaderWriter {
  getHeader(name: string): unknown;
  setHeader(name: string, value: string | string[]): unknown;
}

function appendSetCookie(res: HeaderWriter, cookie: string): void {
  const previous = res.getHeader('set-cookie');
  const list = Array.isArray(previous) ? previous.map(String) : typeof previous === 'string' ? [previous] : [];
  res.setHeader('set-cookie', [...list, cookie]);
}

export function browserRequest(req: IncomingMessage, res: HeaderWriter, config: Config, trusted: Set<string>): BrowserRequest {
  // X-Forwarded-Proto counts only from a trusted proxy (TRUST_PROXY; src/http/pipeline.ts).
  const protocol = factsOf(req).protocol;
  // Our own origin is the Host header the browser sent, never X-Forwarded-Host: TRUST_PROXY
  // cannot tell a proxy from a browser on a trusted address (a page on another localhost port
  // could name itself there). A proxy that rewrites Host needs PUBLIC_URL.
  const host = req.headers.host;
  const origin = single(req.headers.origin);
  const secure = config.session.cookieSecure || protocol === 'https';
  const flag = secure ? '; Secure' : '';
  return {
    sessionId: cookieValue(req.headers.cookie, SESSION_COOKIE),
    originPresent: origin !== undefined,
    originTrusted: origin !== undefined && (trusted.has(origin) || (host !== undefined && origin === `${protocol}://${host}`)),
    crossSite: single(req.headers['sec-fetch-site']) === 'cross-site',
    unsafeMethod: !SAFE_METHODS.has(req.method ?? 'GET'),
    setSessionCookie: (sessionId, maxAgeSeconds) =>
      appendSetCookie(res, `${SESSION_COOKIE}=${sessionId}; HttpOnly; SameSite=Strict; Path=/; Max-Age=${maxAgeSeconds}${flag}`),
    clearSessionCookie: () => appendSetCookie(res, `${SESSION_COOKIE}=; Max-Age=0; Path=/; HttpOnly; SameSite=Strict${flag}`),
  };
}

function single(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}
