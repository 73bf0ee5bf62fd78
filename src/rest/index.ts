// The REST edge: the legacy /api surface over the same procedures as tRPC, plus its OpenAPI
// document and docs page. Two parts:
//   - the procedure lane (procedure-lane.ts), plain node:http, serves every procedure route;
//   - an express router serves the rest, in this order: OpenAPI document and docs (open) →
//     /api no-cache headers, JSON default and body parsing → raw routes → object-body check;
//     the app then answers what no route took (fallbacks.ts).
import express, { type Router } from 'express';
import type { Deps } from '../context.js';
import { docsRouter } from './docs.js';
import { openApiDocument } from './openapi-document.js';
import { writeRestError } from './error-writer.js';
import { defaultJsonContentType, nonObjectBody, setNoCache } from './request-checks.js';

export { errorHandler, notFound } from './fallbacks.js';
export { procedureLane } from './procedure-lane.js';
export { rawRoutes } from './raw-routes.js';

/** `raw`: the raw routes (rawRoutes), shared with the procedure lane, which leaves their requests to them. */
export function restRoutes(deps: Deps, raw: Router): Router {
  const rest = express.Router();
  rest.get('/api/openapi.json', (_req, res) => {
    res.json(openApiDocument());
  });
  rest.use(docsRouter());
  rest.use('/api', (req, res, next) => {
    setNoCache(res);
    defaultJsonContentType(req);
    next();
  });
  rest.use('/api', express.json({ limit: deps.config.http.maxBodySize, strict: false }));
  rest.use(raw);
  rest.use('/api', (req, res, next) => {
    const invalid = nonObjectBody(req);
    if (invalid) writeRestError(res, invalid);
    else next();
  });
  return rest;
}
