// The REST edge: the legacy /api surface over the same procedures as tRPC, plus its OpenAPI
// document and docs page. Two parts:
//   - the procedure lane (procedure-lane.ts), plain node:http, serves every procedure route;
//   - an express router serves the rest, in this order: OpenAPI document and docs (open) →
//     /api: per-IP rate limit and no-cache headers → the multipart upload route → content
//     type, body parsing with a nesting limit → raw routes → object-body check; the app then
//     answers what no route took (fallbacks.ts).
// Both apply the same checks, from request-checks.ts, in the same order.
import express, { type RequestHandler, type Router } from 'express';
import type { Deps } from '../context.js';
import { docsRouter } from './docs.js';
import { writeRestError } from './error-writer.js';
import { openApiDocument } from './openapi-document.js';
import { admitRequest, jsonBodyReader, nonObjectBody } from './request-checks.js';

export { errorHandler, notFound } from './fallbacks.js';
export { procedureLane } from './procedure-lane.js';
export { rawRoutes } from './raw-routes.js';
export { uploadRoute } from './upload-route.js';

/** `raw` and `upload`: the routers the procedure lane leaves their requests to (shared with it). */
export function restRoutes(deps: Deps, raw: Router, upload: Router): Router {
  const rest = express.Router();
  rest.get('/api/openapi.json', (_req, res) => {
    res.json(openApiDocument());
  });
  rest.use(docsRouter());
  rest.use('/api', (req, res, next) => {
    if (admitRequest(deps, req, res)) next();
  });
  rest.use(upload); // multipart bodies, read by the route itself (before the JSON-only checks)
  const readJson = jsonBodyReader(deps);
  rest.use('/api', (req, res, next) => readJson(req, res, next));
  rest.use(raw); // before the object-body check: the events webhook takes a JSON array
  rest.use('/api', objectBody);
  return rest;
}

const objectBody: RequestHandler = (req, res, next) => {
  const invalid = nonObjectBody(req);
  if (invalid) writeRestError(res, invalid);
  else next();
};
