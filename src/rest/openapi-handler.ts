// The REST adapter: trpc-to-openapi serves the routers on their exact legacy paths.
// Unmatched paths fall through to the app's 404 (next()).
//
// trpc-to-openapi 3.3.0 always writes an error itself, as {...errorShape, message, code,
// issues}: its hooks set the status and headers (responseMeta) or observe the error
// (onError) but cannot choose the body, and the legacy bodies include a bare JSON string.
// So onError remembers the request's error, and the adapter's final write is replaced by
// the one REST error writer. This is the only place that intercepts a write.
import type { NextFunction, Request, Response } from 'express';
import { createOpenApiNodeHttpHandler } from 'trpc-to-openapi';
import { appRouter, PROCEDURES } from '../../routers/index.js';
import type { Deps } from '../context.js';
import { createRestContext } from './context.js';
import { writeProcedureError } from './error-writer.js';

interface FailedCall {
  error: unknown;
  path: string | undefined;
}

export function createRestHandler(deps: Deps) {
  const failures = new WeakMap<Request, FailedCall>();
  const handler = createOpenApiNodeHttpHandler({
    router: appRouter,
    createContext: createRestContext(deps),
    responseMeta: ({ paths, errors }) => {
      if (errors.length > 0) return {};
      const meta = paths?.[0] ? PROCEDURES.get(paths[0])?.meta : undefined;
      return meta?.successStatus ? { status: meta.successStatus } : {};
    },
    onError: ({ error, path, req }) => {
      failures.set(req as Request, { error, path });
    },
  });

  return (req: Request, res: Response, next: NextFunction) => {
    const end = res.end.bind(res) as (...args: unknown[]) => Response;
    res.end = ((...args: unknown[]) => {
      res.end = end as Response['end'];
      const failure = failures.get(req);
      if (!failure) return end(...args);
      writeProcedureError(res, failure.error, failure.path);
      return res;
    }) as Response['end'];
    return handler(req, res, next);
  };
}
