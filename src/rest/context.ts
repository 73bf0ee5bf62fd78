// The request context of REST calls: the shared context plus the REST-only input fix-ups.
import type { IncomingMessage } from 'node:http';
import type { HeaderWriter } from '../browser-session.js';
import { createContextFactory, type Context, type Deps, type InputAdapter } from '../context.js';

/**
 * The REST adapter (openapi-handler.ts) hands path parameters over still percent-encoded ("my%20secret");
 * the reference (Starlette) decodes them.
 */
export const decodePathParams: InputAdapter = (raw, route) => {
  const names = [...(route?.matchAll(/\{([^}]+)\}/g) ?? [])].map((m) => m[1]!);
  if (names.length === 0 || typeof raw !== 'object' || raw === null) return raw;
  const decoded: Record<string, unknown> = { ...raw };
  for (const name of names) {
    const value = decoded[name];
    if (typeof value !== 'string') continue;
    try {
      decoded[name] = decodeURIComponent(value);
    } catch {
      // A malformed escape stays as sent; validation or lookup then answers for it.
    }
  }
  return decoded;
};

/**
 * trpc-to-openapi drops query parameters with an empty value, so "?limit=" would silently
 * mean "no limit given"; the reference validates the empty string (a 422 for a number).
 */
function keepEmptyQueryValues(raw: unknown, req: IncomingMessage): unknown {
  if ((req.method !== 'GET' && req.method !== 'DELETE') || typeof raw !== 'object' || raw === null) return raw;
  const query = new URL(req.url ?? '/', 'http://localhost').searchParams;
  let kept: Record<string, unknown> | undefined;
  for (const name of new Set(query.keys())) {
    const values = query.getAll(name);
    if (name in raw || values.some((v) => v !== '')) continue;
    kept ??= { ...raw };
    kept[name] = values.length === 1 ? '' : values;
  }
  return kept ?? raw;
}

export function createRestContext(deps: Deps) {
  const base = createContextFactory(deps, 'rest');
  return async (opts: { req: IncomingMessage; res?: HeaderWriter }): Promise<Context> => ({
    ...(await base(opts)),
    adaptInput: (raw, route) => keepEmptyQueryValues(decodePathParams(raw, route), opts.req),
  });
}
