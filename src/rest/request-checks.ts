// Checks and defaults for REST requests before they reach a procedure, in the reference's
// shapes, on plain node:http objects (the procedure lane and the express routes use them
// alike). (The NUL-character check applies to both transports: src/procedures.ts.)
import type { IncomingMessage, ServerResponse } from 'node:http';
import typeis from 'type-is';
import type { Deps } from '../context.js';
import { toRestError, type RestError } from './legacy-errors.js';
import { jsonNestsDeeperThan } from '../json-depth.js';

const BODY_METHODS = new Set(['POST', 'PUT', 'PATCH']);

/** The media types read as JSON: application/json and application/<anything>+json. */
export const JSON_TYPES = ['application/json', '+json'];

/** The request once its JSON body (if any) was read: `body` is undefined when there was none. */
export type RestRequest = IncomingMessage & { body?: unknown; ip?: string };

/** The per-client-IP rate limit of REST requests, before any parsing or authentication (req.ip honours TRUST_PROXY). */
export function ipRateLimited(deps: Deps, req: RestRequest): RestError | null {
  try {
    deps.limits.ip(req.ip ?? req.socket.remoteAddress ?? 'unknown');
    return null;
  } catch (error) {
    return toRestError(error, undefined);
  }
}

export function setNoCache(res: ServerResponse): void {
  res.setHeader('cache-control', 'no-cache, no-store, must-revalidate, max-age=0');
  res.setHeader('pragma', 'no-cache');
  res.setHeader('expires', '0');
}

/** Legacy: the reference parses a body sent without a content type as JSON (FastAPI). */
export function defaultJsonContentType(req: IncomingMessage): void {
  if (BODY_METHODS.has(req.method ?? '') && !req.headers['content-type']) req.headers['content-type'] = 'application/json';
}

/** A body in any other media type (including look-alikes such as application/jsonx) is refused; +json reads as JSON. */
export function nonJsonContentType(req: IncomingMessage): RestError | null {
  if (!BODY_METHODS.has(req.method ?? '')) return null;
  const matched = typeis(req, JSON_TYPES);
  if (matched === false) {
    const type = String(req.headers['content-type']).split(';')[0]!.trim().slice(0, 100);
    return { status: 415, body: { detail: `Unsupported content-type "${type}": send application/json` } };
  }
  // The adapter reads only application/json; a +json type (FastAPI reads those too) is JSON here.
  if (matched && matched !== 'application/json') req.headers['content-type'] = 'application/json';
  return null;
}

/** body-parser's verify hook: refuses JSON nested deeper than the limit before it is parsed. */
export function jsonDepthLimit(maxDepth: number) {
  return (_req: IncomingMessage, _res: unknown, body: Buffer) => {
    if (jsonNestsDeeperThan(body, maxDepth)) {
      throw Object.assign(new Error(`JSON nested deeper than ${maxDepth} levels`), { status: 422, type: 'entity.too.deep' });
    }
  };
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
