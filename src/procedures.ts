// Base procedures. Every procedure converts domain errors (AppError) to tRPC errors in one
// place, logs and times itself; authedProcedure also narrows ctx.user to non-null.
import { TRPCError } from '@trpc/server';
import { appErrorOf, InputIssuesError, toTRPCError } from './errors.js';
import { middleware, publicProcedure as basePublic } from './trpc.js';

/**
 * Every procedure: applies the transport's fix-up of the raw input (REST decodes path
 * parameters), then converts domain errors and logs and times the call. One middleware for
 * both, since each tRPC middleware layer copies the call's context.
 */
const observed = middleware(async ({ ctx, path, type, meta, getRawInput, next }) => {
  const started = performance.now();
  const adapt = ctx.adaptInput;
  let result;
  if (adapt) {
    const adapted = adapt(await getRawInput(), meta?.openapi?.path);
    result = await next({ getRawInput: async () => adapted });
  } else {
    result = await next();
  }
  const durationMs = performance.now() - started;
  let outcome = 'ok';
  if (!result.ok) {
    const appError = appErrorOf(result.error);
    const error = appError
      ? toTRPCError(appError)
      : result.error.code === 'INTERNAL_SERVER_ERROR'
        ? // Never show an unexpected failure's own message (it may name internals) to clients.
          new TRPCError({ code: 'INTERNAL_SERVER_ERROR', message: 'Internal Server Error', cause: result.error.cause ?? result.error })
        : result.error;
    outcome = error.code;
    if (error.code === 'INTERNAL_SERVER_ERROR') {
      ctx.log.error({ err: result.error.cause ?? result.error, path, transport: ctx.transport }, 'procedure failed');
    }
    ctx.deps.metrics.procedureDuration.observe({ procedure: path, outcome }, durationMs / 1000);
    ctx.log.debug({ path, type, transport: ctx.transport, durationMs, outcome }, 'procedure');
    throw error;
  }
  ctx.deps.metrics.procedureDuration.observe({ procedure: path, outcome }, durationMs / 1000);
  ctx.log.debug({ path, type, transport: ctx.transport, durationMs, outcome }, 'procedure');
  return result;
});

/**
 * MongoDB-wire servers may refuse strings with NUL characters (FerretDB does); reject them
 * as a validation error with the field's path rather than failing inside the database.
 */
function rejectNulStrings(input: unknown): void {
  const path = findNulString(input);
  if (path) {
    throw new TRPCError({
      code: 'BAD_REQUEST',
      message: 'Input validation failed',
      cause: new InputIssuesError([{ code: 'custom', path, message: 'String should not contain NUL characters' }]),
    });
  }
}

function findNulString(value: unknown, path: (string | number)[] = [], depth = 0): (string | number)[] | null {
  if (typeof value === 'string') return value.includes('\u0000') ? path : null;
  if (depth > 32 || typeof value !== 'object' || value === null) return null;
  for (const [key, child] of Object.entries(value)) {
    const found = findNulString(child, [...path, Array.isArray(value) ? Number(key) : key], depth + 1);
    if (found) return found;
  }
  return null;
}

export const publicProcedure = basePublic.use(observed);

const forbidden = () => new TRPCError({ code: 'FORBIDDEN', message: 'Forbidden' });

/** A user (key or session) is required (ctx.user narrowed to non-null), and strings must be free of NUL. */
export const authedProcedure = publicProcedure.use(async ({ ctx, type, getRawInput, next }) => {
  if (!ctx.user) throw new TRPCError({ code: 'UNAUTHORIZED', message: 'Unauthorized' });
  // Cross-site protection of the cookie (the header cannot be sent by another site's page):
  // no cookie request made by another site, no state change without one of our origins, and
  // no read announcing a foreign origin (CORS lets localhost pages read with credentials).
  const browser = ctx.authVia === 'cookie' ? ctx.browser : undefined;
  const stateChanging = type === 'mutation' || browser?.unsafeMethod;
  if (browser && (browser.crossSite || ((stateChanging || browser.originPresent) && !browser.originTrusted))) throw forbidden();
  rejectNulStrings(await getRawInput());
  return next({ ctx: { user: ctx.user } }); // tRPC merges it into the context
});

/**
 * Signing in takes the key itself, not the cookie; a browser request from another site's page
 * is still refused, so no page can sign a visitor into someone else's account.
 */
export const signInProcedure = publicProcedure.use(({ ctx, next }) => {
  const browser = ctx.browser;
  if (browser && (browser.crossSite || (browser.originPresent && !browser.originTrusted))) throw forbidden();
  return next();
});

/**
 * For agent-server webhooks: the X-Session-API-Key must be the session key of the sandbox
 * named in the path. Checked before input validation, so an unauthenticated caller learns
 * nothing about the expected body.
 */
export const sandboxProcedure = publicProcedure.use(async ({ ctx, getRawInput, next }) => {
  const raw = (await getRawInput()) as { sandbox_id?: unknown } | undefined;
  const sandboxId = typeof raw?.sandbox_id === 'string' ? raw.sandbox_id : '';
  const sandboxOwner = await ctx.services.webhooks.authenticate(sandboxId, ctx.sessionKey);
  return next({ ctx: { ...ctx, sandboxOwner } });
});
