// The one writer of REST error answers: every REST route (the procedure routes, the
// raw routes, the request checks and the fallbacks) puts its error bytes on the wire here.
import type { ServerResponse } from 'node:http';
import type { Logger } from '../logger.js';
import { toRestError, type RestError } from './legacy-errors.js';

export function writeRestError(res: ServerResponse, answer: RestError): void {
  const text = JSON.stringify(answer.body);
  res.statusCode = answer.status;
  // The procedure routes have already declared their "application/json"; elsewhere it is express's JSON type.
  if (!res.hasHeader('content-type')) res.setHeader('Content-Type', 'application/json; charset=utf-8');
  for (const [name, value] of Object.entries(answer.headers ?? {})) res.setHeader(name, value);
  res.setHeader('Content-Length', Buffer.byteLength(text)); // explicit, so HEAD answers carry it too
  res.end(text);
}

/** A failed procedure's legacy answer (legacy-errors.ts), written; an unexpected failure is logged. */
export function writeProcedureError(res: ServerResponse, error: unknown, procedurePath: string | undefined): void {
  const answer = toRestError(error, procedurePath);
  if (answer.status === 500) {
    const log = (res.req as { log?: Logger } | undefined)?.log;
    log?.error({ err: (error as { cause?: unknown }).cause ?? error, procedure: procedurePath }, 'request failed');
  }
  writeRestError(res, answer);
}
