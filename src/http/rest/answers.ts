// The one writer of REST answers: success JSON, and every failure of a REST request (a
// procedure's, the body reader's, the route table's, an unexpected throw) in the reference's
// shapes, from the failure table (legacy-errors.ts).
import type { ServerResponse } from 'node:http';
import type { Logger } from '../../logger.js';
import { BodyProblem } from '../body.js';
import { toRestError, type RestError } from './legacy-errors.js';
import type { HandlerCall } from './table.js';

export function writeJson(res: ServerResponse, status: number, value: unknown, contentType = 'application/json'): void {
  if (status === 204) {
    res.statusCode = 204; // No Content: no body, whatever the procedure returned
    res.end();
    return;
  }
  const text = JSON.stringify(value);
  res.statusCode = status;
  res.setHeader('Content-Type', contentType);
  res.setHeader('Content-Length', Buffer.byteLength(text));
  res.end(text);
}

/** A success answer that is not JSON (text, a zip). */
export function writeBytes(res: ServerResponse, bytes: Buffer, contentType: string): void {
  res.statusCode = 200;
  res.setHeader('Content-Type', contentType);
  res.setHeader('Content-Length', bytes.length);
  res.end(bytes);
}

export function writeRestError(res: ServerResponse, answer: RestError): void {
  if (res.headersSent) return void res.destroy();
  const text = JSON.stringify(answer.body);
  res.statusCode = answer.status;
  // A procedure route has declared its "application/json" already; elsewhere the charset is said.
  if (!res.hasHeader('content-type')) res.setHeader('Content-Type', 'application/json; charset=utf-8');
  for (const [name, value] of Object.entries(answer.headers ?? {})) res.setHeader(name, value);
  res.setHeader('Content-Length', Buffer.byteLength(text)); // explicit, so HEAD answers carry it too
  res.end(text);
}

/**
 * Any failure of a REST request: the body reader's refusals, domain and validation errors of
 * the procedure at `procedurePath` (its row of the failure table), and anything unexpected as
 * a bare 500 that is logged, never shown.
 */
export function writeFailure(
  res: ServerResponse,
  error: unknown,
  procedurePath: string | undefined,
  log: Logger,
  maxBodySize: string,
): void {
  const answer = error instanceof BodyProblem ? bodyProblemAnswer(error, maxBodySize) : toRestError(error, procedurePath);
  if (answer.status === 500) log.error({ err: (error as { cause?: unknown }).cause ?? error, procedure: procedurePath }, 'request failed');
  writeRestError(res, answer);
}

export const NOT_FOUND: RestError = { status: 404, body: { detail: 'Not Found' } };

/** The reference's answers (FastAPI's) to a body it cannot read. */
function bodyProblemAnswer(problem: BodyProblem, maxBodySize: string): RestError {
  switch (problem.kind) {
    case 'too_large':
      return { status: 413, body: { detail: `Request body too large (limit ${maxBodySize})` } };
    case 'unsupported_type':
      return { status: 415, body: { detail: problem.message } };
    case 'too_deep':
    case 'invalid_json':
      return { status: 422, body: { detail: [{ type: 'json_invalid', loc: ['body'], msg: problem.message }] } };
  }
}

/** A JSON body must be an object for a procedure: the input is built from its fields. */
export const NOT_AN_OBJECT: RestError = {
  status: 422,
  body: {
    detail: [{ type: 'model_attributes_type', loc: ['body'], msg: 'Input should be a valid dictionary or object to extract fields from' }],
  },
};

export function setNoCache(res: ServerResponse): void {
  res.setHeader('cache-control', 'no-cache, no-store, must-revalidate, max-age=0');
  res.setHeader('pragma', 'no-cache');
  res.setHeader('expires', '0');
}

/**
 * A route of another service that is not here: "not available" (404, its `detail`) to a
 * signed-in user, never a bare "Not Found" that reads as a wrong URL; 401 to anyone else.
 */
export async function writeNotAvailable(call: HandlerCall, detail: string): Promise<void> {
  call.req.resume();
  const { user } = await call.context(true);
  writeRestError(call.res, user ? { status: 404, body: { detail } } : { status: 401, body: { detail: 'Unauthorized' } });
}
