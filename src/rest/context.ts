// The request context of REST calls: the shared context plus the REST-only input fix-up.
import { createContextFactory, type Deps, type InputAdapter } from '../context.js';

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

export const createRestContext = (deps: Deps) => createContextFactory(deps, 'rest', decodePathParams);
