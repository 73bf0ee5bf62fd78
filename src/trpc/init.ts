// tRPC initialisation: the single initTRPC of the service. Routers take the tRPC core only
// from here and from procedures.ts (and their schemas from contract/).
//
// 1. Meta carries the OpenAPI route (trpc-to-openapi) next to input and output.
// 2. The transformer is superjson for tRPC clients; REST ignores it (plain JSON).
// 3. The error formatter gives tRPC clients field-level validation errors, the retry hint of
//    429s and 503s, and never a stack.
import { initTRPC } from '@trpc/server';
import type { OpenApiMeta } from 'trpc-to-openapi';
import type { Context } from './context.js';
import { appErrorOf, inputIssuesOf, type ErrorReason } from '../errors.js';
import type { OrgPermission } from '../organizations/roles.js';
import { transformer } from './transformer.js';

export interface FieldError {
  path: (string | number)[];
  message: string;
  code: string;
}

/**
 * successStatus: the REST status of a successful call when the contract says other than 200.
 * auth: how a public procedure authenticates instead of a user key (documents it; tests use it):
 * a sandbox's session key for the sandbox in the path, a sandbox's session key alone, a signed
 * access token, or nothing (the device flow's own steps, a public conversation read by its link).
 * errors: the domain failures the procedure can end in; the REST edge's table turns each into
 * its status and body, for the wire and for the OpenAPI document (src/http/rest/legacy-errors.ts).
 * orgPermission: what the caller's role in the organisation must allow (orgProcedure; src/organizations/roles.ts).
 */
export type Meta = OpenApiMeta<{
  successStatus?: number;
  auth?: 'sandbox' | 'sandbox-key' | 'access-token' | 'none';
  errors?: ErrorReason[];
  orgPermission?: OrgPermission;
}>;

const t = initTRPC
  .context<Context>()
  .meta<Meta>()
  .create({
    transformer,
    // The formatter drops the stack anyway; off, tRPC does not build one for every error.
    isDev: false,
    errorFormatter({ shape, error }) {
      const { stack: _stack, ...data } = shape.data;
      const issues = inputIssuesOf(error);
      const fieldErrors: FieldError[] | null = issues
        ? issues.map((i) => ({ path: (i.path ?? []) as (string | number)[], message: i.message, code: i.code ?? 'custom' }))
        : null;
      // tRPC's own message for a validation failure is the issues as JSON; say it in words.
      const message = fieldErrors ? validationMessage(fieldErrors) : shape.message;
      return { ...shape, message, data: { ...data, fieldErrors, retryAfterSeconds: appErrorOf(error)?.retryAfterSeconds ?? null } };
    },
  });

export const router = t.router;
export const middleware = t.middleware;
export const publicProcedure = t.procedure;
export const createCallerFactory = t.createCallerFactory;

/** "Invalid input: mcp_config.stdio_servers.0.name: Server name can only… (and 1 more)". */
function validationMessage(fieldErrors: FieldError[]): string {
  const [first, ...rest] = fieldErrors;
  if (!first) return 'Invalid input';
  const where = first.path.length > 0 ? `${first.path.join('.')}: ` : '';
  return `Invalid input: ${where}${first.message}${rest.length > 0 ? ` (and ${rest.length} more)` : ''}`;
}
