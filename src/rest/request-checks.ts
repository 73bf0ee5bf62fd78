// Checks and defaults for REST requests before they reach a procedure, in the reference's
// shapes, on plain node:http objects (the procedure lane and express use them alike). (The
// NUL-character check applies to both transports: src/procedures.ts.)
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { RestError } from './legacy-errors.js';

const BODY_METHODS = new Set(['POST', 'PUT', 'PATCH']);

/** The request once its JSON body (if any) was read: `body` is undefined when there was none. */
export type RestRequest = IncomingMessage & { body?: unknown };

export function setNoCache(res: ServerResponse): void {
  res.setHeader('cache-control', 'no-cache, no-store, must-revalidate, max-age=0');
  res.setHeader('pragma', 'no-cache');
  res.setHeader('expires', '0');
}

/** Legacy: the reference parses a body sent without a content type as JSON (FastAPI). */
export function defaultJsonContentType(req: IncomingMessage): void {
  if (BODY_METHODS.has(req.method ?? '') && !req.headers['content-type']) req.headers['content-type'] = 'application/json';
}

/**
 * A JSON body must be an object; the adapter would otherwise spread a string or array into
 * one. Only a body the JSON parser read counts (it reads only JSON content types).
 */
export function nonObjectBody(req: RestRequest): RestError | null {
  const body = req.body;
  if (!BODY_METHODS.has(req.method ?? '') || body === undefined) return null;
  if (typeof body === 'object' && body !== null && !Array.isArray(body)) return null;
  return {
    status: 422,
    body: {
      detail: [
        { type: 'model_attributes_type', loc: ['body'], msg: 'Input should be a valid dictionary or object to extract fields from' },
      ],
    },
  };
}
