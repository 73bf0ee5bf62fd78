// tRPC initialisation: the single initTRPC of the service. Routers take the tRPC core only
// from here and from procedures.ts (and their schemas from contract/).
//
// 1. Meta carries the OpenAPI route (trpc-to-openapi) next to input and output.
// 2. The transformer is superjson for tRPC clients; REST ignores it (plain JSON).
// 3. The error formatter gives tRPC clients field-level validation errors and never a stack.
import { initTRPC } from '@trpc/server';
import type { OpenApiMeta } from 'trpc-to-openapi';
import type { Context } from './context.js';
import { appErrorOf, inputIssuesOf, type ErrorReason } from './errors.js';
import { transformer } from './transformer.js';

export interface FieldError {
  path: (string | number)[];
  message: string;
  code: string;
}

/**
 * successStatus: the REST status of a successful call when the contract says other than 200.
 * auth: how a public procedure authenticates instead of a user key (documents it; tests use it).
 * errors: the domain failures the procedure can end in; the REST edge's table turns each into
 * its status and body, for the wire and for the OpenAPI document (src/rest/legacy-errors.ts).
 */
export type Meta = OpenApiMeta<{ successStatus?: number; auth?: 'sandbox' | 'access-token'; errors?: ErrorReason[] }>;

const t = initTRPC
  .context<Context>()
  .meta<Meta>()
  .create({
    transformer,
    errorFormatter({ shape, error }) {
      const { stack: _stack, ...data } = shape.data;
      const issues = inputIssuesOf(error);
      const fieldErrors: FieldError[] | null = issues
        ? issues.map((i) => ({ path: (i.path ?? []) as (string | number)[], message: i.message, code: i.code ?? 'custom' }))
        : null;
      // When a retry may succeed (rate limits, outages, full capacity): seconds to wait.
      const retryAfterSeconds = appErrorOf(error)?.retryAfterSeconds ?? null;
      return { ...shape, data: { ...data, fieldErrors, retryAfterSeconds } };
    },
  });

export const router = t.router;
export const middleware = t.middleware;
export const publicProcedure = t.procedure;
export const createCallerFactory = t.createCallerFactory;
