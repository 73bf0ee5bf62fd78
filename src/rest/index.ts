// The REST edge: the legacy /api surface over the same procedures as tRPC, plus its OpenAPI
// document and docs page. Two parts:
//   - the procedure lane (procedure-lane.ts), plain node:http, serves every procedure route;
//   - the express app serves the rest, in this order: OpenAPI document and docs (open) → /api
//     no-cache headers, JSON default and body parsing → raw routes → object-body check → JSON
//     404 → error handler.
import express from 'express';
import type { Deps } from '../context.js';
import { docsRouter } from './docs.js';
import { errorHandler, notFound } from './fallbacks.js';
import { openApiDocument } from './openapi-document.js';
import { rawRoutes } from './raw-routes.js';
import { writeRestError } from './error-writer.js';
import { defaultJsonContentType, nonObjectBody, setNoCache } from './request-checks.js';

export { procedureLane } from './procedure-lane.js';

export function restFallback(deps: Deps): express.Express {
  const rest = express();
  rest.disable('x-powered-by');
  rest.set('etag', false);
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
  rest.use(rawRoutes(deps));
  rest.use('/api', (req, res, next) => {
    const invalid = nonObjectBody(req);
    if (invalid) writeRestError(res, invalid);
    else next();
  });
  rest.use(notFound);
  rest.use(errorHandler(deps));
  return rest;
}
