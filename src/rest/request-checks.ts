// Checks and defaults for REST requests before they reach a procedure, in the reference's
// shapes. (The NUL-character check applies to both transports: src/procedures.ts.)
import type { NextFunction, Request, Response } from 'express';
import { writeRestError } from './error-writer.js';

const BODY_METHODS = new Set(['POST', 'PUT', 'PATCH']);

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
