// Base procedures. Every procedure converts domain errors (AppError) to tRPC errors in one
// place, logs and times itself; authedProcedure also narrows ctx.user to non-null.
import { TRPCError } from '@trpc/server';
import { appErrorOf, InputIssuesError, toTRPCError } from './errors.js';
import { middleware, publicProcedure as basePublic } from './trpc.js';

const observed = middleware(async ({ ctx, path, type, next }) => {
  const started = performance.now();
  const result = await next();
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
const rejectNulStrings = middleware(async ({ getRawInput, next }) => {
  const path = findNulString(await getRawInput());
  if (path) {
    throw new TRPCError({
      code: 'BAD_REQUEST',
      message: 'Input validation failed',
      cause: new InputIssuesError([{ code: 'custom', path, message: 'String should not contain NUL characters' }]),
    });
  }
  return next();
});

function findNulString(value: unknown, path: (string | number)[] = [], depth = 0): (string | number)[] | null {
  if (typeof value === 'string') return value.includes('\u0000') ? path : null;
  if (depth > 32 || typeof value !== 'object' || value === null) return null;
  for (const [key, child] of Object.entries(value)) {
    const found = findNulString(child, [...path, Array.isArray(value) ? Number(key) : key], depth + 1);
    if (found) return found;
  }
  return null;
}

/** The transport's own fix-up of the raw input, if it has one (REST decodes path parameters). */
const transportInput = middleware(async ({ ctx, meta, getRawInput, next }) => {
  const adapt = ctx.adaptInput;
  if (!adapt) return next();
  const adapted = adapt(await getRawInput(), meta?.openapi?.path);
  return next({ getRawInput: async () => adapted });
});

export const publicProcedure = basePublic.use(observed).use(transportInput);

const forbidden = () => new TRPCError({ code: 'FORBIDDEN', message: 'Forbidden' });

export const authedProcedure = publicProcedure
  .use(({ ctx, type, next }) => {
    if (!ctx.user) throw new TRPCError({ code: 'UNAUTHORIZED', message: 'Unauthorized' });
    // Cross-site protection of the cookie (the header cannot be sent by another site's page):
    // no cookie request made by another site, no state change without one of our origins, and
    // no read announcing a foreign origin (CORS lets localhost pages read with credentials).
    const browser = ctx.authVia === 'cookie' ? ctx.browser : undefined;
    const stateChanging = type === 'mutation' || browser?.unsafeMethod;
    if (browser && (browser.crossSite || ((stateChanging || browser.originPresent) && !browser.originTrusted))) throw forbidden();
    return next({ ctx: { ...ctx, user: ctx.user } });
  })
  .use(rejectNulStrings);

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
