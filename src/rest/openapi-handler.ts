// The REST adapter: trpc-to-openapi serves the routers on their exact legacy paths.
//
// trpc-to-openapi always writes errors as {...errorShape, message, code, issues}. Legacy
// clients expect the reference's own bodies ({"detail": ...}, {"error": ...}), so the
// error is mapped once (rest/errors.ts) and that body replaces the adapter's when the
// response is written. Unmatched paths fall through to the app's 404 (next()).
import type { NextFunction, Request, Response } from 'express';
import type { TRPCError } from '@trpc/server';
import { createOpenApiNodeHttpHandler } from 'trpc-to-openapi';
import { appRouter, PROCEDURES } from '../../routers/index.js';
import { createContextFactory, type Deps } from '../context.js';
import { toRestError, type RestError } from './errors.js';

const restErrors = new WeakMap<Request, RestError>();

export function createRestHandler(deps: Deps) {
  const handler = createOpenApiNodeHttpHandler({
    router: appRouter,
    createContext: createContextFactory(deps, 'rest'),
    responseMeta: ({ paths, errors }) => {
      if (errors.length > 0) return {};
      const meta = paths?.[0] ? PROCEDURES.get(paths[0])?.meta : undefined;
      return meta?.successStatus ? { status: meta.successStatus } : {};
    },
    onError: ({ error, path, req }) => {
      restErrors.set(req as Request, toRestError(error as TRPCError, path));
    },
  });

  return (req: Request, res: Response, next: NextFunction) => {
    const end = res.end.bind(res) as (...args: unknown[]) => Response;
    res.end = ((...args: unknown[]) => {
      const mapped = restErrors.get(req);
      if (mapped) {
        res.statusCode = mapped.status;
        for (const [name, value] of Object.entries(mapped.headers ?? {})) res.setHeader(name, value);
        return end(JSON.stringify(mapped.body));
      }
      return end(...args);
    }) as Response['end'];
    return handler(req, res, next);
  };
}
