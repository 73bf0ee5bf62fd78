// The REST edge: the legacy /api surface over the same procedures as tRPC, plus its OpenAPI
// document and docs page. Order matters:
//   OpenAPI document and docs (open) → /api body parsing → raw routes → object-body check and
//   legacy shims → the trpc-to-openapi routes; unmatched requests fall through (next()).
import express, { type Router } from 'express';
import type { Deps } from '../context.js';
import { docsRouter } from './docs.js';
import { sandboxSpecIdFromQuery } from './legacy-shims.js';
import { openApiDocument } from './openapi-document.js';
import { createRestHandler } from './openapi-handler.js';
import { rawRoutes } from './raw-routes.js';
import { uploadRoute } from './upload-route.js';
import { defaultJsonContentType, noCache, requireJsonObject } from './request-checks.js';

export { errorHandler, notFound } from './fallbacks.js';
export { parseSize } from './request-checks.js';

export function restApi(deps: Deps): Router {
  const rest = express.Router();
  rest.get('/api/openapi.json', (_req, res) => {
    res.json(openApiDocument());
  });
  rest.use(docsRouter());
  rest.use('/api', noCache, defaultJsonContentType, express.json({ limit: deps.config.http.maxBodySize, strict: false }));
  rest.use(rawRoutes(deps)); // before the object-body check: the events webhook takes a JSON array
  rest.use(uploadRoute(deps)); // multipart bodies (the JSON parser leaves them unread)
  rest.use('/api', requireJsonObject, sandboxSpecIdFromQuery);
  rest.use(createRestHandler(deps));
  return rest;
}
