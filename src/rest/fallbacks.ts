// The answers for requests no route took, and for errors express itself caught (body
// parsing, unexpected throws), as JSON in the reference's shapes.
import type { ErrorRequestHandler, Request, Response } from 'express';
import type { Deps } from '../context.js';
import { writeRestError } from './error-writer.js';

export function notFound(_req: Request, res: Response): void {
  writeRestError(res, { status: 404, body: { detail: 'Not Found' } });
}

export function errorHandler(deps: Deps): ErrorRequestHandler {
  return (err: { type?: string; status?: number; message?: string }, req, res, _next) => {
    if (res.headersSent) return;
    if (err.type === 'entity.too.large') {
      writeRestError(res, { status: 413, body: { detail: `Request body too large (limit ${deps.config.http.maxBodySize})` } });
      return;
    }
    if (err.type === 'entity.too.deep') {
      writeRestError(res, {
        status: 422,
        body: { detail: [{ type: 'json_invalid', loc: ['body'], msg: err.message ?? 'JSON nested too deeply' }] },
      });
      return;
    }
    if (err.type === 'entity.parse.failed') {
      writeRestError(res, { status: 422, body: { detail: [{ type: 'json_invalid', loc: ['body'], msg: 'JSON decode error' }] } });
      return;
    }
    if (typeof err.status === 'number' && err.status >= 400 && err.status < 500) {
      writeRestError(res, { status: err.status, body: { detail: err.message ?? 'Bad Request' } });
      return;
    }
    ((req as Request & { log?: Deps['log'] }).log ?? deps.log).error({ err }, 'unhandled error');
    writeRestError(res, { status: 500, body: { detail: 'Internal Server Error' } });
  };
}
