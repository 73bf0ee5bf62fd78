// The procedure lane: REST requests for a procedure route, served on plain node:http. The
// same steps, in the same order, as the express pipeline (index.ts) applies to the other
// /api routes: the per-IP rate limit, no-cache headers, the legacy JSON default, the content
// type, the JSON body (body-parser with the nesting limit, its errors in the reference's
// shapes), the object-body check and the legacy shims, then the procedure. Requests for the
// routes of `leave` (raw routes, the multipart upload), and any other path, are not taken
// (false) and go on to express.
import type { ServerResponse } from 'node:http';
import type { Router } from 'express';
import type { Deps } from '../context.js';
import type { Logger } from '../logger.js';
import { writeRestError } from './error-writer.js';
import { requestErrorAnswer } from './fallbacks.js';
import { sandboxSpecIdFromQuery } from './legacy-shims.js';
import { procedureCaller, procedureRoutes } from './openapi-handler.js';
import { isRawRoute } from './raw-routes.js';
import { admitRequest, jsonBodyReader, nonObjectBody, type RestRequest } from './request-checks.js';

export type Lane = (req: RestRequest, res: ServerResponse, pathname: string, search: string) => boolean;

export function procedureLane(deps: Deps, leave: Router[]): Lane {
  const match = procedureRoutes();
  const call = procedureCaller(deps);
  const readJson = jsonBodyReader(deps);
  return (req, res, pathname, search) => {
    const method = req.method ?? 'GET';
    if (leave.some((routes) => isRawRoute(routes, method, pathname))) return false;
    const found = match(method, pathname);
    if (!found) return false;
    if (!admitRequest(deps, req, res)) return true;
    const fail = (err: unknown) => {
      const log = (req as { log?: Logger }).log ?? deps.log;
      writeRestError(res, requestErrorAnswer(err as { type?: string }, deps.config.http.maxBodySize, log));
    };
    readJson(req, res, (err) => {
      if (err) return fail(err);
      try {
        const invalid = nonObjectBody(req);
        if (invalid) return writeRestError(res, invalid);
        sandboxSpecIdFromQuery(req, pathname, search);
        void call(found, req, res, search); // answers every failure itself
      } catch (error) {
        fail(error);
      }
    });
    return true;
  };
}
