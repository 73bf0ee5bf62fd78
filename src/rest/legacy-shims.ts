// Request shims for legacy REST shapes the adapter cannot express. Each names its quirk.
import type { NextFunction, Request, Response } from 'express';

/**
 * Legacy: POST /api/v1/sandboxes takes sandbox_spec_id from the query string (the adapter
 * reads only the body on POST). A value in the JSON body wins.
 */
export function sandboxSpecIdFromQuery(req: Request, _res: Response, next: NextFunction): void {
  if (req.method === 'POST' && /^\/api\/v1\/sandboxes\/?$/i.test(req.baseUrl + req.path)) {
    const fromQuery = req.query.sandbox_spec_id;
    const body = (req.body ?? {}) as Record<string, unknown>;
    if (typeof fromQuery === 'string' && body.sandbox_spec_id === undefined) req.body = { ...body, sandbox_spec_id: fromQuery };
  }
  next();
}
