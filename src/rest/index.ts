// The REST edge: the legacy /api surface over the same procedures as tRPC, plus its OpenAPI
// document and docs page. Order matters:
//   OpenAPI document and docs (open) → /api: per-IP rate limit → the multipart upload route →
//   content type, body parsing with a nesting limit → raw routes → object-body check and
//   legacy shims → the trpc-to-openapi routes; unmatched requests fall through (next()).
import express, { type Router } from 'express';
import type { Deps } from '../context.js';
import { docsRouter } from './docs.js';
import { sandboxSpecIdFromQuery } from './legacy-shims.js';
import { openApiDocument } from './openapi-document.js';
import { createRestHandler } from './openapi-handler.js';
import { rawRoutes } from './raw-routes.js';
import { uploadRoute } from './upload-route.js';
import {
  defaultJsonContentType,
  ipRateLimit,
  JSON_TYPES,
  jsonDepthLimit,
  noCache,
  requireJsonContentType,
  requireJsonObject,
} from './request-checks.js';

export { errorHandler, notFound } from './fallbacks.js';
export { parseSize } from './request-checks.js';

export function restApi(deps: Deps): Router {
  const rest = express.Router();
  rest.get('/api/openapi.json', (_req, res) => {
    res.json(openApiDocument());
  });
  rest.use(docsRouter());
  const { maxBodySize, maxJsonDepth } = deps.config.http;
  rest.use('/api', ipRateLimit(deps), noCache);
  rest.use(uploadRoute(deps)); // multipart bodies, read by the route itself (before the JSON-only checks)
  rest.use(
    '/api',
    defaultJsonContentType,
    requireJsonContentType,
    express.json({ limit: maxBodySize, strict: false, type: JSON_TYPES, verify: jsonDepthLimit(maxJsonDepth) }),
  );
  rest.use(rawRoutes(deps)); // before the object-body check: the events webhook takes a JSON array
  rest.use('/api', requireJsonObject, sandboxSpecIdFromQuery);
  rest.use(createRestHandler(deps));
  return rest;
}
