// The answers for requests no route took, and for errors raised before a procedure ran (body
// reading and parsing, unexpected throws), as JSON in the reference's shapes.
import type { ErrorRequestHandler, Request, Response } from 'express';
import type { Deps } from '../context.js';
import type { Logger } from '../logger.js';
import { writeRestError } from './error-writer.js';
import type { RestError } from './legacy-errors.js';

export function notFound(_req: Request, res: Response): void {
  writeRestError(res, { status: 404, body: { detail: 'Not Found' } });
}

/** The answer to an error thrown while reading a request (body-parser's errors carry `type` and `status`). */
export function requestErrorAnswer(err: { type?: string; status?: number; message?: string }, maxBodySize: string, log: Logger): RestError {
  if (err.type === 'entity.too.large') return { status: 413, body: { detail: `Request body too large (limit ${maxBodySize})` } };
  if (err.type === 'entity.too.deep') {
    return { status: 422, body: { detail: [{ type: 'json_invalid', loc: ['body'], msg: err.message ?? 'JSON nested too deeply' }] } };
  }
  if (err.type === 'entity.parse.failed')
    return { status: 422, body: { detail: [{ type: 'json_invalid', loc: ['body'], msg: 'JSON decode error' }] } };
  if (typeof err.status === 'number' && err.status >= 400 && err.status < 500) {
    return { status: err.status, body: { detail: err.message ?? 'Bad Request' } };
  }
  log.error({ err }, 'unhandled error');
  return { status: 500, body: { detail: 'Internal Server Error' } };
}

export function errorHandler(deps: Deps): ErrorRequestHandler {
  return (err: { type?: string; status?: number; message?: string }, req, res, _next) => {
    if (res.headersSent) return;
    writeRestError(res, requestErrorAnswer(err, deps.config.http.maxBodySize, (req as Request & { log?: Logger }).log ?? deps.log));
  };
}
