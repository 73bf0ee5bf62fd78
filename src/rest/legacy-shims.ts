// Request shims for legacy REST shapes the adapter cannot express. Each names its quirk.
import querystring from 'node:querystring';
import type { RestRequest } from './request-checks.js';

/**
 * Legacy: POST /api/v1/sandboxes takes sandbox_spec_id from the query string (the adapter
 * reads only the body on POST). A value in the JSON body wins.
 */
export function sandboxSpecIdFromQuery(req: RestRequest, pathname: string, search: string): void {
  if (req.method !== 'POST' || !/^\/api\/v1\/sandboxes\/?$/i.test(pathname)) return;
  const fromQuery = querystring.parse(search).sandbox_spec_id;
  const body = (req.body ?? {}) as Record<string, unknown>;
  if (typeof fromQuery === 'string' && body.sandbox_spec_id === undefined) req.body = { ...body, sandbox_spec_id: fromQuery };
}
