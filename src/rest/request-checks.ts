// Checks and defaults for REST requests before they reach a procedure, in the reference's
// shapes, on plain node:http objects. The procedure lane and the express routes run the same
// three steps in the same order: admitRequest, then the reader of jsonBodyReader, then
// nonObjectBody. (The NUL-character check applies to both transports: src/procedures.ts.)
import type { IncomingMessage, ServerResponse } from 'node:http';
import express from 'express';
import typeis from 'type-is';
import type { Deps } from '../context.js';
import { jsonNestsDeeperThan } from '../json-depth.js';
import { writeRestError } from './error-writer.js';
import { toRestError, type RestError } from './legacy-errors.js';

const BODY_METHODS = new Set(['POST', 'PUT', 'PATCH']);

/** The media types read as JSON: application/json and application/<anything>+json. */
const JSON_TYPES = ['application/json', '+json'];

/** The request once its JSON body (if any) was read: `body` is undefined when there was none. */
export type RestRequest = IncomingMessage & { body?: unknown; ip?: string };

/**
 * First, for every /api request: the per-client-IP rate limit, before any parsing or
 * authentication (its refusal written), then the no-cache headers. False when refused.
 */
export function admitRequest(deps: Deps, req: RestRequest, res: ServerResponse): boolean {
  const limited = ipRateLimited(deps, req);
  if (limited) {
    writeRestError(res, limited);
    return false;
  }
  setNoCache(res);
  return true;
}

/** Reads the body, so `done` is called at most once with body-parser's error (fallbacks.ts answers it) or none. */
export type BodyReader = (req: RestRequest, res: ServerResponse, done: (err?: unknown) => void) => void;

/**
 * The JSON body: the legacy default content type, any other type refused (415, answered here,
 * `done` not called), then parsed within MAX_BODY_SIZE and MAX_JSON_DEPTH into req.body
 * (left undefined without a body).
 */
export function jsonBodyReader(deps: Deps): BodyReader {
  const { maxBodySize, maxJsonDepth } = deps.config.http;
  // body-parser works on plain node requests as well as express's.
  const parse = express.json({
    limit: maxBodySize,
    strict: false,
    type: JSON_TYPES,
    verify: jsonDepthLimit(maxJsonDepth),
  }) as unknown as BodyReader;
  return (req, res, done) => {
    defaultJsonContentType(req);
    const refused = nonJsonContentType(req);
    if (refused) {
      req.resume(); // the body is not read: drain it so the answer can be
      writeRestError(res, refused);
      return;
    }
    parse(req, res, done);
  };
}

/** The per-client-IP rate limit (req.ip honours TRUST_PROXY). */
function ipRateLimited(deps: Deps, req: RestRequest): RestError | null {
  try {
    deps.limits.ip(req.ip ?? req.socket.remoteAddress ?? 'unknown');
    return null;
  } catch (error) {
    return toRestError(error, undefined);
  }
}

function setNoCache(res: ServerResponse): void {
  res.setHeader('cache-control', 'no-cache, no-store, must-revalidate, max-age=0');
  res.setHeader('pragma', 'no-cache');
  res.setHeader('expires', '0');
}

/** Legacy: the reference parses a body sent without a content type as JSON (FastAPI). */
function defaultJsonContentType(req: IncomingMessage): void {
  if (BODY_METHODS.has(req.method ?? '') && !req.headers['content-type']) req.headers['content-type'] = 'application/json';
}

/** A body in any other media type (including look-alikes such as application/jsonx) is refused; +json reads as JSON. */
function nonJsonContentType(req: IncomingMessage): RestError | null {
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
function jsonDepthLimit(maxDepth: number) {
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
