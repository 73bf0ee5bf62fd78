// Checks and defaults for REST requests before they reach a procedure, in the reference's
// shapes. (The NUL-character check applies to both transports: src/procedures.ts.)
import type { IncomingMessage } from 'node:http';
import type { NextFunction, Request, RequestHandler, Response } from 'express';
import type { Deps } from '../context.js';
import { jsonNestsDeeperThan } from '../json-depth.js';
import { writeProcedureError, writeRestError } from './error-writer.js';

const BODY_METHODS = new Set(['POST', 'PUT', 'PATCH']);

/** The media types read as JSON: application/json and application/<anything>+json. */
export const JSON_TYPES = ['application/json', '+json'];

/** The per-client-IP rate limit of REST requests, before any parsing or authentication. */
export function ipRateLimit(deps: Deps): RequestHandler {
  return (req, res, next) => {
    try {
      deps.limits.ip(req.ip ?? req.socket.remoteAddress ?? 'unknown');
    } catch (error) {
      writeProcedureError(res, error, undefined);
      return;
    }
    next();
  };
}

export function noCache(_req: Request, res: Response, next: NextFunction): void {
  res.setHeader('cache-control', 'no-cache, no-store, must-revalidate, max-age=0');
  res.setHeader('pragma', 'no-cache');
  res.setHeader('expires', '0');
  next();
}

/** Legacy: the reference parses a body sent without a content type as JSON (FastAPI). */
export function defaultJsonContentType(req: Request, _res: Response, next: NextFunction): void {
  if (BODY_METHODS.has(req.method) && !req.headers['content-type']) req.headers['content-type'] = 'application/json';
  next();
}

/** A body in any other media type (including look-alikes such as application/jsonx) is refused. */
export function requireJsonContentType(req: Request, res: Response, next: NextFunction): void {
  if (!BODY_METHODS.has(req.method)) return next();
  const matched = req.is(JSON_TYPES);
  if (matched === false) {
    const type = String(req.headers['content-type']).split(';')[0]!.trim().slice(0, 100);
    writeRestError(res, { status: 415, body: { detail: `Unsupported content-type "${type}": send application/json` } });
    return;
  }
  // The adapter reads only application/json; a +json type (FastAPI reads those too) is JSON here.
  if (matched && matched !== 'application/json') req.headers['content-type'] = 'application/json';
  next();
}

/** body-parser's verify hook: refuses JSON nested deeper than the limit before it is parsed. */
export function jsonDepthLimit(maxDepth: number) {
  return (_req: IncomingMessage, _res: unknown, body: Buffer) => {
    if (jsonNestsDeeperThan(body, maxDepth)) {
      throw Object.assign(new Error(`JSON nested deeper than ${maxDepth} levels`), { status: 422, type: 'entity.too.deep' });
    }
  };
}

/** A JSON body must be an object; the adapter would otherwise spread a string or array into one. */
export function requireJsonObject(req: Request, res: Response, next: NextFunction): void {
  if (
    BODY_METHODS.has(req.method) &&
    req.is('application/json') &&
    (typeof req.body !== 'object' || req.body === null || Array.isArray(req.body))
  ) {
    writeRestError(res, {
      status: 422,
      body: {
        detail: [
          { type: 'model_attributes_type', loc: ['body'], msg: 'Input should be a valid dictionary or object to extract fields from' },
        ],
      },
    });
    return;
  }
  next();
}

/** "25mb", "512kb", "1000" → bytes (the formats of MAX_BODY_SIZE and MAX_UPLOAD_SIZE). */
export function parseSize(size: string): number {
  const match = /^(\d+)(b|kb|mb)?$/i.exec(size);
  const n = Number(match?.[1] ?? 1_000_000);
  const unit = (match?.[2] ?? 'b').toLowerCase();
  return n * (unit === 'mb' ? 1024 * 1024 : unit === 'kb' ? 1024 : 1);
}
